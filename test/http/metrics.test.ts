import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startApp } from '../helpers/app.js';

test('when requests were served, then /metrics exposes request counts, latency, store latency and deprecated calls by account', async (t) => {
  const app = await startApp(t);
  const { key, accountId } = await app.createAccount();
  const pet = (await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).body as { id: number };
  await app.request('GET', `/v1/pets/${pet.id}`, { key });
  await app.request('GET', '/v1/pets', { key });
  await app.request('GET', '/no/such/route/12345');
  const res = await fetch(`${app.url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await res.text();
  assert.match(text, /petstore_http_requests_total\{method="POST",route="\/v1\/pets",status="201"\} 1/);
  assert.match(text, /petstore_http_request_duration_seconds_bucket\{le="[^"]+",method="GET",route="\/v1\/pets\/:petId",status="200"\} 1/);
  assert.match(text, /petstore_http_requests_total\{method="GET",route="unmatched",status="404"\} 1/);
  assert.doesNotMatch(text, /no\/such\/route/);
  assert.match(text, /petstore_store_query_duration_seconds_count\{operation="createPet"\} 1/);
  assert.match(text, new RegExp(`petstore_deprecated_calls_total\\{operation="getPet",account_id="${accountId}"\\} 1`));
  assert.match(text, /petstore_store_pool_connections\{state="total"\}/);
  assert.match(text, /petstore_process_resident_memory_bytes/);
  assert.equal(text.includes(key), false);
});

test('when PETSTORE_METRICS_TOKEN is set, then /metrics needs it', async (t) => {
  const app = await startApp(t, { env: { PETSTORE_METRICS_TOKEN: 'scrape-secret' } });
  const refused = await app.request('GET', '/metrics');
  assert.equal(refused.status, 401);
  assert.equal((refused.body as { code: string }).code, 'unauthorized');
  assert.equal((await app.request('GET', '/metrics', { headers: { authorization: 'Bearer wrong' } })).status, 401);
  const ok = await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer scrape-secret' } });
  assert.equal(ok.status, 200);
});

test('when the latency histogram records values, then its buckets are cumulative with +Inf, and workers\' histograms sum', async () => {
  const { AggregatorRegistry, Registry } = await import('prom-client');
  const { BoundHistogram } = await import('../../src/http/plugins/histogram.js');
  const registries = [new Registry(), new Registry()];
  const histograms = registries.map(
    (registry) => new BoundHistogram({ name: 'h_seconds', help: 'test', labelNames: ['route'] as const, buckets: [0.1, 0.01, 1], registers: [registry] }),
  );
  const one = histograms[0]!.labels({ route: '/a' });
  for (const v of [0.005, 0.01, 0.5, 3]) one.observe(v);
  histograms[1]!.labels({ route: '/a' }).observe(0.05);

  const text = await registries[0]!.metrics();
  assert.match(text, /# TYPE h_seconds histogram/);
  assert.match(text, /h_seconds_bucket\{le="0.01",route="\/a"\} 2\n/, 'bounds are sorted; a value equal to a bound counts in it');
  assert.match(text, /h_seconds_bucket\{le="0.1",route="\/a"\} 2\n/);
  assert.match(text, /h_seconds_bucket\{le="1",route="\/a"\} 3\n/);
  assert.match(text, /h_seconds_bucket\{le="\+Inf",route="\/a"\} 4\n/);
  assert.match(text, /h_seconds_sum\{route="\/a"\} 3.515\n/);
  assert.match(text, /h_seconds_count\{route="\/a"\} 4/);

  const merged = await AggregatorRegistry.aggregate(await Promise.all(registries.map((r) => r.getMetricsAsJSON()))).metrics();
  assert.match(merged, /h_seconds_bucket\{le="0.1",route="\/a"\} 3\n/);
  assert.match(merged, /h_seconds_count\{route="\/a"\} 5/);
});
