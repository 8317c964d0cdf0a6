import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startApp } from '../helpers/app.js';

test('when keys are created and used, good and bad, then neither the key nor the Authorization header appears in the logs', async (t) => {
  const app = await startApp(t);
  const { key } = await app.createAccount();
  await app.request('GET', '/v1/pets', { key });
  await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } });
  await app.request('GET', '/v1/pets?limit=0', { key });
  await app.request('GET', '/v1/pets', { key: `${key.slice(0, -1)}Z` });
  await app.request('GET', '/v1/pets', { headers: { authorization: `Basic ${key}` } });
  await app.request('GET', `/v1/pets?api_key=${key}`, { key });
  await app.request('GET', `/v1/nope?key=${encodeURIComponent(key)}`);
  const logs = app.logs.join('\n');
  assert.ok(app.logs.length > 5, 'the app logged requests');
  assert.ok(app.logs.every((line) => JSON.parse(line)), 'logs are JSON lines');
  assert.equal(logs.includes(key.slice(9, 30)), false, 'no key material in logs');
  assert.doesNotMatch(logs, /psk_live_[A-Za-z0-9]{10}/);
  assert.doesNotMatch(logs, /"authorization"\s*:/i, "no Authorization header field in logs");
  assert.doesNotMatch(logs, /Basic psk_/);
});

test('when a request is served, then exactly one log line records it, with the request id, status and time', async (t) => {
  const app = await startApp(t);
  await app.request('GET', '/healthz', { headers: { 'x-request-id': 'trace-me-42' } });
  const lines = app.logs.map((line) => JSON.parse(line) as { reqId?: string; res?: { statusCode: number }; responseTime?: number });
  const mine = lines.filter((line) => line.reqId === 'trace-me-42');
  assert.equal(mine.length, 1);
  assert.equal(mine[0]?.res?.statusCode, 200);
  assert.equal(typeof mine[0]?.responseTime, 'number');
  const req = (mine[0] as { req?: { method?: string; url?: string; remoteAddress?: string } }).req;
  assert.deepEqual([req?.method, req?.url, req?.remoteAddress], ['GET', '/healthz', '127.0.0.1']);
});
