import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createMemoryRateLimiter, createRedisRateLimiter } from '../../src/services/rate-limit.js';
import { startApp } from '../helpers/app.js';

const REDIS_URL = process.env.PETSTORE_TEST_REDIS_URL;

describe('rate limiting over HTTP', () => {
  test('when a key exceeds its bucket, then 429 rate_limited with Retry-After, and other keys are unaffected', async (t) => {
    const app = await startApp(t, { env: { PETSTORE_RATE_LIMIT_PER_SECOND: '1', PETSTORE_RATE_LIMIT_BURST: '3' } });
    const a = await app.createAccount('A');
    const b = await app.createAccount('B');
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.request('GET', '/v1/pets', { key: a.key })).status);
    assert.deepEqual(statuses.slice(0, 3), [200, 200, 200]);
    const limited = await app.request('GET', '/v1/pets', { key: a.key });
    assert.equal(limited.status, 429);
    assert.equal((limited.body as { code: string }).code, 'rate_limited');
    assert.match(limited.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    assert.equal(limited.headers.get('ratelimit-policy'), '"default";q=3;w=3');
    assert.match(limited.headers.get('ratelimit') ?? '', /^"default";r=0;t=\d+$/);
    assert.equal((await app.request('GET', '/v1/pets', { key: b.key })).status, 200);
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    assert.match(metrics, /petstore_rate_limit_rejections_total [1-9]/);
  });

  test('when a request is authenticated, then RateLimit-Policy and RateLimit count down', async (t) => {
    const app = await startApp(t, { env: { PETSTORE_RATE_LIMIT_PER_SECOND: '1', PETSTORE_RATE_LIMIT_BURST: '10' } });
    const { key } = await app.createAccount();
    const first = await app.request('GET', '/v1/pets', { key });
    const second = await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } });
    assert.equal(first.headers.get('ratelimit-policy'), '"default";q=10;w=10');
    assert.equal(first.headers.get('ratelimit'), '"default";r=9;t=1');
    assert.match(second.headers.get('ratelimit') ?? '', /^"default";r=8;t=[12]$/);
    const unauthenticated = await app.request('GET', '/v1/pets');
    assert.equal(unauthenticated.headers.get('ratelimit'), null, 'no bucket is spent on unauthenticated calls');
  });
});

describe('token bucket', () => {
  test('when time passes, then the bucket refills at the configured rate up to its capacity', async () => {
    let now = 0;
    const limiter = createMemoryRateLimiter({ ratePerSecond: 2, capacity: 2, now: () => now });
    assert.equal((await limiter.take('k')).allowed, true);
    assert.equal((await limiter.take('k')).allowed, true);
    const refused = await limiter.take('k');
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterSeconds, 1);
    now += 500;
    assert.equal((await limiter.take('k')).allowed, true, 'one token after 0.5 s at 2/s');
    now += 60_000;
    const full = await limiter.take('k');
    assert.equal(full.remaining, 1, 'capped at capacity');
    await limiter.close();
  });

  test('when the wall clock steps back, then the bucket neither refills nor loses tokens (as the Redis script)', async () => {
    let now = 100_000;
    const limiter = createMemoryRateLimiter({ ratePerSecond: 2, capacity: 4, now: () => now });
    assert.equal((await limiter.take('k')).remaining, 3);
    now -= 5_000;
    const after = await limiter.take('k');
    assert.equal(after.allowed, true, 'a step back of 5 s at 2/s must not take 10 tokens');
    assert.equal(after.remaining, 2);
    now += 500;
    assert.equal((await limiter.take('k')).remaining, 2, 'refills from the new time: one token after 0.5 s, one taken');
    await limiter.close();
  });
});

describe('Redis rate limiter', { skip: REDIS_URL ? false : 'set PETSTORE_TEST_REDIS_URL to run the Redis limiter tests' }, () => {
  test('when two limiters share Redis, then they share one bucket per key', async (t) => {
    const errors: unknown[] = [];
    const options = { ratePerSecond: 1, capacity: 3, onError: (e: unknown) => errors.push(e) };
    const one = createRedisRateLimiter(REDIS_URL!, options);
    const two = createRedisRateLimiter(REDIS_URL!, options);
    t.after(() => Promise.all([one.close(), two.close()]));
    const key = `test-${Math.random()}`;
    const results = [await one.take(key), await two.take(key), await one.take(key), await two.take(key)];
    assert.deepEqual(results.map((r) => r.allowed), [true, true, true, false]);
    assert.deepEqual(errors, []);
  });

  test('when the event loop is blocked past the deadline while Redis answers, then the answer counts (a busy process is not Redis being away)', async (t) => {
    const errors: unknown[] = [];
    const limiter = createRedisRateLimiter(REDIS_URL!, { ratePerSecond: 1, capacity: 1, timeoutMs: 50, onError: (e) => errors.push(e) });
    t.after(() => limiter.close());
    const key = `test-${Math.random()}`;
    // Connected, and the script loaded (until a take meets the deadline).
    for (let i = 0; i < 50; i++) {
      const before = errors.length;
      await limiter.take(`warm-${i}-${key}`);
      if (errors.length === before) break;
    }
    errors.length = 0;
    assert.equal((await limiter.take(key)).allowed, true);
    assert.deepEqual(errors.map(String), [], 'warmed up');
    const pending = limiter.take(key);
    // The command is on the wire; the answer arrives while this loop is busy for 4 deadlines.
    const until = Date.now() + 200;
    while (Date.now() < until);
    const decision = await pending;
    assert.deepEqual(errors.map(String), [], 'no failure reported');
    assert.equal(decision.allowed, false, 'the bucket is empty: Redis said no');
  });

  test('when Redis is unreachable, then requests are allowed (fail open) and the error is reported', async (t) => {
    const errors: unknown[] = [];
    const limiter = createRedisRateLimiter('redis://127.0.0.1:1', { ratePerSecond: 1, capacity: 1, onError: (e) => errors.push(e) });
    t.after(() => limiter.close());
    const decisions = [await limiter.take('k'), await limiter.take('k'), await limiter.take('k')];
    assert.ok(decisions.every((d) => d.allowed));
    assert.equal(errors.length, 3);
  });

  test('when the app is configured with an unreachable Redis, then it keeps serving and counts the failures', async (t) => {
    const app = await startApp(t, { env: { PETSTORE_REDIS_URL: 'redis://127.0.0.1:1' } });
    const { key } = await app.createAccount();
    assert.equal((await app.request('GET', '/v1/pets', { key })).status, 200);
    assert.equal((await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).status, 201);
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    assert.match(metrics, /petstore_rate_limiter_errors_total [2-9]/);
  });
});
