// OpenTelemetry traces, end to end: `petstore serve` as a real process exporting to a real
// OTLP/HTTP receiver (test/helpers/otlp-receiver.ts: http/protobuf on SQLite, http/json on
// PostgreSQL), a real webhook receiver, and the W3C traceparent in and out.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT_CONTEXT, SamplingDecision } from '@opentelemetry/api';
import { TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { backends, sqliteBackend } from './helpers/backends.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './helpers/otlp-receiver.js';
import { createAccountWithKey, httpRequest, type ServerProcess, startServerProcess } from './helpers/process.js';
import { eventually, type Receiver, startReceiver } from './helpers/receiver.js';
import { registerEndpoint, WEBHOOK_ENV } from './helpers/webhooks.js';
import { silentServer } from './helpers/silent-server.js';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** A sampled traceparent of a fresh trace: [header, trace id, parent span id]. */
function traceparent(): [string, string, string] {
  const traceId = hex(16);
  const spanId = hex(8);
  return [`00-${traceId}-${spanId}-01`, traceId, spanId];
}

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

/** Every span of the trace below `root` (children, their children…). */
function descendants(spans: readonly ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] {
  const found: ReceivedSpan[] = [];
  let frontier = [root.spanId];
  while (frontier.length > 0) {
    const next = spans.filter((s) => s.traceId === root.traceId && frontier.includes(s.parentSpanId));
    found.push(...next);
    frontier = next.map((s) => s.spanId);
  }
  return found;
}

const TRACE_ENV = (otlp: OtlpReceiver, protocol: string): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
  OTEL_BSP_SCHEDULE_DELAY: '50',
  OTEL_SERVICE_NAME: 'petstore-test',
  OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
});

for (const backend of backends) {
  const protocol = backend.name === 'sqlite' ? 'http/protobuf' : 'http/json';
  const system = backend.name === 'sqlite' ? 'sqlite' : 'postgresql';
  describe(`tracing (${backend.name}, ${protocol})`, () => {
    let drop: () => Promise<void>;
    let otlp: OtlpReceiver;
    let hooks: Receiver;
    let serve: ServerProcess;
    let env: Record<string, string>;
    let account: { accountId: string; key: string };

    before(async () => {
      const database = await backend.createDatabase();
      drop = database.drop;
      otlp = await startOtlpReceiver();
      hooks = await startReceiver();
      env = { PETSTORE_DATABASE_URL: database.url, ...WEBHOOK_ENV };
      serve = await startServerProcess({ ...env, ...TRACE_ENV(otlp, protocol) });
      account = await createAccountWithKey(env);
    });
    after(async () => {
      await serve?.stop('SIGKILL');
      await hooks?.close();
      await otlp?.close();
      await drop?.();
    });

    test('when a request carries a traceparent, then its server span continues the trace, with its statements as children, the HTTP attributes, and no secret anywhere', async () => {
      const [header, traceId, parentId] = traceparent();
      const created = await httpRequest(serve.url, 'POST', '/v1/pets', {
        key: account.key,
        body: { name: 'Bind-value-7f3a', categoryId: 4, status: 'available' },
        headers: { traceparent: header, tracestate: 'vendor=abc', 'user-agent': 'tracing-test/1.0' },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const server = await otlp.waitFor((s) => s.traceId === traceId && s.kind === SERVER);
      assert.equal(server.parentSpanId, parentId, 'the incoming span is its parent');
      assert.equal(server.name, 'POST /v1/pets');
      assert.equal(server.attributes['http.request.method'], 'POST');
      assert.equal(server.attributes['http.route'], '/v1/pets');
      assert.equal(server.attributes['url.path'], '/v1/pets');
      assert.equal(server.attributes['http.response.status_code'], 201);
      assert.equal(server.attributes['server.address'], '127.0.0.1');
      assert.equal(server.attributes['user_agent.original'], 'tracing-test/1.0');
      assert.equal(server.attributes['petstore.account_id'], account.accountId);
      assert.notEqual(server.status, ERROR);
      assert.equal(server.resource['service.name'], 'petstore-test');
      assert.equal(server.resource['deployment.environment.name'], 'test');

      // The group commit runs the insert: a span in this trace linked to the request, with the batch size.
      const commit = await otlp.waitFor((s) => s.name === 'group commit' && s.links.some((l) => l.traceId === traceId));
      assert.ok(Number(commit.attributes['db.operation.batch.size']) >= 1);
      await otlp.waitFor((s) => s.parentSpanId === commit.spanId && s.attributes['db.system.name'] === system);
      const below = descendants(otlp.spans, server);
      const statements = below.filter((s) => s.attributes['db.system.name'] === system && s.kind === CLIENT && s.attributes['db.operation.name'] !== undefined);
      assert.ok(statements.length > 0, `statement spans under the server span: ${below.map((s) => s.name).join(', ')}`);
      for (const s of statements) assert.equal(s.name, `${s.attributes['db.operation.name']}${s.attributes['db.collection.name'] ? ` ${s.attributes['db.collection.name']}` : ''}`);
      // @fastify/otel wired the route: its handler's span is in the request's trace.
      assert.ok(below.some((s) => s.attributes['fastify.type'] === 'request-handler'), `the handler's span under the server span: ${below.map((s) => s.name).join(', ')}`);

      const everything = JSON.stringify(otlp.spans);
      assert.ok(!everything.includes(account.key), 'the API key is in no span');
      assert.doesNotMatch(everything, /psk_(live|test)_/);
      assert.ok(!everything.includes('Bind-value-7f3a'), 'no bind value is in any span');

      const line = await serve.waitForLog((l) => l.msg === 'request completed' && l.trace_id === traceId);
      assert.equal(line.span_id, server.spanId, 'the request log line names the server span');
    });

    test('when many sampled creates arrive at once on keep-alive connections, then each has its handler span under its own server span, and its batch links to it', async () => {
      // Waves of 20 at once on fetch's keep-alive connections: later requests come on connections earlier ones used.
      const traces = Array.from({ length: 100 }, () => traceparent());
      const create = ([header]: [string, string, string], i: number) =>
        fetch(new URL('/v1/pets', serve.url), {
          method: 'POST',
          headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json', traceparent: header },
          body: JSON.stringify({ name: `Burst ${i}`, categoryId: 2 }),
        }).then(async (res) => (await res.arrayBuffer(), res.status));
      for (let wave = 0; wave < traces.length; wave += 20) {
        const statuses = await Promise.all(traces.slice(wave, wave + 20).map((t, i) => create(t, wave + i)));
        assert.deepEqual(new Set(statuses), new Set([201]));
      }
      for (const [, traceId] of traces) {
        const server = await otlp.waitFor((s) => s.traceId === traceId && s.kind === SERVER);
        const handler = await otlp.waitFor((s) => s.traceId === traceId && s.attributes['fastify.type'] === 'request-handler');
        assert.ok(descendants(otlp.spans, server).includes(handler), 'the handler span is under its own server span');
        const commit = await otlp.waitFor((s) => s.name === 'group commit' && s.links.some((l) => l.traceId === traceId));
        assert.ok(commit.links.some((l) => l.traceId === traceId && l.spanId === handler.spanId), 'the batch links to the request (its handler span)');
      }
    });

    test('when a pet is created with an endpoint registered, then the delivery is a client span linked to the create, and the receiver gets its traceparent in the same trace', async () => {
      const { key } = await createAccountWithKey(env, 'Webhooks');
      await registerEndpoint(serve.url, key, hooks.url);
      const [header, traceId] = traceparent();
      const created = await httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 }, headers: { traceparent: header } });
      assert.equal(created.status, 201);
      const [received] = await hooks.waitFor(1);
      const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(received!.headers.traceparent));
      assert.ok(sent, `traceparent at the receiver: ${received!.headers.traceparent}`);
      assert.equal(sent[1], traceId);
      const delivery = await otlp.waitFor((s) => s.name === 'webhook delivery' && s.spanId === sent[2]);
      assert.equal(delivery.kind, CLIENT);
      assert.equal(delivery.attributes['http.response.status_code'], 204);
      const link = delivery.links.find((l) => l.traceId === traceId);
      assert.ok(link, 'linked to the create');
      const linked = await otlp.waitFor((s) => s.spanId === link.spanId);
      const server = otlp.spans.find((s) => s.traceId === traceId && s.kind === SERVER)!;
      assert.ok(linked === server || descendants(otlp.spans, server).includes(linked), 'the link points into the create request');
    });

    test('when PATCHes of two accounts share a batch, then each account\'s webhook deliveries carry its own requests\' traces, never the other\'s', async () => {
      const owners: Array<{ key: string; receiver: Receiver; traceIds: Set<string> }> = [];
      for (const name of ['Trace A', 'Trace B']) {
        const { key } = await createAccountWithKey(env, name);
        const receiver = await startReceiver();
        owners.push({ key, receiver, traceIds: new Set() });
        await registerEndpoint(serve.url, key, receiver.url);
        assert.equal((await httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).status, 201);
      }
      try {
        // Two requests sent at once mostly land in one event-loop turn, so in one PATCH batch.
        for (let round = 0; round < 10; round++) {
          const answers = await Promise.all(owners.map(({ key, traceIds }) => {
            const [header, traceId] = traceparent();
            traceIds.add(traceId);
            return httpRequest(serve.url, 'PATCH', '/v1/pets/1', { key, body: { name: `Rex ${round}` }, headers: { traceparent: header } });
          }));
          assert.deepEqual(answers.map((a) => a.status), [200, 200]);
        }
        for (const { receiver, traceIds } of owners) {
          const updates = () => receiver.received.filter((r) => JSON.parse(r.body).type === 'pet.updated');
          await eventually(async () => (updates().length >= 10 ? true : undefined), 10_000, 'ten pet.updated deliveries');
          for (const delivery of updates()) {
            const sent = /^00-([0-9a-f]{32})-/.exec(String(delivery.headers.traceparent));
            assert.ok(sent && traceIds.has(sent[1]!), `a delivery of ${JSON.parse(delivery.body).data.object.name} carries ${delivery.headers.traceparent}, not one of its own account's request traces`);
          }
        }
      } finally {
        for (const { receiver } of owners) await receiver.close();
      }
    });

    test('when a message is sent, then its delivery links back to the POST /messages that queued it', async () => {
      const [header, traceId] = traceparent();
      const sent = await httpRequest(serve.url, 'POST', '/example/v1/messages', { key: account.key, body: { message: 'hi' }, headers: { traceparent: header } });
      assert.equal(sent.status, 202);
      const delivery = await otlp.waitFor((s) => s.name === 'message delivery' && s.links.some((l) => l.traceId === traceId));
      assert.equal(delivery.traceId, traceId);
    });

    test('when a GET is answered by the fast path, then it has its server span too', async () => {
      // A verified key is remembered 900 ms: on a slow machine a request may need Fastify again.
      let traceId = '';
      let byFastPath = false;
      for (let attempt = 0; attempt < 4 && !byFastPath; attempt++) {
        await httpRequest(serve.url, 'GET', '/v1/pets?limit=5', { key: account.key });
        const before = await fastPathAnswers(serve);
        const [header, id] = traceparent();
        traceId = id;
        const listed = await httpRequest(serve.url, 'GET', '/v1/pets?limit=5', { key: account.key, headers: { traceparent: header } });
        assert.equal(listed.status, 200);
        byFastPath = (await fastPathAnswers(serve)) === before + 1;
      }
      assert.ok(byFastPath, 'the fast path answered it');
      const server = await otlp.waitFor((s) => s.traceId === traceId && s.kind === SERVER);
      assert.equal(server.attributes['http.route'], '/v1/pets');
      assert.equal(server.attributes['url.path'], '/v1/pets', 'the query string is not url.path');
      assert.equal(server.attributes['http.response.status_code'], 200);
      assert.equal(server.attributes['petstore.account_id'], account.accountId);
    });

    test('when /metrics is scraped as OpenMetrics, then the latency histogram carries trace-id exemplars', async () => {
      const [header, traceId] = traceparent();
      await httpRequest(serve.url, 'GET', '/v1/store/inventory', { key: account.key, headers: { traceparent: header } });
      const open = await httpRequest(serve.url, 'GET', '/metrics', { headers: { accept: 'application/openmetrics-text; version=1.0.0' } });
      assert.match(String(open.headers['content-type']), /^application\/openmetrics-text/);
      const text = String(open.body);
      assert.match(text, new RegExp(`^petstore_http_request_duration_seconds_bucket\\{[^}]*route="/v1/store/inventory"[^}]*\\} \\d+ # \\{trace_id="${traceId}"\\}`, 'm'));
      assert.match(text, /^petstore_http_requests_total\{/m);
      assert.match(text, /# EOF\n$/);
      const plain = String((await httpRequest(serve.url, 'GET', '/metrics')).body);
      assert.doesNotMatch(plain, /trace_id=/, 'the Prometheus text has no exemplars');
      assert.match(plain, /^petstore_http_requests_total\{/m, 'counter names unchanged');
    });
  });
}

async function fastPathAnswers(serve: ServerProcess): Promise<number> {
  const text = String((await httpRequest(serve.url, 'GET', '/metrics')).body);
  return Number(/^petstore_fast_path_responses_total (\d+)$/m.exec(text)?.[1] ?? 0);
}

describe('tracing switches (sqlite)', () => {
  let otlp: OtlpReceiver;
  const cleanup: Array<() => Promise<unknown>> = [];
  before(async () => {
    otlp = await startOtlpReceiver();
  });
  after(async () => {
    for (const step of cleanup.reverse()) await step();
    await otlp?.close();
  });

  async function start(extra: Record<string, string>): Promise<{ serve: ServerProcess; key: string }> {
    const database = await sqliteBackend.createDatabase();
    cleanup.push(database.drop);
    const env = { PETSTORE_DATABASE_URL: database.url };
    const serve = await startServerProcess({ ...env, ...extra });
    cleanup.push(() => serve.stop('SIGKILL'));
    return { serve, key: (await createAccountWithKey(env)).key };
  }

  test('when the sampler is off, then no span is exported and the answers are the same', async () => {
    const { serve, key } = await start({ ...TRACE_ENV(otlp, 'http/protobuf'), OTEL_SERVICE_NAME: 'petstore-off', OTEL_TRACES_SAMPLER: 'always_off' });
    const [header] = traceparent();
    const created = await httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 }, headers: { traceparent: header } });
    assert.equal(created.status, 201);
    assert.deepEqual(created.body, { id: 1, name: 'Rex', categoryId: 1 });
    assert.equal((await httpRequest(serve.url, 'GET', '/v1/pets/1', { key })).status, 200);
    await sleep(500);
    assert.equal(otlp.spans.filter((s) => s.resource['service.name'] === 'petstore-off').length, 0);
  });

  test('when the sampler drops a request (parent-based, its traceparent unsampled), then nothing of it is exported: no hook, statement, Redis or batch span, no trace of its own; a sampled one beside it is whole', async () => {
    const redis: Record<string, string> = process.env.PETSTORE_TEST_REDIS_URL ? { PETSTORE_REDIS_URL: process.env.PETSTORE_TEST_REDIS_URL } : {};
    const { serve, key } = await start({ ...TRACE_ENV(otlp, 'http/json'), OTEL_SERVICE_NAME: 'petstore-ratio', OTEL_BSP_SCHEDULE_DELAY: '50', ...redis });
    const [, dropped] = traceparent();
    const unsampled = `00-${dropped}-${hex(8)}-00`;
    // Several at once: they share group-commit batches, as a sampled one may too.
    const [header, kept] = traceparent();
    const answers = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: `D${i}`, categoryId: 1 }, headers: { traceparent: unsampled } })),
      httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: 'Kept', categoryId: 1 }, headers: { traceparent: header } }),
      httpRequest(serve.url, 'GET', '/v1/pets?limit=5', { key, headers: { traceparent: unsampled } }),
    ]);
    assert.deepEqual(answers.map((a) => a.status), [201, 201, 201, 201, 201, 201, 201, 200]);
    await otlp.waitFor((s) => s.traceId === kept && s.name === 'POST /v1/pets');
    await sleep(300);
    const mine = otlp.spans.filter((s) => s.resource['service.name'] === 'petstore-ratio');
    assert.deepEqual([...new Set(mine.map((s) => s.traceId))], [kept], `traces: ${mine.map((s) => `${s.traceId.slice(0, 6)} ${s.name}`).join(', ')}`);
    assert.ok(mine.some((s) => s.name.startsWith('INSERT') || s.name === 'group commit'), 'the sampled create has its store spans');
  });

  test('when sampled requests are answered or refused beside dropped ones, then @fastify/otel ends each sampled request span with its status (error when refused) and the dropped ones leave nothing', async () => {
    const { serve, key } = await start({ ...TRACE_ENV(otlp, 'http/json'), OTEL_SERVICE_NAME: 'petstore-fastify' });
    const [okHeader, okTrace] = traceparent();
    const [badHeader, badTrace] = traceparent();
    const unsampled = `00-${hex(16)}-${hex(8)}-00`;
    const answers = await Promise.all([
      httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 }, headers: { traceparent: okHeader } }),
      httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: '', categoryId: 1 }, headers: { traceparent: badHeader } }),
      httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: 'Dropped', categoryId: 1 }, headers: { traceparent: unsampled } }),
      httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { categoryId: 1 }, headers: { traceparent: unsampled } }),
    ]);
    assert.deepEqual(answers.map((a) => a.status), [201, 400, 201, 400]);
    const requestSpan = (traceId: string) => otlp.waitFor((s) => s.traceId === traceId && s.attributes['fastify.root'] === '@fastify/otel');
    const ok = await requestSpan(okTrace);
    assert.equal(ok.attributes['http.response.status_code'], 201);
    assert.notEqual(ok.status, ERROR);
    assert.ok(otlp.spans.some((s) => s.parentSpanId === ok.spanId && s.attributes['fastify.type'] === 'request-handler'), 'the handler span is under the request span');
    const bad = await requestSpan(badTrace);
    assert.equal(bad.attributes['http.response.status_code'], 400);
    assert.equal(bad.status, ERROR, 'the refusal went through its onError hook');
    await sleep(300);
    const mine = otlp.spans.filter((s) => s.resource['service.name'] === 'petstore-fastify');
    assert.deepEqual([...new Set(mine.map((s) => s.traceId))].sort(), [okTrace, badTrace].sort());
  });

  test('when the fast path hands dropped requests to Fastify in the turn it answers a sampled one, then each sampled trace holds its own spans only', async () => {
    const { serve, key } = await start({ ...TRACE_ENV(otlp, 'http/json'), OTEL_SERVICE_NAME: 'petstore-turn', OTEL_BSP_SCHEDULE_DELAY: '50' });
    assert.equal((await httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).status, 201);
    // Fills the key's and the page's caches: the sampled reads below are the fast path's own answers.
    assert.equal((await httpRequest(serve.url, 'GET', '/v1/pets?limit=5', { key })).status, 200);
    const kept: string[] = [];
    for (let round = 0; round < 8; round++) {
      const [header, traceId] = traceparent();
      kept.push(traceId);
      const unsampled = `00-${hex(16)}-${hex(8)}-00`;
      // A bad cursor is taken by the fast path and handed to Fastify, which refuses it (400).
      const answers = await Promise.all([
        httpRequest(serve.url, 'GET', '/v1/pets?limit=5', { key, headers: { traceparent: header } }),
        ...Array.from({ length: 6 }, () => httpRequest(serve.url, 'GET', '/v1/pets?limit=5&cursor=bogus', { key, headers: { traceparent: unsampled } })),
      ]);
      assert.deepEqual(answers.map((a) => a.status), [200, 400, 400, 400, 400, 400, 400]);
    }
    for (const traceId of kept) await otlp.waitFor((s) => s.traceId === traceId && s.kind === SERVER);
    await sleep(300);
    const mine = otlp.spans.filter((s) => s.resource['service.name'] === 'petstore-turn');
    for (const traceId of kept) {
      // Its own spans only: one server span, and Fastify's when the fast path handed it over too (the key's cache entry dropped or due for a check).
      const spans = mine.filter((s) => s.traceId === traceId);
      const shown = spans.map((s) => `${s.name} ${String(s.attributes['http.response.status_code'])}`).join(', ');
      assert.equal(spans.filter((s) => s.kind === SERVER).length, 1, shown);
      assert.ok(spans.filter((s) => s.name === 'request').length <= 1, shown);
      assert.deepEqual([...new Set(spans.map((s) => s.attributes['http.response.status_code']).filter((code) => code !== undefined))], [200], shown);
    }
  });

  test('when a trace-id ratio decides new traces, then exactly the requests whose logged trace id the ratio keeps are exported, and the dropped ones still log their ids', async () => {
    const { serve, key } = await start({
      ...TRACE_ENV(otlp, 'http/json'), OTEL_SERVICE_NAME: 'petstore-half', OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5',
    });
    // Fastify's routes and the fast path's both (a POST, a GET it answers from its cache).
    for (let i = 0; i < 20; i++) {
      assert.equal((await httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: `H${i}`, categoryId: 1 } })).status, 201);
      assert.equal((await httpRequest(serve.url, 'GET', '/v1/pets/1', { key })).status, 200);
    }
    const urlOf = (l: Record<string, unknown>) => (l.req as { url?: string } | undefined)?.url;
    const completed = () => serve.logs().filter((l) => l.msg === 'request completed' && (urlOf(l) === '/v1/pets' || urlOf(l) === '/v1/pets/1'));
    await serve.waitForLog(() => completed().length >= 40);
    const lines = completed();
    assert.equal(lines.length, 40);
    for (const line of lines) {
      assert.match(String(line.trace_id), /^[0-9a-f]{32}$/);
      assert.match(String(line.span_id), /^[0-9a-f]{16}$/);
    }
    const ratio = new TraceIdRatioBasedSampler(0.5);
    const keeps = (traceId: string) => ratio.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
    const kept = lines.filter((l) => keeps(String(l.trace_id)));
    // 40 draws at one half: at least one of each, but for a chance of 2 in 10¹².
    assert.ok(kept.length > 0 && kept.length < 40, `kept ${kept.length} of 40`);
    for (const line of kept) await otlp.waitFor((s) => s.traceId === line.trace_id && s.kind === SERVER);
    await sleep(300);
    const servers = otlp.spans.filter((s) => s.resource['service.name'] === 'petstore-half' && s.kind === SERVER);
    assert.deepEqual(new Set(servers.map((s) => s.traceId)), new Set(kept.map((l) => String(l.trace_id))));
    for (const line of kept) assert.equal(servers.find((s) => s.traceId === line.trace_id)!.spanId, line.span_id, 'a kept request logs its server span');
  });

  test('when the collector is down, then requests are unaffected and the lost spans are counted, within a bounded queue', async () => {
    // Silent rather than refusing: one export at a time, each held 500 ms, so the queue of 16 overflows
    // however slowly the machine serves the 40 requests (a refused export drained it at once).
    const collector = await silentServer();
    cleanup.push(collector.close);
    const { serve, key } = await start({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_BSP_MAX_QUEUE_SIZE: '16', OTEL_EXPORTER_OTLP_TIMEOUT: '500' });
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: `P${i}`, categoryId: 1 } })));
    assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([201]));
    assert.ok(Date.now() - started < 10_000, 'never waits for the collector');
    let text = '';
    for (let i = 0; i < 100; i++) {
      text = String((await httpRequest(serve.url, 'GET', '/metrics')).body);
      if (/^petstore_tracing_spans_dropped_total\{reason="export_failed"\} [1-9]/m.test(text)) break;
      await sleep(100);
    }
    assert.match(text, /^petstore_tracing_spans_dropped_total\{reason="export_failed"\} [1-9]/m);
    assert.match(text, /^petstore_tracing_spans_dropped_total\{reason="queue_full"\} [1-9]/m, '40 requests of many spans each overflow a queue of 16');
  });

  test('when SIGTERM arrives, then the spans still queued are exported before the process exits (a 503 while draining with error status)', async () => {
    // A schedule delay far beyond the test: only the shutdown's flush can send them.
    const { serve, key } = await start({
      ...TRACE_ENV(otlp, 'http/protobuf'), OTEL_BSP_SCHEDULE_DELAY: '600000', OTEL_SERVICE_NAME: 'petstore-flush', PETSTORE_SHUTDOWN_DELAY_MS: '400',
    });
    const [header, traceId] = traceparent();
    assert.equal((await httpRequest(serve.url, 'GET', '/v1/store/inventory', { key, headers: { traceparent: header } })).status, 200);
    await sleep(200);
    assert.equal(otlp.spans.filter((s) => s.traceId === traceId).length, 0, 'nothing exported yet');
    const exited = new Promise<number | null>((resolve) => serve.child.once('exit', resolve));
    serve.child.kill('SIGTERM');
    await serve.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('draining'));
    const [drainHeader, drainTrace] = traceparent();
    assert.equal((await httpRequest(serve.url, 'GET', '/readyz', { headers: { traceparent: drainHeader } })).status, 503);
    assert.equal(await exited, 0);
    const server = otlp.spans.find((s) => s.traceId === traceId && s.kind === SERVER);
    assert.ok(server, 'the server span was flushed');
    assert.equal(server.resource['service.name'], 'petstore-flush');
    const refused = otlp.spans.find((s) => s.traceId === drainTrace && s.kind === SERVER);
    assert.ok(refused, 'the 503 was flushed too');
    assert.equal(refused.attributes['http.response.status_code'], 503);
    assert.equal(refused.status, ERROR, '5xx: error status');
  });
});
