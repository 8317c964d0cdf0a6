// Keys over HTTP, on every store, with real requests: create (scopes, expiry, the secret once),
// list and get (metadata only), roll with an overlap then expiry and revoke, seen by a second
// instance on the same database; no escalation; every bad input with its status and code;
// isolation between accounts. Every response is checked against the served document.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sharedApp, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

type Key = { id: string; name: string | null; scopes: string[] | null; environment: string; hint: string; createdAt: string; expiresAt: string | null; lastUsedAt: string | null; revokedAt: string | null; key?: string };

const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' };
const FIELDS = ['id', 'name', 'scopes', 'environment', 'hint', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt'];

function assertError(res: TestResponse, status: number, code: string, message?: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal((res.body as { code: string }).code, code, res.text);
  if (message) assert.match((res.body as { message: string }).message, message);
}

async function until(what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > timeoutMs) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await sleep(20);
  }
  return Date.now() - start;
}

for (const backend of backends) {
  describe(`API keys over HTTP (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    let full: string;
    const create = async (key: string, body: unknown) => app.request('POST', '/v1/api-keys', { key, body });
    const created = async (key: string, body: unknown): Promise<Key & { key: string }> => {
      const res = await create(key, body);
      assert.equal(res.status, 201, res.text);
      return res.body as Key & { key: string };
    };
    before(async () => {
      app = await getApp();
      ({ key: full } = await app.createAccount('Keys'));
    });

    test('when a full-access key creates a key, then 201 with the secret once, Location, and the key works; list and get never show a secret', async () => {
      const res = await create(full, { name: 'CI deploys', scopes: ['orders:read', 'pets:read'] });
      assert.equal(res.status, 201, res.text);
      const made = res.body as Key & { key: string };
      assert.deepEqual(Object.keys(made).sort(), [...FIELDS, 'key'].sort());
      assert.match(made.key, /^psk_live_[0-9A-Za-z]{36}$/);
      assert.deepEqual(made.scopes, ['pets:read', 'orders:read'], 'in the document\'s order');
      assert.equal(made.name, 'CI deploys');
      assert.equal(made.environment, 'production');
      assert.equal(made.hint, `psk_live_…${made.key.slice(-4)}`);
      assert.equal(made.expiresAt, null);
      assert.equal(made.lastUsedAt, null);
      assert.equal(res.headers.get('location'), `/v1/api-keys/${made.id}`);
      assert.equal((await app.request('GET', '/v1/pets', { key: made.key })).status, 200);
      assert.equal((await app.request('POST', '/v1/pets', { key: made.key, body: { name: 'x', categoryId: 1 } })).status, 403);
      const got = await app.request('GET', `/v1/api-keys/${made.id}`, { key: full });
      const { key: _secret, ...metadata } = made;
      assert.deepEqual(got.body, metadata);
      const listed = await app.request('GET', '/v1/api-keys?limit=100', { key: full });
      assert.ok((listed.body as Key[]).some((k) => k.id === made.id));
      for (const text of [got.text, listed.text]) {
        assert.ok(!text.includes(made.key), 'no secret');
        assert.ok(!/"key"|keyHash|key_hash/.test(text), 'no secret or hash field');
      }
    });

    test('when a key is made with {} or no body, then it is full access and never expires', async () => {
      for (const options of [{ body: {} }, {}]) {
        const res = await app.request('POST', '/v1/api-keys', { key: full, ...options });
        assert.equal(res.status, 201, res.text);
        assert.equal((res.body as Key).scopes, null);
        assert.equal((res.body as Key).name, null);
        assert.equal((res.body as Key).expiresAt, null);
      }
    });

    test('when a restricted key asks for more than it has, then 403 insufficient_scope naming what it lacks; within its scopes, 201', async () => {
      const admin = await created(full, { scopes: ['keys:write', 'pets:read'] });
      const more = await create(admin.key, { scopes: ['pets:write'] });
      assertError(more, 403, 'insufficient_scope', /pets:write/);
      assert.equal(more.headers.get('www-authenticate'), 'Bearer realm="petstore", error="insufficient_scope", scope="pets:write"');
      assertError(await create(admin.key, {}), 403, 'insufficient_scope', /full-access key can only come from a full-access key/);
      assertError(await create(admin.key, { scopes: ['pets:read', 'webhooks:read'] }), 403, 'insufficient_scope', /webhooks:read/);
      assert.deepEqual((await created(admin.key, { scopes: ['pets:read'] })).scopes, ['pets:read']);
      assert.deepEqual((await created(admin.key, { scopes: ['keys:read', 'keys:write'] })).scopes, ['keys:read', 'keys:write'], 'keys:write implies keys:read');
      // Nor can it roll a key with more than it has (that would hand it the secret).
      const { id: fullId } = await created(full, {});
      assertError(await app.request('POST', `/v1/api-keys/${fullId}/roll`, { key: admin.key, body: {} }), 403, 'insufficient_scope');
      const writer = await created(full, { scopes: ['pets:write'] });
      assertError(await app.request('POST', `/v1/api-keys/${writer.id}/roll`, { key: admin.key, body: {} }), 403, 'insufficient_scope', /pets:write/);
      // A refused attempt made nothing.
      const ids = ((await app.request('GET', '/v1/api-keys?limit=100', { key: full })).body as Key[]).map((k) => k.id);
      assert.equal(new Set(ids).size, ids.length);
    });

    test('when a key with an expiry makes a key, then the new key\'s expiry is capped at the caller\'s (absent or later), kept when earlier', async () => {
      const soon = new Date(Date.now() + 3_600_000).toISOString();
      const caller = await created(full, { expiresAt: soon });
      assert.equal(caller.expiresAt, soon);
      assert.equal((await created(caller.key, {})).expiresAt, soon);
      assert.equal((await created(caller.key, { expiresAt: new Date(Date.now() + 86_400_000).toISOString() })).expiresAt, soon);
      const earlier = new Date(Date.now() + 60_000).toISOString();
      assert.equal((await created(caller.key, { expiresAt: earlier })).expiresAt, earlier);
      // Written with an offset, answered in UTC.
      const offset = new Date(Date.now() + 7_200_000);
      const asked = `${new Date(offset.getTime() + 3_600_000).toISOString().slice(0, 19)}+01:00`;
      assert.equal((await created(full, { expiresAt: asked })).expiresAt, new Date(Date.parse(asked)).toISOString());
    });

    test('when the body is invalid, then 400 with the code that says why, and nothing is made', async () => {
      const year = new Date();
      year.setUTCFullYear(year.getUTCFullYear() + 1);
      const cases: Array<[string, Parameters<TestApp['request']>[2], string]> = [
        ['expiresAt in the past', { body: { expiresAt: new Date(Date.now() - 1000).toISOString() } }, 'invalid_request'],
        ['expiresAt beyond a year', { body: { expiresAt: new Date(year.getTime() + 60_000).toISOString() } }, 'invalid_request'],
        ['expiresAt not a time', { body: { expiresAt: 'tomorrow' } }, 'invalid_request'],
        ['expiresAt a number', { body: { expiresAt: Date.now() + 1000 } }, 'invalid_request'],
        ['an empty scope list', { body: { scopes: [] } }, 'invalid_request'],
        ['an unknown scope', { body: { scopes: ['pets:delete'] } }, 'invalid_request'],
        ['a repeated scope', { body: { scopes: ['pets:read', 'pets:read'] } }, 'invalid_request'],
        ['scopes null', { body: { scopes: null } }, 'invalid_request'],
        ['an empty name', { body: { name: '' } }, 'invalid_request'],
        ['a blank name', { body: { name: '   ' } }, 'invalid_request'],
        ['a name with a newline', { body: { name: 'a\nb' } }, 'invalid_request'],
        ['a name of 101 characters', { body: { name: 'x'.repeat(101) } }, 'invalid_request'],
        ['an unknown field', { body: { environment: 'staging' } }, 'invalid_request'],
        ['an array body', { body: [] }, 'invalid_request'],
        ['malformed JSON', { rawBody: '{"name":', headers: { 'content-type': 'application/json' } }, 'invalid_json'],
        ['a text body', { rawBody: 'name=x', headers: { 'content-type': 'text/plain' } }, 'invalid_content_type'],
      ];
      const count = async () => ((await app.request('GET', '/v1/api-keys?limit=100', { key: full })).body as Key[]).length;
      const before = await count();
      for (const [label, options, code] of cases) assertError(await app.request('POST', '/v1/api-keys', { key: full, ...options }), 400, code, undefined), void label;
      assert.equal(await count(), before);
      const past = await app.request('POST', '/v1/api-keys', { key: full, body: { expiresAt: '2020-01-01T00:00:00Z' } });
      assert.match((past.body as { message: string }).message, /not in the future/);
      const huge = await app.request('POST', '/v1/api-keys', { key: full, body: { name: 'x'.repeat(70_000) } });
      assertError(huge, 413, 'payload_too_large');
      const { id } = await created(full, {});
      for (const body of [{ expiresInSeconds: -1 }, { expiresInSeconds: 604_801 }, { expiresInSeconds: 1.5 }, { expiresInSeconds: '60' }, { other: 1 }]) {
        assertError(await app.request('POST', `/v1/api-keys/${id}/roll`, { key: full, body }), 400, 'invalid_request');
      }
      for (const bad of ['a-b', 'x'.repeat(65), 'k%20y']) {
        assertError(await app.request('GET', `/v1/api-keys/${bad}`, { key: full }), 400, 'invalid_request');
        assertError(await app.request('DELETE', `/v1/api-keys/${bad}`, { key: full }), 400, 'invalid_request');
      }
      for (const query of ['limit=0', 'limit=101', 'limit=x', 'other=1']) assertError(await app.request('GET', `/v1/api-keys?${query}`, { key: full }), 400, 'invalid_request');
      assertError(await app.request('GET', '/v1/api-keys?cursor=AAAA', { key: full }), 400, 'invalid_cursor');
      assertError(await app.request('GET', '/v1/api-keys/key_doesNotExist', { key: full }), 404, 'not_found');
    });

    test('when another account\'s key id is used, then 404 on get, roll and revoke, and that key keeps working', async () => {
      const other = await app.createAccount('Other');
      assertError(await app.request('GET', `/v1/api-keys/${other.keyId}`, { key: full }), 404, 'not_found');
      assertError(await app.request('POST', `/v1/api-keys/${other.keyId}/roll`, { key: full, body: {} }), 404, 'not_found');
      assertError(await app.request('DELETE', `/v1/api-keys/${other.keyId}`, { key: full }), 404, 'not_found');
      assert.equal((await app.request('GET', '/v1/pets', { key: other.key })).status, 200);
      const theirs = (await app.request('GET', '/v1/api-keys', { key: other.key })).body as Key[];
      assert.deepEqual(theirs.map((k) => k.id), [other.keyId]);
    });

    test('when keys are listed a page at a time, then each appears once, oldest first, following Link', async () => {
      const { key: own } = await app.createAccount('Pages');
      for (let i = 0; i < 4; i++) await created(own, { name: `k${i}` });
      const seen: Key[] = [];
      let path: string | undefined = '/v1/api-keys?limit=2';
      while (path) {
        const res = await app.request('GET', path, { key: own });
        assert.equal(res.status, 200);
        seen.push(...(res.body as Key[]));
        path = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
      }
      assert.deepEqual(seen.map((k) => k.name), [null, 'k0', 'k1', 'k2', 'k3']);
    });

    test('when a key is revoked, then 204 and it is refused; a key may revoke itself, the last full-access one too; revoking again is 204', async () => {
      const { key: own, keyId } = await app.createAccount('Revoke');
      const spare = await created(own, { scopes: ['pets:read'] });
      assert.equal((await app.request('GET', '/v1/pets', { key: spare.key })).status, 200);
      assert.equal((await app.request('DELETE', `/v1/api-keys/${spare.id}`, { key: own })).status, 204);
      assertError(await app.request('GET', '/v1/pets', { key: spare.key }), 401, 'unauthorized', /revoked/);
      assert.equal((await app.request('DELETE', `/v1/api-keys/${spare.id}`, { key: own })).status, 204);
      assert.ok(((await app.request('GET', `/v1/api-keys/${spare.id}`, { key: own })).body as Key).revokedAt);
      assert.equal((await app.request('DELETE', `/v1/api-keys/${keyId}`, { key: own })).status, 204, 'itself, the last full-access key');
      assertError(await app.request('GET', '/v1/api-keys', { key: own }), 401, 'unauthorized', /revoked/);
    });

    test('when a revoked or expired key is rolled, then 400 invalid_request', async () => {
      const gone = await created(full, {});
      assert.equal((await app.request('DELETE', `/v1/api-keys/${gone.id}`, { key: full })).status, 204);
      assertError(await app.request('POST', `/v1/api-keys/${gone.id}/roll`, { key: full, body: {} }), 400, 'invalid_request', /revoked/);
      const ending = await created(full, {});
      assert.equal((await app.request('POST', `/v1/api-keys/${ending.id}/roll`, { key: full, body: { expiresInSeconds: 0 } })).status, 201);
      assertError(await app.request('POST', `/v1/api-keys/${ending.id}/roll`, { key: full, body: {} }), 400, 'invalid_request', /expired/);
    });
  });

  describe(`rolling and revoking across two instances (${backend.name})`, () => {
    test('when a key is rolled with an overlap, then both keys work on both instances until it ends, then the old one is refused with its expiry everywhere', async (t) => {
      const one = await startApp(t, { backend, env });
      const two = await startApp(t, { backend, env, databaseUrl: one.config.database.url });
      const { key: full } = await one.createAccount('Roll');
      const old = (await one.request('POST', '/v1/api-keys', { key: full, body: { name: 'deploy', scopes: ['pets:read'] } })).body as Key & { key: string };
      for (const app of [one, two]) assert.equal((await app.request('GET', '/v1/pets', { key: old.key })).status, 200, 'remembered on both');
      const rolled = await one.request('POST', `/v1/api-keys/${old.id}/roll`, { key: full, body: { expiresInSeconds: 2 } });
      assert.equal(rolled.status, 201, rolled.text);
      const fresh = rolled.body as Key & { key: string };
      assert.equal(fresh.name, 'deploy');
      assert.deepEqual(fresh.scopes, ['pets:read']);
      assert.notEqual(fresh.key, old.key);
      const oldExpiry = ((await one.request('GET', `/v1/api-keys/${old.id}`, { key: full })).body as Key).expiresAt!;
      assert.ok(Math.abs(Date.parse(oldExpiry) - (Date.now() + 2000)) < 1500, oldExpiry);
      for (const app of [one, two]) {
        assert.equal((await app.request('GET', '/v1/pets', { key: old.key })).status, 200, 'old key during the overlap');
        assert.equal((await app.request('GET', '/v1/pets', { key: fresh.key })).status, 200, 'new key');
      }
      await sleep(Math.max(0, Date.parse(oldExpiry) - Date.now()) + 50);
      for (const app of [one, two]) {
        for (const path of ['/v1/pets', '/v1/pets/1']) {
          const res = await app.request('GET', path, { key: old.key });
          assertError(res, 401, 'unauthorized', new RegExp(`expired at ${oldExpiry.replace(/\./g, '\\.')}`));
          assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
        }
        assert.equal((await app.request('GET', '/v1/pets', { key: fresh.key })).status, 200);
      }
    });

    test('when a key is revoked or rolled with no overlap on one instance, then the other refuses it within a second', async (t) => {
      const one = await startApp(t, { backend, env });
      const two = await startApp(t, { backend, env, databaseUrl: one.config.database.url });
      const { key: full } = await one.createAccount('Revoke across');
      for (const action of ['revoke', 'roll'] as const) {
        const made = (await one.request('POST', '/v1/api-keys', { key: full, body: {} })).body as Key & { key: string };
        assert.equal((await two.request('GET', '/v1/pets', { key: made.key })).status, 200, 'remembered on two');
        const res =
          action === 'revoke'
            ? await one.request('DELETE', `/v1/api-keys/${made.id}`, { key: full })
            : await one.request('POST', `/v1/api-keys/${made.id}/roll`, { key: full, body: { expiresInSeconds: 0 } });
        assert.ok(res.status === 204 || res.status === 201, res.text);
        assert.equal((await one.request('GET', '/v1/pets', { key: made.key })).status, 401, `${action}: refused at once here`);
        const took = await until(`${action}: refused on the other instance`, async () => (await two.request('GET', '/v1/pets', { key: made.key })).status === 401, 1000);
        assert.ok(took <= 1000);
      }
    });

    test('when a staging key creates a key, then it is a staging key', async (t) => {
      const app = await startApp(t, { backend, env: { ...env, PETSTORE_ENV: 'staging' } });
      const { key } = await app.createAccount('Staging');
      assert.match(key, /^psk_test_/);
      const res = await app.request('POST', '/v1/api-keys', { key, body: {} });
      assert.equal(res.status, 201);
      assert.match((res.body as { key: string }).key, /^psk_test_/);
      assert.equal((res.body as Key).environment, 'staging');
    });
  });
}
