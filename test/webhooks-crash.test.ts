// Webhook deliveries across process deaths, with real `petstore serve` processes and a real
// receiver in this process. SIGKILL with deliveries in flight: after the restart every event
// is received, the ones cut off are sent again with the same webhook-id and body (at least
// once), all deliveries succeed. SIGTERM: the attempts in hand finish and are recorded, so
// nothing is received twice. Two instances on one PostgreSQL database and a --workers 2
// cluster on SQLite drain a backlog with each event received exactly once.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Backend, backends, postgresBackend, sqliteBackend } from './helpers/backends.js';
import { createFixture, type Fixture, killAndDrop, type ServerChild, startServer } from './helpers/durability.js';
import { startServerProcess } from './helpers/process.js';
import { eventually } from './helpers/receiver.js';
import { checkReceived, createPets, listDeliveries, listEvents, type Receiver, registerEndpoint, startReceiver, WEBHOOK_ENV } from './helpers/webhooks.js';

/**
 * Waits until the endpoint has `count` deliveries, none pending, and checks they all succeeded;
 * fails after timeoutMs. Deliveries appear only once the worker has fanned the events out, so
 * "none pending" alone would also hold before the first fan-out.
 */
async function drained(url: string, key: string, endpointId: string, count: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let all: Awaited<ReturnType<typeof listDeliveries>>;
  for (;;) {
    all = await listDeliveries(url, key, endpointId);
    const pending = all.filter((d) => d.status === 'pending').length;
    if (all.length >= count && pending === 0) break;
    assert.ok(Date.now() < deadline, `${all.length} of ${count} deliveries made, ${pending} still pending after ${timeoutMs} ms`);
    await sleep(250);
  }
  assert.equal(all.length, count, 'one delivery per event');
  const notSucceeded = all.filter((d) => d.status !== 'succeeded');
  assert.deepEqual(notSucceeded, [], 'every delivery succeeded');
}

/** Resolves once the receiver has `count` requests; fails after timeoutMs. */
async function receivedAtLeast(receiver: Receiver, count: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (receiver.received.length < count) {
    assert.ok(Date.now() < deadline, `only ${receiver.received.length} of ${count} deliveries received after ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** petstore_webhook_attempts_total{outcome="succeeded"} of one server (a cluster's sums its workers'). */
async function succeededAttempts(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^petstore_webhook_attempts_total\{outcome="succeeded"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

/**
 * A backlog: `count` pets (one pet.created event each) made through a server whose webhook
 * worker is off, with one endpoint (to `receiver`) registered first. The server is stopped.
 */
async function backlog(fixture: Fixture, receiver: Receiver, count: number): Promise<{ endpoint: { id: string; secret: string } }> {
  const server = await startServer({ ...fixture.env, ...WEBHOOK_ENV, PETSTORE_WEBHOOK_WORKER: 'false' });
  try {
    const endpoint = await registerEndpoint(server.url, fixture.key, receiver.url);
    await createPets(server.url, fixture.key, count);
    return { endpoint };
  } finally {
    server.kill('SIGTERM');
    await server.exited;
  }
}

const SLOW_EVENTS = 300;

/**
 * A backlog of SLOW_EVENTS events for an endpoint whose receiver answers in 300 ms, then a
 * server with its worker on; resolves once 40 deliveries arrived and one is in flight (16 at once).
 */
async function slowDeliveriesInFlight(t: TestContext, backend: Backend, extraEnv: Record<string, string> = {}) {
  const fixture = await createFixture(backend);
  const receiver = await startReceiver({ delayMs: 300 });
  const env = { ...fixture.env, ...WEBHOOK_ENV, ...extraEnv };
  const state: { server: ServerChild | undefined } = { server: undefined };
  t.after(async () => {
    await receiver.close();
    await killAndDrop(fixture, state.server);
  });
  const { endpoint } = await backlog(fixture, receiver, SLOW_EVENTS);
  state.server = await startServer(env);
  await receivedAtLeast(receiver, 40, 20_000);
  // Between two batches nothing is in flight, and a kill there would cut nothing off.
  await eventually(async () => receiver.received.some((r) => !r.answered) || undefined, 20_000, 'a delivery received and not yet answered');
  return { fixture, receiver, env, endpoint, state };
}

// Three at a time: more starve a two-core machine until attempts time out (and are repeated).
describe('webhook deliveries across process deaths', { concurrency: 3 }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when the server is killed with deliveries in flight, then after the restart every event is received, repeats carry the same webhook-id and body, and every delivery succeeds`, { timeout: 160_000 }, async (t) => {
      const { fixture, receiver, env, endpoint, state } = await slowDeliveriesInFlight(t, backend);
      // Received and not answered when the kill is sent (no turn between the two: the receiver runs
      // here): the process dies without their answers, so nothing recorded them. Read after the exit,
      // a loaded machine's receiver had answered them all meanwhile (CI, once).
      const cutOff = receiver.received.filter((r) => !r.answered).map((r) => r.id);
      state.server!.kill('SIGKILL');
      await state.server!.exited;
      const beforeRestart = receiver.received.length;
      assert.ok(cutOff.length > 0 && beforeRestart < SLOW_EVENTS, `the kill cut deliveries off (${cutOff.length} unanswered, ${beforeRestart} received)`);

      state.server = await startServer(env);
      // Jobs leased by the dead process come due when their lease (2 × 3 s + 10 s) ends.
      await drained(state.server.url, fixture.key, endpoint.id, SLOW_EVENTS, 50_000);
      const events = await listEvents(state.server.url, fixture.key);
      assert.equal(events.length, SLOW_EVENTS);
      const repeats = checkReceived(receiver.received, events, endpoint.secret);
      const counts = new Map<string, number>();
      for (const r of receiver.received) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
      for (const id of cutOff) assert.ok(counts.get(id)! >= 2, `${id}, cut off by the kill, was sent again`);
      t.diagnostic(`${backend.name}: ${beforeRestart} received before the kill (${cutOff.length} unanswered); ${receiver.received.length} received in all, ${repeats} repeats; all ${SLOW_EVENTS} succeeded`);
    });

    it(`${backend.name}: when SIGTERM arrives with deliveries in flight, then the process exits 0 having recorded them, and after the restart no event is received twice`, { timeout: 160_000 }, async (t) => {
      // A long attempt timeout: on a loaded machine a 300 ms answer must not turn into a timeout
      // (which would end the attempt without its answer, and repeat it after the restart).
      const { fixture, receiver, env, endpoint, state } = await slowDeliveriesInFlight(t, backend, { PETSTORE_WEBHOOK_TIMEOUT_MS: '15000' });
      const inFlight = receiver.received.filter((r) => !r.answered);
      assert.ok(inFlight.length > 0, 'deliveries are in flight at SIGTERM');
      state.server!.kill('SIGTERM');
      const exit = await state.server!.exited;
      assert.equal(exit.code, 0, `exit ${exit.code ?? exit.signal}: ${state.server!.messages.slice(-5).join(' | ')}`);
      assert.deepEqual(inFlight.filter((r) => !r.answered).map((r) => r.id), [], 'the attempts in flight were answered before the process exited');
      const beforeRestart = receiver.received.length;

      state.server = await startServer(env);
      // Claimed deliveries the worker had not started are left leased: they come back after the lease.
      await drained(state.server.url, fixture.key, endpoint.id, SLOW_EVENTS, 50_000);
      const events = await listEvents(state.server.url, fixture.key);
      assert.equal(checkReceived(receiver.received, events, endpoint.secret), 0, 'no repeats');
      assert.equal(receiver.received.length, SLOW_EVENTS, 'each event received exactly once');
      t.diagnostic(`${backend.name}: ${inFlight.length} in flight at SIGTERM; ${beforeRestart} received before the restart, ${SLOW_EVENTS} in all, each once`);
    });
  }

  it('postgres: when two instances share one database and drain 1000 events to one endpoint, then both take work and each event is received exactly once', { skip: backends.includes(postgresBackend) ? false : 'set PETSTORE_TEST_POSTGRES_URL', timeout: 160_000 }, async (t) => {
    const fixture = await createFixture(postgresBackend);
    // 50 ms an answer: one instance alone needs 3 s or more (16 at once), so both get work however far apart they start.
    const receiver = await startReceiver({ delayMs: 50 });
    const servers: ServerChild[] = [];
    t.after(async () => {
      for (const server of servers) server.kill('SIGKILL');
      await Promise.all(servers.map((s) => s.exited));
      await receiver.close();
      await fixture.drop();
    });
    const { endpoint } = await backlog(fixture, receiver, 1000);
    assert.equal(receiver.received.length, 0, 'nothing is delivered while the worker is off');
    const started = Date.now();
    const env = { ...fixture.env, ...WEBHOOK_ENV };
    servers.push(...(await Promise.all([startServer(env), startServer(env)])));
    await drained(servers[0]!.url, fixture.key, endpoint.id, 1000, 50_000);
    const took = Date.now() - started;
    const events = await listEvents(servers[0]!.url, fixture.key);
    assert.equal(checkReceived(receiver.received, events, endpoint.secret), 0, 'no webhook-id received twice');
    assert.equal(receiver.received.length, 1000);
    const counts = await Promise.all(servers.map((s) => succeededAttempts(s.url)));
    assert.equal(counts[0]! + counts[1]!, 1000, `succeeded attempts by each: ${counts.join(' + ')}`);
    assert.ok(counts.every((n) => n > 0), `both instances took work: ${counts.join(' + ')}`);
    t.diagnostic(`1000 events drained by two instances in ${took} ms (${counts.join(' + ')}), each received once`);
  });

  it('sqlite: when a --workers 2 cluster drains 300 events to one endpoint, then each event is received exactly once', { timeout: 160_000 }, async (t) => {
    const fixture = await createFixture(sqliteBackend);
    const receiver = await startReceiver();
    let stop: (() => Promise<unknown>) | undefined;
    t.after(async () => {
      await stop?.();
      await receiver.close();
      await fixture.drop();
    });
    const { endpoint } = await backlog(fixture, receiver, 300);
    const started = Date.now();
    const cluster = await startServerProcess({ ...fixture.env, ...WEBHOOK_ENV }, ['--workers', '2']);
    stop = () => cluster.stop('SIGKILL');
    await drained(cluster.url, fixture.key, endpoint.id, 300, 50_000);
    const took = Date.now() - started;
    const events = await listEvents(cluster.url, fixture.key);
    assert.equal(checkReceived(receiver.received, events, endpoint.secret), 0, 'no webhook-id received twice');
    assert.equal(receiver.received.length, 300);
    // The cluster's /metrics sums its workers' counters: an event sent twice would count twice.
    assert.equal(await succeededAttempts(cluster.url), 300);
    t.diagnostic(`300 events drained by a 2-worker cluster in ${took} ms, each received once`);
  });
});
