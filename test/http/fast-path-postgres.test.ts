// On PostgreSQL the fast path reads canonical GET /v1/pets pages and GET /v1/pets/{petId} from the store itself (there is
// no read cache): its answers must be byte for byte those of an app without it, and anything it
// cannot answer (bad queries and cursors, a revoked key, no tokens left) must be Fastify's.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { startApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { send, sendRaw, type WireResponse } from '../helpers/wire.js';

const postgres = backends.find((b) => b.name === 'postgres');
const QUIET = { PETSTORE_LOG_LEVEL: 'warn', PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' };

async function fastPathAnswers(app: TestApp): Promise<number> {
  const match = /^petstore_fast_path_responses_total (\d+)$/m.exec(await (await fetch(`${app.url}/metrics`)).text());
  assert.ok(match, 'the fast path counter is exposed');
  return Number(match[1]);
}

async function storeListReads(app: TestApp): Promise<number> {
  const match = /^petstore_store_query_duration_seconds_count\{operation="listPets"\} (\d+)$/m.exec(await (await fetch(`${app.url}/metrics`)).text());
  assert.ok(match, 'the listPets store timer is exposed');
  return Number(match[1]);
}

const get = (app: TestApp, target: string, headers: Array<[string, string]> = []): Promise<WireResponse> =>
  send(app.url, { method: 'GET', target, headers });

function comparable(res: WireResponse) {
  const { date: _date, ratelimit, 'x-request-id': _id, ...headers } = res.headers;
  if (ratelimit !== undefined) assert.match(ratelimit, /^"default";r=\d+;t=\d+$/);
  return { status: res.status, headers, text: res.text };
}

/**
 * Each case's answer from the app with the fast path equals the one without it, byte for
 * byte, and came from the fast path exactly when the case says so.
 */
type Case = { name: string; target: string; fast: boolean; headers?: Array<[string, string]> };
async function sameAnswers(fast: TestApp, slow: TestApp, auth: [string, string], cases: Case[]) {
  for (const c of cases) {
    // A verified key is remembered 900 ms: on a slow machine a request may need Fastify again.
    let byFastPath = false;
    for (let i = 0; i < (c.fast ? 4 : 1) && !byFastPath; i++) {
      const before = await fastPathAnswers(fast);
      const a = await get(fast, c.target, [auth, ...(c.headers ?? [])]);
      const b = await get(slow, c.target, [auth, ...(c.headers ?? [])]);
      assert.deepEqual(comparable(a), comparable(b), c.name);
      byFastPath = (await fastPathAnswers(fast)) > before;
    }
    assert.equal(byFastPath, c.fast, `${c.name}: answered by the fast path?`);
  }
}

async function fastAndSlow(t: TestContext, env: Record<string, string> = {}) {
  const database = await postgres!.createDatabase();
  t.after(() => database.drop());
  const fast = await startApp(t, { backend: postgres!, databaseUrl: database.url, env: { ...QUIET, ...env } });
  const slow = await startApp(t, { backend: postgres!, databaseUrl: database.url, env: { ...QUIET, ...env, PETSTORE_FAST_PATH: 'false' } });
  return { fast, slow };
}

describe('the fast path on PostgreSQL (lists read from the store)', { skip: postgres ? false : 'set PETSTORE_TEST_POSTGRES_URL' }, () => {
  test('when the same list requests go to an app with the fast path and one without, then every answer is byte for byte the same, and only canonical ones are answered by the fast path', async (t) => {
    const { fast, slow } = await fastAndSlow(t);
    const { key } = await fast.createAccount('Owner');
    const { key: otherKey } = await fast.createAccount('Someone else');
    for (const [name, status] of [['Rex "the" \\ dög', 'available'], ['B', 'sold'], ['C', undefined], ['D', 'available']] as const) {
      assert.equal((await fast.request('POST', '/v1/pets', { key, body: { name, categoryId: 7, ...(status ? { status } : {}) } })).status, 201);
    }
    await fast.request('POST', '/v1/pets', { key: otherKey, body: { name: 'Theirs', categoryId: 1 } });
    await fast.request('POST', '/v1/pets', { key: otherKey, body: { name: 'Theirs 2', categoryId: 1 } });
    const auth: [string, string] = ['Authorization', `Bearer ${key}`];
    const linkOf = async (k: string, query: string) => /<([^>]+)>; rel="next"/.exec((await get(slow, `/v1/pets?${query}`, [['Authorization', `Bearer ${k}`]])).headers.link ?? '')?.[1] ?? '';
    const next = await linkOf(key, 'limit=1');
    const nextAvailable = await linkOf(key, 'limit=1&status=available');
    const theirs = await linkOf(otherKey, 'limit=1');
    assert.match(next, /cursor=/);
    const tampered = next.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));

    const cases: Array<{ name: string; target: string; fast: boolean }> = [
      { name: 'first page', target: '/v1/pets', fast: true },
      { name: 'limit 1 (with a Link)', target: '/v1/pets?limit=1', fast: true },
      { name: 'limit 100', target: '/v1/pets?limit=100', fast: true },
      { name: 'status filter', target: '/v1/pets?status=available', fast: true },
      { name: 'status with no pets', target: '/v1/pets?status=pending', fast: true },
      { name: 'next page', target: next, fast: true },
      { name: 'next page of a filter', target: nextAvailable, fast: true },
      { name: 'limit 0', target: '/v1/pets?limit=0', fast: false },
      { name: 'limit 101', target: '/v1/pets?limit=101', fast: false },
      { name: 'unknown status', target: '/v1/pets?status=lost', fast: false },
      { name: 'unknown parameter', target: '/v1/pets?color=red', fast: false },
      { name: 'garbage cursor', target: '/v1/pets?cursor=nope', fast: false },
      { name: 'tampered cursor', target: tampered, fast: false },
      { name: "another account's cursor", target: theirs, fast: false },
      { name: 'cursor with another status', target: `${next}&status=sold`, fast: false },
      { name: 'percent-encoded name', target: '/v1/pets?%6Cimit=1', fast: false },
    ];
    await sameAnswers(fast, slow, auth, cases);
  });

  test('when a key is revoked or has no tokens left, then the fast path leaves the answer (401, 429) to Fastify', async (t) => {
    const { fast } = await fastAndSlow(t, { PETSTORE_RATE_LIMIT_PER_SECOND: '1', PETSTORE_RATE_LIMIT_BURST: '3' });
    const { key, keyId } = await fast.createAccount();
    const auth: [string, string] = ['Authorization', `Bearer ${key}`];
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await get(fast, '/v1/pets', [auth])).status);
    assert.deepEqual(statuses.slice(0, 3), [200, 200, 200]);
    const refused = await get(fast, '/v1/pets', [auth]);
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.text).code, 'rate_limited');
    await fast.services.apiKeys.revoke(keyId);
    const revoked = await get(fast, '/v1/pets', [auth]);
    assert.equal(revoked.status, 401);
    assert.equal(JSON.parse(revoked.text).code, 'unauthorized');
  });

  test('when identical list requests arrive together, then one store read answers them all, each with the bytes a lone request gets', async (t) => {
    const { fast, slow } = await fastAndSlow(t);
    const { key } = await fast.createAccount();
    for (const name of ['A', 'B', 'C']) await fast.request('POST', '/v1/pets', { key, body: { name, categoryId: 1 } });
    const auth: [string, string] = ['Authorization', `Bearer ${key}`];
    const alone = comparable(await get(slow, '/v1/pets?limit=2', [auth]));
    // Pipelined in one write: the server parses all three in one turn, so one flush takes them.
    const request = (last: boolean) => `GET /v1/pets?limit=2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
    let shared = false;
    // A verified key is remembered 900 ms: on a slow machine a request may need Fastify again.
    for (let attempt = 0; attempt < 4 && !shared; attempt++) {
      await get(fast, '/v1/pets?limit=2', [auth]);
      const [answers0, reads0] = [await fastPathAnswers(fast), await storeListReads(fast)];
      const raw = (await sendRaw(fast.url, request(false) + request(false) + request(true))).toString('utf8');
      const bodies = raw.split(/HTTP\/1\.1 /).slice(1).map((response) => response.slice(response.indexOf('\r\n\r\n') + 4));
      assert.equal(bodies.length, 3, raw);
      for (const body of bodies) assert.equal(body, alone.text);
      const [answers, reads] = [(await fastPathAnswers(fast)) - answers0, (await storeListReads(fast)) - reads0];
      shared = answers === 3 && reads === 1;
    }
    assert.ok(shared, 'three answers from the fast path, one store read');
  });

  test('when the same GET /v1/pets/{petId} requests go to an app with the fast path and one without, then every answer is byte for byte the same, and only existing pets of the key\'s account are answered by the fast path', async (t) => {
    const { fast, slow } = await fastAndSlow(t);
    const { key } = await fast.createAccount('Owner');
    const { key: otherKey } = await fast.createAccount('Someone else');
    const answer = await fast.request('POST', '/v1/pets', { key, body: { name: 'Rex "the" \\ dög', categoryId: 7, status: 'sold' } });
    const created = answer.body as { id: number };
    const tag = answer.headers.get('etag')!;
    const plain = (await fast.request('POST', '/v1/pets', { key, body: { name: 'No status', categoryId: 1 } })).body as { id: number };
    // Ids are per account: the other account's third pet has an id this one does not.
    let theirs = { id: 0 };
    for (const name of ['Theirs 1', 'Theirs 2', 'Theirs 3']) theirs = (await fast.request('POST', '/v1/pets', { key: otherKey, body: { name, categoryId: 1 } })).body as { id: number };
    const auth: [string, string] = ['Authorization', `Bearer ${key}`];
    const cases: Case[] = [
      { name: 'a pet with a status', target: `/v1/pets/${created.id}`, fast: true },
      // Conditional reads and query strings are Fastify's: 412, 200, 304, and 400 (no query parameters).
      { name: 'If-Match, stale (412)', target: `/v1/pets/${created.id}`, fast: false, headers: [['If-Match', '"stale"']] },
      { name: 'If-Match, current', target: `/v1/pets/${created.id}`, fast: false, headers: [['If-Match', tag]] },
      { name: 'If-None-Match, current (304)', target: `/v1/pets/${created.id}`, fast: false, headers: [['If-None-Match', tag]] },
      { name: 'a query parameter (400)', target: `/v1/pets/${created.id}?fields=name`, fast: false },
      { name: 'a pet without one', target: `/v1/pets/${plain.id}`, fast: true },
      { name: 'no such pet (404)', target: '/v1/pets/999999', fast: false },
      { name: 'an id only another account has (404)', target: `/v1/pets/${theirs.id}`, fast: false },
      { name: 'id 0', target: '/v1/pets/0', fast: false },
      { name: 'not a number', target: '/v1/pets/abc', fast: false },
    ];
    await sameAnswers(fast, slow, auth, cases);
  });

  test('when pets change through the other app, then the next list from the fast path shows them (nothing is cached)', async (t) => {
    const { fast, slow } = await fastAndSlow(t);
    const { key } = await fast.createAccount();
    const auth: [string, string] = ['Authorization', `Bearer ${key}`];
    await get(fast, '/v1/pets', [auth]);
    for (let i = 0; i < 3; i++) {
      await slow.request('POST', '/v1/pets', { key, body: { name: `P${i}`, categoryId: 1 } });
      const page = JSON.parse((await get(fast, '/v1/pets', [auth])).text) as Array<{ id: number }>;
      assert.equal(page.length, i + 1, 'read-your-writes across instances');
      const pet = await get(fast, `/v1/pets/${page[i]!.id}`, [auth]);
      assert.equal(pet.status, 200, 'the new pet, by id, from the other app');
    }
  });
});
