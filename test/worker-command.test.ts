// `petstore worker`: the background workers in a process of their own, as real processes on both
// stores. `serve` runs with its workers off; messages and webhook deliveries created through it
// are delivered by the worker process, which answers /metrics, /healthz and /readyz on its own
// port (and no API), and exits 0 on SIGTERM.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends } from './helpers/backends.js';
import { cli, createAccountWithKey, httpRequest, type ServerProcess, startServerProcess } from './helpers/process.js';
import { type Receiver, registerEndpoint, startReceiver, WEBHOOK_ENV } from './helpers/webhooks.js';

/** One sample of a metric (without labels, or with exactly `labels`), 0 when absent. */
function sample(text: string, name: string, labels = ''): number {
  const escaped = `${name}${labels}`.replace(/[{}"]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
}

async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, `${what}: not within ${timeoutMs} ms`);
    await sleep(100);
  }
}

for (const backend of backends) {
  describe(`petstore worker (${backend.name})`, () => {
    let drop: () => Promise<void>;
    let serve: ServerProcess;
    let worker: ServerProcess;
    let receiver: Receiver;
    let env: Record<string, string>;

    before(async () => {
      const database = await backend.createDatabase();
      drop = database.drop;
      env = { PETSTORE_DATABASE_URL: database.url, ...WEBHOOK_ENV };
      serve = await startServerProcess({ ...env, PETSTORE_MESSAGE_WORKER: 'false', PETSTORE_WEBHOOK_WORKER: 'false' });
      worker = await startServerProcess({ ...env, PETSTORE_WORKER_PORT: '0' }, [], { command: 'worker' });
      receiver = await startReceiver();
    });
    after(async () => {
      await serve?.stop('SIGKILL');
      await worker?.stop('SIGKILL');
      await receiver?.close();
      await drop?.();
    });

    test('when a message is sent through serve, then the worker process delivers it (serve delivers nothing)', async () => {
      const { key } = await createAccountWithKey(env);
      const sent = await httpRequest(serve.url, 'POST', '/example/v1/messages', { key, body: { message: 'Hello from serve' } });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      const { id } = sent.body as { id: string };
      const delivered = await eventually('the message is delivered', async () => {
        const res = await httpRequest(serve.url, 'GET', `/example/v1/messages/${id}`, { key });
        return (res.body as { status: string }).status === 'delivered' ? res.body : undefined;
      });
      assert.equal((delivered as { message: string }).message, 'Hello from serve');
      const workerMetrics = (await httpRequest(worker.url, 'GET', '/metrics')).body as string;
      assert.equal(sample(workerMetrics, 'petstore_messages_delivered_total'), 1, 'the worker process delivered it');
      const serveMetrics = (await httpRequest(serve.url, 'GET', '/metrics')).body as string;
      assert.equal(sample(serveMetrics, 'petstore_messages_delivered_total'), 0, 'serve runs no message worker');
    });

    test('when a pet is created through serve with an endpoint registered, then the worker process delivers the event to the receiver', async () => {
      const { key } = await createAccountWithKey(env);
      await registerEndpoint(serve.url, key, receiver.url);
      const created = await httpRequest(serve.url, 'POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      await eventually('the receiver gets the delivery', async () => (receiver.received.length >= 1 ? true : undefined));
      const event = JSON.parse(receiver.received[0]!.body) as { type: string; data: { object: { id: number; name: string } } };
      assert.equal(event.type, 'pet.created');
      assert.deepEqual([event.data.object.id, event.data.object.name], [(created.body as { id: number }).id, 'Rex']);
      const workerMetrics = await eventually('the attempt is counted', async () => {
        const text = (await httpRequest(worker.url, 'GET', '/metrics')).body as string;
        return sample(text, 'petstore_webhook_attempts_total', '{outcome="succeeded"}') === 1 ? text : undefined;
      });
      assert.match(workerMetrics, /^petstore_webhook_attempt_duration_seconds_count 1$/m);
      const serveMetrics = (await httpRequest(serve.url, 'GET', '/metrics')).body as string;
      assert.equal(sample(serveMetrics, 'petstore_webhook_attempts_total', '{outcome="succeeded"}'), 0, 'serve runs no webhook worker');
    });

    test("when the worker's port is asked, then it answers /healthz, /readyz and /metrics, and no API", async () => {
      assert.notEqual(new URL(worker.url).port, new URL(serve.url).port);
      const health = await httpRequest(worker.url, 'GET', '/healthz');
      assert.deepEqual([health.status, health.body], [200, { status: 'ok' }]);
      const ready = await httpRequest(worker.url, 'GET', '/readyz');
      // On PostgreSQL without PETSTORE_SECRET_KEY it also names the plain-text secrets (details).
      assert.deepEqual([ready.status, (ready.body as { status: string }).status], [200, 'ready']);
      const metrics = await httpRequest(worker.url, 'GET', '/metrics');
      assert.equal(metrics.status, 200);
      assert.match(metrics.body as string, /^petstore_message_queue_depth 0$/m);
      for (const path of ['/v1/pets', '/example/v1/messages', '/v1/openapi.json', '/docs']) {
        const res = await httpRequest(worker.url, 'GET', path);
        assert.equal(res.status, 404, `${path} is not served by the worker`);
      }
    });

    test('when the worker gets SIGTERM, then it finishes and exits 0', async () => {
      const code = await worker.stop('SIGTERM');
      assert.equal(code, 0, worker.output() + worker.errors());
      const logs = worker.logs();
      assert.ok(logs.some((l) => l.msg === 'shutting down: finishing the work in hand'));
      // The lines around the end, should it fail (once under CI's load: a 'request completed' last).
      const tail = JSON.stringify(logs.slice(-5).map((l) => [l.msg, l.reqId, (l.req as { url?: string } | undefined)?.url]));
      assert.equal(logs.at(-1)?.msg, 'shut down cleanly', `the last lines: ${tail}`);
    });
  });
}

describe('petstore worker, refused', { concurrency: true }, () => {
  test('when both workers are switched off, then it refuses to start (exit 1) and says why', async () => {
    const result = await cli(['worker'], { PETSTORE_DATABASE_URL: ':memory:', PETSTORE_MESSAGE_WORKER: 'false', PETSTORE_WEBHOOK_WORKER: 'false' }, { timeoutMs: 20_000 });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^petstore: `petstore worker` has nothing to run: PETSTORE_MESSAGE_WORKER and PETSTORE_WEBHOOK_WORKER are both false\.\n$/);
  });

  test('when --workers is given, then it is a usage error (exit 2)', async () => {
    const result = await cli(['worker', '--workers', '2'], { PETSTORE_DATABASE_URL: ':memory:' }, { timeoutMs: 20_000 });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--workers is an option of `petstore serve` only/);
  });

  test('when PETSTORE_WORKER_PORT is not a port, then it refuses to start naming the variable', async () => {
    const result = await cli(['worker'], { PETSTORE_DATABASE_URL: ':memory:', PETSTORE_WORKER_PORT: '70000' }, { timeoutMs: 20_000 });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /PETSTORE_WORKER_PORT must be an integer from 0 to 65535, got "70000"/);
  });
});
