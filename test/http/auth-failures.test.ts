// Failed authentications limited per client address (issue 30, part 6): 429 rate_limited with
// Retry-After past the burst, before any lookup; keys that authenticated lately are never
// slowed, from any address; X-Forwarded-For names the client only behind a trusted proxy; the
// fast path's requests count too; with Redis, instances share the buckets.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { startApp, type TestApp } from '../helpers/app.js';

const redisUrl = process.env.PETSTORE_TEST_REDIS_URL || undefined;

/** Refused (401) as every wrong key is; each one counts against its address. */
const BAD_KEY = 'psk_live_000000000000000000000000000000000000';

// One token back every 100 s: nothing refills while a test runs, however slow the machine.
const LIMITS = { PETSTORE_AUTH_FAILURE_LIMIT_BURST: '5', PETSTORE_AUTH_FAILURE_LIMIT_PER_SECOND: '0.01' };

/** A client address no other test (or run sharing Redis) uses. */
const address = () => `2001:db8::${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}`;

function from(app: TestApp, client: string, path: string, key?: string) {
  return app.request('GET', path, { headers: { 'x-forwarded-for': client }, ...(key === undefined ? {} : { key }) });
}

/** `count` failures, each still a 401: the bucket (5) then has 5 - count tokens less. */
async function exhaust(app: TestApp, client: string, count = 5, path = '/v1/pets'): Promise<void> {
  for (let i = 0; i < count; i++) {
    const res = await from(app, client, path, BAD_KEY);
    assert.equal(res.status, 401, `failure ${i + 1} is still a 401`);
  }
}

async function trustingApp(t: TestContext, env: Record<string, string> = {}): Promise<TestApp> {
  return startApp(t, { env: { ...LIMITS, PETSTORE_TRUSTED_PROXIES: '127.0.0.1', ...env } });
}

describe('failed authentications per client address', () => {
  it('when an address fails more than the burst, then it gets 429 rate_limited with Retry-After, whatever key or header it sends next', async (t) => {
    const app = await trustingApp(t);
    const attacker = address();
    await exhaust(app, attacker);
    for (const key of [BAD_KEY, 'garbage', undefined]) {
      const res = await from(app, attacker, '/v1/pets', key);
      assert.equal(res.status, 429, String(key));
      assert.equal((res.body as { code: string }).code, 'rate_limited');
      assert.match((res.body as { message: string }).message, /failed authentications from your address/);
      // One token back every 100 s: the wait is that long, not rounded down to a second.
      const wait = Number(res.headers.get('retry-after'));
      assert.ok(wait >= 90 && wait <= 100, `Retry-After ${wait}`);
      assert.equal(res.headers.get('ratelimit'), null, "the per-key limit's headers are not this limit's");
    }
    // Another address is not affected, and the example API shares the limit.
    assert.equal((await from(app, address(), '/v1/pets', BAD_KEY)).status, 401);
    assert.equal((await from(app, attacker, '/example/v1/messages/msg_x', BAD_KEY)).status, 429);
  });

  it('when an address is over the limit, then a key that authenticated lately still works from it, a new key from another address works, and a new key from it waits', async (t) => {
    const app = await trustingApp(t);
    const shared = address();
    const known = await app.createAccount();
    assert.equal((await from(app, shared, '/v1/pets', known.key)).status, 200);
    // A key's first use here took a token, as any key not seen lately does.
    await exhaust(app, shared, 4);
    assert.equal((await from(app, shared, '/v1/pets', BAD_KEY)).status, 429);
    for (let i = 0; i < 3; i++) assert.equal((await from(app, shared, '/v1/pets?limit=5', known.key)).status, 200, 'never slowed by the failures');
    const fresh = await app.createAccount();
    const other = await app.createAccount();
    assert.equal((await from(app, address(), '/v1/pets', other.key)).status, 200, 'a new key from another address');
    // Documented: an address over the limit gets no lookup for a key not seen lately, valid or not.
    assert.equal((await from(app, shared, '/v1/pets', fresh.key)).status, 429);
  });

  it('when requests go to the fast path (GET /v1/pets with a cached page), then their failures count too', async (t) => {
    const app = await trustingApp(t);
    const { key } = await app.createAccount();
    const client = address();
    assert.equal((await from(app, client, '/v1/pets', key)).status, 200);
    assert.equal((await from(app, client, '/v1/pets', key)).status, 200, 'cached: the fast path answers it');
    await exhaust(app, client, 4);
    assert.equal((await from(app, client, '/v1/pets', BAD_KEY)).status, 429);
    assert.equal((await from(app, client, '/v1/pets', key)).status, 200);
  });

  it('when no proxy is trusted, then X-Forwarded-For is ignored: spoofed addresses share the connection\'s bucket', async (t) => {
    const app = await startApp(t, { env: LIMITS });
    for (let i = 0; i < 5; i++) assert.equal((await from(app, address(), '/v1/pets', BAD_KEY)).status, 401);
    assert.equal((await from(app, address(), '/v1/pets', BAD_KEY)).status, 429);
  });

  it('when PETSTORE_TRUSTED_PROXIES lists something else than addresses or CIDRs, then the config is refused', () => {
    assert.throws(() => loadConfig({ PETSTORE_TRUSTED_PROXIES: '10.0.0.0/8,haproxy' }), /PETSTORE_TRUSTED_PROXIES.*"haproxy"/);
    assert.throws(() => loadConfig({ PETSTORE_TRUSTED_PROXIES: '10.0.0.0/33' }), /PETSTORE_TRUSTED_PROXIES/);
    assert.deepEqual(loadConfig({ PETSTORE_TRUSTED_PROXIES: ' 10.0.0.5, 10.0.0.0/8,::1 ' }).http.trustedProxies, ['10.0.0.5', '10.0.0.0/8', '::1']);
  });

  it('when instances share Redis, then one instance\'s failures count on the other', { skip: redisUrl ? false : 'needs PETSTORE_TEST_REDIS_URL' }, async (t) => {
    const a = await trustingApp(t, { PETSTORE_REDIS_URL: redisUrl! });
    const b = await startApp(t, { databaseUrl: a.config.database.url, env: { ...LIMITS, PETSTORE_TRUSTED_PROXIES: '127.0.0.1', PETSTORE_REDIS_URL: redisUrl! } });
    const client = address();
    await exhaust(a, client);
    const res = await from(b, client, '/v1/pets', BAD_KEY);
    assert.equal(res.status, 429);
    const wait = Number(res.headers.get('retry-after'));
    assert.ok(wait >= 90 && wait <= 100, `Retry-After ${wait}: one token every 100 s`);
  });
});
