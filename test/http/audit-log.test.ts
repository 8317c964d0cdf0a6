// The audit log over real HTTP, on every store: an entry for each key and webhook endpoint
// change with who, what, the request id and address; none for a refused request; written in the
// change's transaction (an audit insert that fails takes the change with it); an expired key's
// refused use at most once an hour; paging with `after` and cursors; one account's log only.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import Database from 'better-sqlite3';
import { fixedClock } from '../../src/clock.js';
import { sharedApp, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { type Backend, backends } from '../helpers/backends.js';

type Entry = {
  id: string; sequence: number; action: string; actor: { type: string; keyId?: string }; target: { type: string; id: string };
  newKeyId?: string; requestId: string | null; clientAddress: string | null; createdAt: string;
};

const env = {
  PETSTORE_RATE_LIMIT_PER_SECOND: '1000000',
  PETSTORE_RATE_LIMIT_BURST: '1000000',
  PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
  PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
};

async function entries(app: TestApp, key: string, query = 'limit=100'): Promise<Entry[]> {
  const res = await app.request('GET', `/v1/audit-log?${query}`, { key });
  assert.equal(res.status, 200, res.text);
  return res.body as Entry[];
}

/** Runs SQL on the app's database from another connection. */
async function sqlOn(backend: Backend, url: string, sql: string): Promise<void> {
  if (backend.name === 'sqlite') {
    const db = new Database(url);
    try {
      db.exec(sql);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

const FAIL_AUDIT = {
  sqlite: "CREATE TRIGGER audit_fails BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit insert refused by the test'); END;",
  postgres: `CREATE FUNCTION audit_fails() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit insert refused by the test'; END $$;
             CREATE TRIGGER audit_fails BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_fails();`,
};
const HEAL_AUDIT = { sqlite: 'DROP TRIGGER audit_fails;', postgres: 'DROP TRIGGER audit_fails ON audit_log; DROP FUNCTION audit_fails();' };

for (const backend of backends) {
  describe(`audit log (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    before(async () => {
      app = await getApp();
    });

    test('when keys and webhook endpoints change, then each change has one entry, oldest first, with the key, the request id and the address', async () => {
      const { key, keyId } = await app.createAccount('Audited');
      const expected: Array<[string, string, string, TestResponse]> = [];
      const made = await app.request('POST', '/v1/api-keys', { key, body: { name: 'ci', scopes: ['pets:read'] } });
      const madeId = (made.body as { id: string }).id;
      expected.push(['api_key.created', 'api_key', madeId, made]);
      const rolled = await app.request('POST', `/v1/api-keys/${madeId}/roll`, { key, body: { expiresInSeconds: 60 } });
      expected.push(['api_key.rolled', 'api_key', madeId, rolled]);
      const newId = (rolled.body as { id: string }).id;
      expected.push(['api_key.revoked', 'api_key', newId, await app.request('DELETE', `/v1/api-keys/${newId}`, { key })]);
      const endpoint = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'http://127.0.0.1:9/hook' } });
      assert.equal(endpoint.status, 201, endpoint.text);
      const endpointId = (endpoint.body as { id: string }).id;
      expected.push(['webhook_endpoint.created', 'webhook_endpoint', endpointId, endpoint]);
      expected.push(['webhook_endpoint.updated', 'webhook_endpoint', endpointId, await app.request('PATCH', `/v1/webhook-endpoints/${endpointId}`, { key, body: { disabled: true } })]);
      expected.push(['webhook_endpoint.secret_rotated', 'webhook_endpoint', endpointId, await app.request('POST', `/v1/webhook-endpoints/${endpointId}/rotate-secret`, { key })]);
      expected.push(['webhook_endpoint.deleted', 'webhook_endpoint', endpointId, await app.request('DELETE', `/v1/webhook-endpoints/${endpointId}`, { key })]);
      for (const [action, , , res] of expected) assert.ok(res.status < 300, `${action}: ${res.text}`);

      const log = await entries(app, key);
      assert.deepEqual(log.map((e) => [e.action, e.target.type, e.target.id]), expected.map(([a, t, id]) => [a, t, id]));
      assert.deepEqual(log.map((e) => e.sequence), expected.map((_, i) => i + 1));
      for (const [i, e] of log.entries()) {
        assert.deepEqual(e.actor, { type: 'api_key', keyId });
        assert.equal(e.requestId, expected[i]![3].headers.get('x-request-id'));
        assert.equal(e.clientAddress, '127.0.0.1');
        assert.match(e.id, /^aud_[0-9A-Za-z]{24}$/);
        assert.ok(Math.abs(Date.parse(e.createdAt) - Date.now()) < 60_000);
      }
      assert.equal(log[1]!.newKeyId, newId, 'a roll names the new key');
      assert.equal(log.filter((e) => e.newKeyId !== undefined).length, 1);
      // Revoking again changes nothing and records nothing.
      assert.equal((await app.request('DELETE', `/v1/api-keys/${newId}`, { key })).status, 204);
      assert.equal((await entries(app, key)).length, expected.length);
      // Another account sees only its own (empty) log.
      const other = await app.createAccount('Other');
      assert.deepEqual(await entries(app, other.key), []);
    });

    test('when a change is refused, then no entry is written', async () => {
      const { key } = await app.createAccount('Refused');
      const restricted = (await app.request('POST', '/v1/api-keys', { key, body: { scopes: ['keys:write'] } })).body as { key: string };
      const before = (await entries(app, key)).length;
      const refused = [
        await app.request('POST', '/v1/api-keys', { key, body: { scopes: ['nope'] } }),
        await app.request('POST', '/v1/api-keys', { key: restricted.key, body: { scopes: ['pets:write'] } }),
        await app.request('POST', '/v1/api-keys', { key: restricted.key, body: {} }),
        await app.request('DELETE', '/v1/api-keys/key_missing', { key }),
        await app.request('POST', '/v1/api-keys/key_missing/roll', { key, body: {} }),
        await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'http://10.0.0.1/hook' } }),
        await app.request('PATCH', '/v1/webhook-endpoints/we_missing', { key, body: { disabled: true } }),
        await app.request('DELETE', '/v1/webhook-endpoints/we_missing', { key }),
        await app.request('POST', '/v1/webhook-endpoints/we_missing/rotate-secret', { key }),
      ];
      for (const res of refused) assert.ok(res.status >= 400, res.text);
      assert.equal((await entries(app, key)).length, before);
    });

    test('when the audit entry cannot be written, then the change is not made either (one transaction)', async () => {
      const { key } = await app.createAccount('Atomic');
      const endpoint = (await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'http://127.0.0.1:9/a' } })).body as { id: string };
      const keysBefore = ((await app.request('GET', '/v1/api-keys', { key })).body as unknown[]).length;
      const logBefore = await entries(app, key);
      await sqlOn(backend, app.config.database.url, FAIL_AUDIT[backend.name]);
      try {
        assert.equal((await app.request('POST', '/v1/api-keys', { key, body: {} })).status, 500);
        assert.equal((await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'http://127.0.0.1:9/b' } })).status, 500);
        assert.equal((await app.request('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { key, body: { description: 'changed' } })).status, 500);
        assert.equal((await app.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { key })).status, 500);
      } finally {
        await sqlOn(backend, app.config.database.url, HEAL_AUDIT[backend.name]);
      }
      assert.equal(((await app.request('GET', '/v1/api-keys', { key })).body as unknown[]).length, keysBefore, 'no key made');
      const after = (await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}`, { key })).body as { description?: string };
      assert.equal(after.description, undefined, 'not changed, not deleted');
      assert.equal(((await app.request('GET', '/v1/webhook-endpoints', { key })).body as unknown[]).length, 1, 'no endpoint made');
      assert.deepEqual(await entries(app, key), logBefore);
    });

    test('when the log is paged, then `after` and the Link cursor walk it once; both at once, or a bad value, is 400', async () => {
      const { key } = await app.createAccount('Pages');
      for (let i = 0; i < 5; i++) assert.equal((await app.request('POST', '/v1/api-keys', { key, body: { name: `k${i}` } })).status, 201);
      const seen: Entry[] = [];
      let path: string | undefined = '/v1/audit-log?limit=2';
      while (path) {
        const res = await app.request('GET', path, { key });
        seen.push(...(res.body as Entry[]));
        path = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
      }
      assert.deepEqual(seen.map((e) => e.sequence), [1, 2, 3, 4, 5]);
      assert.deepEqual((await entries(app, key, 'after=3')).map((e) => e.sequence), [4, 5]);
      const link = (await app.request('GET', '/v1/audit-log?limit=1', { key })).headers.get('link')!;
      const cursor = new URLSearchParams(/\?([^>]+)>/.exec(link)![1]).get('cursor')!;
      for (const query of [`after=1&cursor=${cursor}`, 'after=-1', 'after=x', 'limit=0', 'limit=101', 'other=1']) {
        const res = await app.request('GET', `/v1/audit-log?${query}`, { key });
        assert.equal(res.status, 400, query);
        assert.equal((res.body as { code: string }).code, 'invalid_request', query);
      }
      const tampered = await app.request('GET', `/v1/audit-log?cursor=${cursor.slice(0, -2)}AA`, { key });
      assert.equal((tampered.body as { code: string }).code, 'invalid_cursor');
    });
  });

  describe(`audit log: expired keys (${backend.name})`, () => {
    test('when an expired key is refused, then one entry per key per hour records it, with the request', async (t) => {
      const start = Date.parse('2026-11-27T10:00:00.000Z');
      const clock = fixedClock(start);
      const app = await startApp(t, { backend, clock, env });
      const { key: full, accountId } = await app.createAccount('Expired');
      const { key, id } = await app.services.apiKeys.create(accountId, undefined, { expiresAt: new Date(start + 1000).toISOString() });
      clock.set(start + 1000);
      const first = await app.request('GET', '/v1/pets', { key });
      assert.equal(first.status, 401);
      for (let i = 0; i < 3; i++) assert.equal((await app.request('GET', '/v1/store/orders', { key })).status, 401);
      const refusals = async () => (await entries(app, full)).filter((e) => e.action === 'api_key.expired_use_refused');
      for (let i = 0; i < 50 && (await refusals()).length === 0; i++) await sleep(20);
      await sleep(100);
      const once = await refusals();
      assert.equal(once.length, 1, 'once within the hour');
      assert.deepEqual(once[0]!.actor, { type: 'api_key', keyId: id });
      assert.deepEqual(once[0]!.target, { type: 'api_key', id });
      assert.equal(once[0]!.requestId, first.headers.get('x-request-id'));
      clock.set(start + 1000 + 3_600_000);
      assert.equal((await app.request('GET', '/v1/pets', { key })).status, 401);
      for (let i = 0; i < 50 && (await refusals()).length === 1; i++) await sleep(20);
      assert.equal((await refusals()).length, 2, 'again an hour later');
    });
  });
}
