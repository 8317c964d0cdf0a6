// The fast path for GET /v1/pets and GET /v1/pets/{petId} (src/http/fast-path.ts) must be invisible: for every
// request, an app with it answers exactly what an app without it answers, and anything it
// cannot answer from memory (errors, odd requests, shutdown, the sunset) is left to Fastify.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { fixedClock } from '../../src/clock.js';
import { GET_PET_SUNSET_AT } from '../../src/http/deprecation.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { sqliteBackend } from '../helpers/backends.js';
import { send, type WireResponse } from '../helpers/wire.js';

const QUIET = { PETSTORE_LOG_LEVEL: 'warn' };

async function fastPathAnswers(app: TestApp): Promise<number> {
  const text = await (await fetch(`${app.url}/metrics`)).text();
  const match = /^petstore_fast_path_responses_total (\d+)$/m.exec(text);
  assert.ok(match, 'the fast path counter is exposed');
  return Number(match[1]);
}

function get(app: TestApp, target: string, headers: Array<[string, string]> = [], body?: string): Promise<WireResponse> {
  return send(app.url, { method: 'GET', target, headers, body: body === undefined ? undefined : Buffer.from(body) });
}

/** Two apps on one database, with and without the fast path, and two accounts' keys. */
async function fastAndSlow(t: TestContext): Promise<{ fast: TestApp; slow: TestApp; key: string; otherKey: string }> {
  const database = await sqliteBackend.createDatabase();
  t.after(() => database.drop());
  const fast = await startApp(t, { databaseUrl: database.url, env: QUIET });
  const slow = await startApp(t, { databaseUrl: database.url, env: { ...QUIET, PETSTORE_FAST_PATH: 'false' } });
  const { key } = await fast.createAccount('Owner');
  const { key: otherKey } = await fast.createAccount('Someone else');
  return { fast, slow, key, otherKey };
}

/** What must be identical between the two paths: all but the per-request values. */
function comparable(res: WireResponse, keepRequestId: boolean) {
  const { date: _date, ratelimit, 'x-request-id': requestId, ...headers } = res.headers;
  if (ratelimit !== undefined) assert.match(ratelimit, /^"default";r=\d+;t=\d+$/);
  return { status: res.status, headers, text: res.text, ...(keepRequestId ? { requestId } : {}) };
}

describe('GET /v1/pets and GET /v1/pets/{petId} fast path', () => {
  test('when the same requests go to an app with the fast path and one without, then every answer is the same, and the fast path answered the cacheable ones', async (t) => {
    const { fast, slow, key, otherKey } = await fastAndSlow(t);
    const created = await fast.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1, status: 'available' } });
    // Two for the other account: its pet 2 is an id this account does not have.
    await fast.request('POST', '/v1/pets', { key: otherKey, body: { name: 'Not yours', categoryId: 2 } });
    const theirs = await fast.request('POST', '/v1/pets', { key: otherKey, body: { name: 'Not yours either', categoryId: 2 } });
    const id = (created.body as { id: number }).id;
    const tag = created.headers.get('etag')!;
    const otherId = (theirs.body as { id: number }).id;
    const auth: [string, string] = ['Authorization', `Bearer ${key}`];

    const cases: Array<{ name: string; target: string; headers?: Array<[string, string]>; body?: string; keepRequestId?: boolean }> = [
      { name: 'first read (fills the caches)', target: `/v1/pets/${id}`, headers: [auth] },
      { name: 'cached read', target: `/v1/pets/${id}`, headers: [auth] },
      // Conditional reads are Fastify's (conditional.ts), even of a cached pet: 412, 200, 304.
      { name: 'If-Match, stale', target: `/v1/pets/${id}`, headers: [auth, ['If-Match', '"stale"']] },
      { name: 'If-Match, current', target: `/v1/pets/${id}`, headers: [auth, ['If-Match', tag]] },
      { name: 'If-None-Match, current', target: `/v1/pets/${id}`, headers: [auth, ['If-None-Match', tag]] },
      { name: 'client request id', target: `/v1/pets/${id}`, headers: [auth, ['X-Request-Id', 'trace-42']], keepRequestId: true },
      { name: 'key-shaped request id', target: `/v1/pets/${id}`, headers: [auth, ['X-Request-Id', `${key}`]] },
      { name: 'lower-case scheme, extra spaces', target: `/v1/pets/${id}`, headers: [['authorization', `bearer   ${key} `]] },
      { name: 'Authorization twice', target: `/v1/pets/${id}`, headers: [auth, ['Authorization', 'Bearer psk_live_nope']] },
      { name: 'leading zero', target: `/v1/pets/0${id}`, headers: [auth] },
      { name: 'query string (400: getPet takes no query parameters)', target: `/v1/pets/${id}?x=1`, headers: [auth] },
      { name: 'zero', target: '/v1/pets/0', headers: [auth] },
      { name: 'beyond 2^53 - 1', target: '/v1/pets/9007199254740992', headers: [auth] },
      { name: 'not a number', target: '/v1/pets/rex', headers: [auth] },
      { name: "another account's pet", target: `/v1/pets/${otherId}`, headers: [auth] },
      { name: 'missing pet', target: `/v1/pets/${otherId + 1000}`, headers: [auth] },
      { name: 'missing pet again', target: `/v1/pets/${otherId + 1000}`, headers: [auth] },
      { name: 'no key', target: `/v1/pets/${id}` },
      { name: 'unknown key', target: `/v1/pets/${id}`, headers: [['Authorization', 'Bearer psk_live_000000000000000000000000000000']] },
      { name: 'a body on a GET', target: `/v1/pets/${id}`, headers: [auth, ['Content-Type', 'application/json']], body: '{}' },
    ];
    let served = 0;
    for (const c of cases) {
      const a = await get(fast, c.target, c.headers, c.body);
      const b = await get(slow, c.target, c.headers, c.body);
      assert.deepEqual(comparable(a, c.keepRequestId ?? false), comparable(b, c.keepRequestId ?? false), c.name);
      if (a.status === 200) served++;
    }
    assert.equal(served, 8, 'the requests for an own pet with a valid key');
    // From memory: the cached read, both request ids and the lower-case scheme. Fastify had
    // the first read (nothing cached yet), If-Match, the repeated header, the leading zero and the body.
    assert.equal(await fastPathAnswers(fast), 4);
    assert.equal(await fastPathAnswers(slow), 0);

    const head = await send(fast.url, { method: 'HEAD', target: `/v1/pets/${id}`, headers: [auth] });
    assert.equal(head.status, 200);
    assert.equal(await fastPathAnswers(fast), 4, 'HEAD is left to Fastify');
  });

  test('when the same list requests go to an app with the fast path and one without, then every answer is the same, and only canonical queries of cached pages are answered from memory', async (t) => {
    const { fast, slow, key, otherKey } = await fastAndSlow(t);
    for (const [name, status] of [['A', 'available'], ['B', 'sold'], ['C', 'available']] as const) {
      assert.equal((await fast.request('POST', '/v1/pets', { key, body: { name, categoryId: 1, status } })).status, 201);
    }
    for (const name of ['Theirs 1', 'Theirs 2']) {
      assert.equal((await fast.request('POST', '/v1/pets', { key: otherKey, body: { name, categoryId: 1 } })).status, 201);
    }
    const auth: [string, string] = ['Authorization', `Bearer ${key}`];
    // Cursors from the app without the fast path, so the other app's caches stay cold.
    const nextOf = async (key: string, query: string) =>
      /<([^>]+)>; rel="next"/.exec((await get(slow, `/v1/pets?${query}`, [['Authorization', `Bearer ${key}`]])).headers.link ?? '')?.[1] ?? '';
    const next = await nextOf(key, 'limit=1');
    const theirNext = await nextOf(otherKey, 'limit=1');
    for (const link of [next, theirNext]) assert.match(link, /^\/v1\/pets\?limit=1&cursor=[A-Za-z0-9_-]+$/);
    const tampered = next.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));

    const cases: Array<{ name: string; target: string; fast: boolean }> = [
      { name: 'first page, cold', target: '/v1/pets', fast: false },
      { name: 'first page, cached', target: '/v1/pets', fast: true },
      { name: 'same page, limit spelled out', target: '/v1/pets?limit=20', fast: true },
      { name: 'limit 1, cold', target: '/v1/pets?limit=1', fast: false },
      { name: 'limit 1, cached (with Link)', target: '/v1/pets?limit=1', fast: true },
      { name: 'next page, cold', target: next, fast: false },
      { name: 'next page, cached', target: next, fast: true },
      { name: 'status filter, cold', target: '/v1/pets?status=available', fast: false },
      { name: 'status filter, other order', target: '/v1/pets?status=available&limit=20', fast: true },
      { name: 'limit 100', target: '/v1/pets?limit=100', fast: false },
      { name: 'limit 0', target: '/v1/pets?limit=0', fast: false },
      { name: 'limit 101', target: '/v1/pets?limit=101', fast: false },
      { name: 'limit with a leading zero', target: '/v1/pets?limit=020', fast: false },
      { name: 'limit twice', target: '/v1/pets?limit=1&limit=1', fast: false },
      { name: 'unknown status', target: '/v1/pets?status=lost', fast: false },
      { name: 'unknown parameter', target: '/v1/pets?color=red', fast: false },
      { name: 'empty query', target: '/v1/pets?', fast: false },
      { name: 'percent-encoded name', target: '/v1/pets?%6Cimit=1', fast: false },
      { name: 'garbage cursor', target: '/v1/pets?cursor=nope', fast: false },
      { name: 'tampered cursor', target: tampered, fast: false },
      { name: "another account's cursor", target: theirNext, fast: false },
      { name: 'cursor with another status', target: `${next}&status=sold`, fast: false },
      { name: 'trailing slash', target: '/v1/pets/', fast: false },
    ];
    for (const c of cases) {
      // A cached case may try again: a verified key is remembered 900 ms, so on a slow machine
      // the read after the cold one may need Fastify to verify the key again.
      let answered = 0;
      for (let i = 0; i < (c.fast ? 4 : 1) && answered === 0; i++) {
        const before = await fastPathAnswers(fast);
        const a = await get(fast, c.target, [auth]);
        const b = await get(slow, c.target, [auth]);
        assert.deepEqual(comparable(a, false), comparable(b, false), c.name);
        answered = (await fastPathAnswers(fast)) - before;
      }
      assert.equal(answered, c.fast ? 1 : 0, `${c.name}: answered from memory?`);
    }
  });

  test('when orders move a pet between statuses, through this app or the other, then every answer stays identical and the fast path serves the new status from memory', async (t) => {
    const { fast, slow, key } = await fastAndSlow(t);
    const auth: [string, string] = ['Authorization', `Bearer ${key}`];
    const pet = (await fast.request('POST', '/v1/pets', { key, body: { name: 'Mover', categoryId: 1, status: 'available' } })).body as { id: number };
    const targets = [`/v1/pets/${pet.id}`, '/v1/pets', '/v1/pets?status=available', '/v1/pets?status=pending', '/v1/pets?status=sold'];
    const expectStatus = async (status: string, when: string) => {
      for (const target of targets) {
        // Until one read is answered from memory: the first fills the caches. (A verified key
        // is remembered 900 ms, so on a slow machine a read may need Fastify again.)
        let fromMemory = false;
        for (let i = 0; i < 4 && !fromMemory; i++) {
          const before = await fastPathAnswers(fast);
          const a = await get(fast, target, [auth]);
          const b = await get(slow, target, [auth]);
          assert.deepEqual(comparable(a, false), comparable(b, false), `${when}: ${target}`);
          fromMemory = (await fastPathAnswers(fast)) > before;
        }
        assert.ok(fromMemory, `${when}: ${target} answered from memory`);
      }
      const one = JSON.parse((await get(fast, `/v1/pets/${pet.id}`, [auth])).text) as { status: string };
      assert.equal(one.status, status, when);
      const filtered = JSON.parse((await get(fast, `/v1/pets?status=${status}`, [auth])).text) as Array<{ id: number }>;
      assert.deepEqual(filtered.map((p) => p.id), [pet.id], `${when}: listed under ${status}`);
    };
    await expectStatus('available', 'created');
    const first = (await fast.request('POST', '/v1/store/orders', { key, body: { petId: pet.id } })).body as { id: number };
    await expectStatus('pending', 'ordered through the fast app');
    await slow.request('POST', `/v1/store/orders/${first.id}/cancel`, { key });
    await expectStatus('available', 'cancelled through the other app');
    const second = (await slow.request('POST', '/v1/store/orders', { key, body: { petId: pet.id } })).body as { id: number };
    await expectStatus('pending', 'ordered through the other app');
    await fast.request('POST', `/v1/store/orders/${second.id}/deliver`, { key });
    await expectStatus('sold', 'delivered through the fast app');
  });

  test('when another process revokes a key the fast path has served, then the next request is refused with 401 unauthorized', async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    const fast = await startApp(t, { databaseUrl: database.url, env: QUIET });
    const operator = await startApp(t, { databaseUrl: database.url, env: QUIET });
    const { key, keyId } = await fast.createAccount();
    const id = ((await fast.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).body as { id: number }).id;
    for (let i = 0; i < 3; i++) assert.equal((await fast.request('GET', `/v1/pets/${id}`, { key })).status, 200);
    assert.equal(await fastPathAnswers(fast), 2);

    await operator.services.apiKeys.revoke(keyId);
    const refused = await fast.request('GET', `/v1/pets/${id}`, { key });
    assert.equal(refused.status, 401);
    assert.equal((refused.body as { code: string }).code, 'unauthorized');
    assert.equal(await fastPathAnswers(fast), 2);
  });

  test('when another process changes a pet the fast path has served, then the next request sees the change', async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    const fast = await startApp(t, { databaseUrl: database.url, env: QUIET });
    const { key } = await fast.createAccount();
    const id = ((await fast.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).body as { id: number }).id;
    for (let i = 0; i < 2; i++) assert.equal((await fast.request('GET', `/v1/pets/${id}`, { key })).status, 200);
    assert.equal(await fastPathAnswers(fast), 1);

    const { default: Database } = await import('better-sqlite3');
    const operator = new Database(database.url.replace(/^file:/, ''));
    operator.prepare("UPDATE pets SET name = 'Renamed' WHERE id = ?").run(id);
    const renamed = await fast.request('GET', `/v1/pets/${id}`, { key });
    assert.equal((renamed.body as { name: string }).name, 'Renamed');
    operator.prepare('DELETE FROM pets WHERE id = ?').run(id);
    operator.close();
    const gone = await fast.request('GET', `/v1/pets/${id}`, { key });
    assert.equal(gone.status, 404);
    assert.equal((gone.body as { code: string }).code, 'not_found');
  });

  test('when the bucket runs empty, then the request is refused with 429 rate_limited, and the fast path took no token of its own', async (t) => {
    const app = await startApp(t, { env: { ...QUIET, PETSTORE_RATE_LIMIT_PER_SECOND: '1', PETSTORE_RATE_LIMIT_BURST: '3' } });
    const { key } = await app.createAccount();
    const id = ((await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).body as { id: number }).id;
    const first = await app.request('GET', `/v1/pets/${id}`, { key });
    const second = await app.request('GET', `/v1/pets/${id}`, { key });
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('ratelimit'), '"default";r=0;t=3', 'POST, first read, second read: three tokens');
    assert.equal(await fastPathAnswers(app), 1);

    const refused = await app.request('GET', `/v1/pets/${id}`, { key });
    assert.equal(refused.status, 429);
    assert.equal((refused.body as { code: string }).code, 'rate_limited');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.equal(await fastPathAnswers(app), 1);
  });

  test('when the clock reaches the sunset, then cached pets answer 410 gone like the rest', async (t) => {
    const clock = fixedClock(GET_PET_SUNSET_AT - 1000);
    const app = await startApp(t, { clock, env: QUIET });
    const { key } = await app.createAccount();
    const id = ((await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).body as { id: number }).id;
    for (let i = 0; i < 2; i++) assert.equal((await app.request('GET', `/v1/pets/${id}`, { key })).status, 200);
    assert.equal(await fastPathAnswers(app), 1);

    clock.set(GET_PET_SUNSET_AT);
    const gone = await app.request('GET', `/v1/pets/${id}`, { key });
    assert.equal(gone.status, 410);
    assert.equal((gone.body as { code: string }).code, 'gone');
  });

  test('when the log level is info, then the fast path logs each request with the same line as Fastify\'s hook', async (t) => {
    const app = await startApp(t, { env: { PETSTORE_LOG_LEVEL: 'info' } });
    const { key } = await app.createAccount();
    const id = ((await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).body as { id: number }).id;
    for (const trace of ['by-fastify', 'by-fast-path']) {
      assert.equal((await app.request('GET', `/v1/pets/${id}`, { key, headers: { 'x-request-id': trace } })).status, 200);
    }
    assert.equal(await fastPathAnswers(app), 1);
    const lines = app.logs
      .map((line) => JSON.parse(line) as Record<string, unknown> & { req?: Record<string, unknown> })
      .filter((line) => line.msg === 'request completed' && line.req?.url === `/v1/pets/${id}`);
    assert.deepEqual(lines.map((line) => line.reqId), ['by-fastify', 'by-fast-path']);
    const shape = ({ time: _time, reqId: _reqId, responseTime, req, ...rest }: Record<string, unknown> & { req?: Record<string, unknown> }) => {
      assert.equal(typeof responseTime, 'number');
      const { remotePort, ...request } = req ?? {};
      assert.equal(typeof remotePort, 'number');
      return { ...rest, req: request };
    };
    assert.deepEqual(shape(lines[1]!), shape(lines[0]!));
    assert.deepEqual(Object.keys(lines[1]!), Object.keys(lines[0]!), 'same fields, same order');
  });

  test('when writing the log line fails after the fast path answered, then the request is not answered again', async (t) => {
    const failing = (line: string) => {
      if (line.includes('"msg":"request completed"') && line.includes('"reqId":"fast-')) throw new Error('log sink failed');
    };
    // One token a second: the bucket refills less than a token during the test, so each
    // request's own token shows in the header.
    const env = { PETSTORE_LOG_LEVEL: 'info', PETSTORE_RATE_LIMIT_PER_SECOND: '1', PETSTORE_RATE_LIMIT_BURST: '100' };
    const app = await startApp(t, { env, onLog: failing });
    const { key } = await app.createAccount();
    const id = ((await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).body as { id: number }).id;
    const remaining: number[] = [];
    for (const trace of ['fast-1', 'fast-2', 'fast-3']) {
      const res = await app.request('GET', `/v1/pets/${id}`, { key, headers: { 'x-request-id': trace } });
      assert.equal(res.status, 200);
      remaining.push(Number(/;r=(\d+);/.exec(res.headers.get('ratelimit') ?? '')?.[1]));
    }
    assert.equal(await fastPathAnswers(app), 2, 'the first read filled the cache through Fastify');
    // Handed to Fastify after its answer, a request would take a second token.
    assert.deepEqual([remaining[0]! - remaining[1]!, remaining[1]! - remaining[2]!], [1, 1], `tokens left: ${remaining}`);
    const failures = app.logs.filter((line) => line.includes('fast path failed after answering'));
    assert.equal(failures.length, 2);
  });

  test('when the fast path answers, then /metrics counts those requests in the latency histogram and the deprecated calls of the account', async (t) => {
    const app = await startApp(t, { env: QUIET });
    const { key, accountId } = await app.createAccount();
    const id = ((await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).body as { id: number }).id;
    for (let i = 0; i < 5; i++) assert.equal((await app.request('GET', `/v1/pets/${id}`, { key })).status, 200);
    assert.equal(await fastPathAnswers(app), 4);
    const text = await (await fetch(`${app.url}/metrics`)).text();
    assert.match(text, /^petstore_http_request_duration_seconds_count\{method="GET",route="\/v1\/pets\/:petId",status="200"\} 5$/m);
    assert.match(text, /^petstore_http_requests_total\{method="GET",route="\/v1\/pets\/:petId",status="200"\} 5$/m);
    assert.match(text, new RegExp(`^petstore_deprecated_calls_total\\{operation="getPet",account_id="${accountId}"\\} 5$`, 'm'));
  });
});
