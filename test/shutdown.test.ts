// Graceful shutdown under load: SIGTERM a real server process (the built dist/) while 32
// clients POST /v1/pets over keep-alive connections and a few clients are still sending
// their request bodies, then restart it on the same store.
//
// - Every request the server accepted (Node's HTTP server parsed its headers and handed it
//   to the app; traced in the child through a diagnostics channel) gets a complete response:
//   a 201 or an Error {code, message, status} as documented. Requests the server never
//   accepted may fail at the connection (refused once the port is closed, or reset when sent
//   on a keep-alive connection the server closed as idle): those are counted, and allowed.
//   Pipelined requests too: one queued behind a request in flight at SIGTERM is answered.
// - Nothing acknowledged is lost: every 201 pet is there after the restart, exactly.
// - The process exits 0 within PETSTORE_SHUTDOWN_TIMEOUT_MS, even though the clients keep
//   their keep-alive connections open once answered.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { backends } from './helpers/backends.js';
import {
  checkStoreIntegrity,
  createFixture,
  type Fixture,
  killAndDrop,
  type Outcome,
  parseResponses,
  petFor,
  postPet,
  type RawResponse,
  rawPostPet,
  type Sent,
  type ServerChild,
  startLoad,
  startServer,
  verifyPets,
} from './helpers/durability.js';
import { createOpenApiChecker, type OpenApiDocument } from './helpers/openapi.js';

const CONCURRENCY = 32;
const SLOW_CLIENTS = 4;
const SHUTDOWN_TIMEOUT_MS = 5000;
/** The slow clients send the rest of their bodies this long after SIGTERM. */
const BODY_DELAY_MS = 300;

type RawRequest = ReturnType<typeof rawPostPet>;
interface PipelineSteps {
  /** Writes to the connection before SIGTERM; resolves when the server has what it needs. */
  beforeSignal(write: (data: string) => void, first: RawRequest, second: RawRequest): Promise<void>;
  /** Runs BODY_DELAY_MS after SIGTERM. */
  afterSignal(write: (data: string) => void, first: RawRequest, second: RawRequest): Promise<void>;
}

/** Two requests pipelined on one connection (the second sent before the first is answered) across SIGTERM. */
async function pipelined(t: TestContext, fixture: Fixture, server: ServerChild, names: [string, string], steps: PipelineSteps) {
  const pets = names.map((name, i) => petFor(name, i + 1));
  const [first, second] = names.map((name, i) => rawPostPet(fixture.key, name, pets[i]!)) as [RawRequest, RawRequest];
  const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  let socketError: string | undefined;
  socket.on('error', (error: NodeJS.ErrnoException) => (socketError = error.code ?? error.message));
  const closed = once(socket, 'close');
  t.after(() => socket.destroy());
  await once(socket, 'connect');
  const write = (data: string) => socket.write(data);
  await steps.beforeSignal(write, first, second);
  const signalledAt = performance.now();
  server.kill('SIGTERM');
  await sleep(BODY_DELAY_MS);
  await steps.afterSignal(write, first, second);
  await closed;
  const exit = await server.exited;
  const responses = parseResponses(Buffer.concat(chunks));
  return { pets, responses, exit, exitMs: Math.round(exit.at - signalledAt), socketError };
}

/** The outcomes of pipelined requests, in order, for verifyPets. */
function pipelinedSent(names: string[], pets: ReturnType<typeof petFor>[], responses: RawResponse[]): Map<string, Sent> {
  return new Map(
    names.map((name, i): [string, Sent] => {
      const res = responses[i];
      const outcome: Outcome = res
        ? { kind: 'response', status: res.status, contentType: res.headers['content-type'] ?? null, connection: res.headers.connection, text: res.text, body: res.body }
        : { kind: 'error', code: 'NO_RESPONSE', message: 'no response before the connection closed', connected: true, responseStarted: false };
      return [name, { pet: pets[i]!, outcome }];
    }),
  );
}

for (const backend of backends) {
  describe(`${backend.name}: SIGTERM under write load`, () => {
    it('when SIGTERM arrives under load, then every accepted request is answered in full, every 201 is kept, and the process exits 0 in time', { timeout: 120_000 }, async (t) => {
      const fixture = await createFixture(backend);
      let server: ServerChild | undefined;
      t.after(() => killAndDrop(fixture, server));
      server = await startServer({ ...fixture.env, PETSTORE_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) });
      const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as OpenApiDocument;
      const check = createOpenApiChecker(doc);

      // Load over keep-alive connections; a worker stops once connections are refused.
      const loadAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
      const load = startLoad(server.url, fixture.key, {
        concurrency: CONCURRENCY,
        prefix: `${backend.name}-sd`,
        agent: loadAgent,
        stopOn: (outcome) => outcome.kind === 'error' && outcome.code === 'ECONNREFUSED',
      });
      // Slow clients: headers and half the body now, the rest after SIGTERM. Their keep-alive
      // agent then keeps the connections open and idle, as a load balancer's pool would.
      const slowAgent = new http.Agent({ keepAlive: true });
      let releaseBodies: () => void = () => {};
      const bodiesReleased = new Promise<void>((resolve) => (releaseBodies = resolve));
      const slow = Array.from({ length: SLOW_CLIENTS }, (_, i) => {
        const name = `${backend.name}-slow-${i}`;
        const pet = petFor(name, i);
        const outcome = postPet(server!.url, fixture.key, pet, { agent: slowAgent, requestId: name, holdBody: bodiesReleased });
        return { name, pet, outcome };
      });
      t.after(() => {
        loadAgent.destroy();
        slowAgent.destroy();
      });

      await Promise.race([load.firstCreated, sleep(10_000).then(() => assert.fail('no 201 within 10 s'))]);
      await sleep(200);
      // The server has the slow requests' headers: they were accepted before the signal.
      for (let i = 0; slow.some((s) => !server!.acceptedRequestIds.has(s.name)); i++) {
        assert.ok(i < 100, 'the server accepted the slow requests');
        await sleep(20);
      }
      const inFlightAtSignal = load.inFlight() + SLOW_CLIENTS;
      const signalledAt = performance.now();
      server.kill('SIGTERM');
      await sleep(BODY_DELAY_MS);
      releaseBodies();
      const exit = await server.exited;
      const exitMs = Math.round(exit.at - signalledAt);
      load.stop();
      await load.done;

      const sent = new Map<string, Sent>(load.sent);
      for (const s of slow) sent.set(s.name, { pet: s.pet, outcome: await s.outcome });

      // Every accepted request got a complete, documented response; the others never reached the app.
      const tally = { accepted: 0, created: 0, errors: new Map<number, number>(), refused: 0, resetBeforeAcceptance: 0 };
      const dropped: Array<[string, Outcome]> = [];
      for (const [name, { outcome }] of sent) {
        const accepted = server.acceptedRequestIds.has(name);
        if (outcome.kind === 'response') {
          check({ method: 'POST', path: '/v1/pets', status: outcome.status, contentType: outcome.contentType, body: outcome.body });
          assert.ok(accepted, `${name} was answered but not traced as accepted`);
          tally.accepted++;
          if (outcome.status === 201) tally.created++;
          else tally.errors.set(outcome.status, (tally.errors.get(outcome.status) ?? 0) + 1);
        } else if (accepted) {
          dropped.push([name, outcome]);
        } else if (outcome.code === 'ECONNREFUSED') {
          tally.refused++;
        } else {
          tally.resetBeforeAcceptance++;
        }
      }
      assert.deepEqual(dropped, [], 'no accepted request was left without a complete response');
      for (const s of slow) {
        const { outcome } = sent.get(s.name)!;
        assert.ok(outcome.kind === 'response' && outcome.status === 201, `slow request ${s.name}: ${JSON.stringify(outcome)}`);
      }
      assert.ok(tally.created > SLOW_CLIENTS, 'the load created pets');

      assert.equal(exit.signal, null, `exited by signal ${exit.signal}`);
      assert.equal(exit.code, 0, `exit code (log: ${server.messages.slice(-5).join(' | ')})`);
      assert.ok(exitMs < SHUTDOWN_TIMEOUT_MS, `exited ${exitMs} ms after SIGTERM; deadline ${SHUTDOWN_TIMEOUT_MS} ms`);

      server = await startServer(fixture.env);
      const verified = await verifyPets(server.url, fixture.key, sent);
      const integrity = await checkStoreIntegrity(fixture, verified.stored);
      t.diagnostic(
        `${backend.name}: ${inFlightAtSignal} requests in flight at SIGTERM (${SLOW_CLIENTS} still sending their bodies); ` +
          `exit code ${exit.code} after ${exitMs} ms (deadline ${SHUTDOWN_TIMEOUT_MS} ms); ${sent.size} requests: ` +
          `${tally.accepted} accepted and answered in full (${tally.created} × 201, ` +
          `${[...tally.errors].map(([status, n]) => `${n} × ${status}`).join(', ') || 'no errors'}), ` +
          `${tally.refused} refused at connect, ${tally.resetBeforeAcceptance} reset before acceptance, 0 dropped after acceptance; ` +
          `after restart all ${verified.acknowledged} acknowledged pets present and exact ` +
          `(${verified.committedWithoutResponse} committed without a response); ${integrity}`,
      );
    });
  });
}

for (const backend of backends) {
  describe(`${backend.name}: SIGTERM with pipelined requests`, () => {
    it('when a request is pipelined behind one still in flight at SIGTERM, then the server answers both before closing the connection', { timeout: 60_000 }, async (t) => {
      const fixture = await createFixture(backend);
      let server: ServerChild | undefined;
      t.after(() => killAndDrop(fixture, server));
      server = await startServer({ ...fixture.env, PETSTORE_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) });
      const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as OpenApiDocument;
      const names: [string, string] = [`${backend.name}-pipe-1`, `${backend.name}-pipe-2`];
      const accepted = server.acceptedRequestIds;
      // The first request's body is completed after SIGTERM, the second request right behind it.
      const { pets, responses, exit, exitMs, socketError } = await pipelined(t, fixture, server, names, {
        async beforeSignal(write, first) {
          write(first.head + first.body.slice(0, 5));
          for (let i = 0; !accepted.has(names[0]); i++) {
            assert.ok(i < 100, 'the server accepted the first request');
            await sleep(20);
          }
        },
        async afterSignal(write, first, second) {
          write(first.body.slice(5) + second.head + second.body);
        },
      });
      assert.equal(responses[0]?.status, 201, `first request: ${JSON.stringify(responses[0])} (socket error ${socketError})`);
      assert.ok(accepted.has(names[1]), 'the server accepted the pipelined request');
      assert.equal(responses.length, 2, `the accepted pipelined request got a complete response (got ${responses.length}; socket error ${socketError})`);
      assert.ok([201, 503].includes(responses[1]!.status), `pipelined request answered ${responses[1]!.status}`);
      assert.equal(exit.code, 0);
      assert.ok(exitMs < SHUTDOWN_TIMEOUT_MS, `exited ${exitMs} ms after SIGTERM`);

      server = await startServer(fixture.env);
      const verified = await verifyPets(server.url, fixture.key, pipelinedSent(names, pets, responses));
      t.diagnostic(
        `${backend.name}: first request 201, pipelined request ${responses[1]!.status} ${responses[1]!.text}; ` +
          `exit 0 after ${exitMs} ms; ${verified.stored} pet stored`,
      );
      await t.test(
        'and the 503 for the pipelined request is an Error {code, message, status}',
        () => {
          const check = createOpenApiChecker(doc);
          const res = responses[1]!;
          check({ method: 'POST', path: '/v1/pets', status: res.status, contentType: res.headers['content-type'] ?? null, body: res.body });
        },
      );
    });

    if (backend.name === 'postgres') {
      it('when two pipelined requests were both accepted before SIGTERM and commit after it, then both 201s are delivered', { timeout: 60_000 }, async (t) => {
        const fixture = await createFixture(backend);
        let server: ServerChild | undefined;
        const locker = new pg.Client({ connectionString: fixture.url });
        t.after(async () => {
          await locker.end().catch(() => {});
          await killAndDrop(fixture, server);
        });
        server = await startServer({ ...fixture.env, PETSTORE_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) });
        await locker.connect();
        const names: [string, string] = ['postgres-locked-1', 'postgres-locked-2'];
        const accepted = server.acceptedRequestIds;
        // Both requests are parsed and waiting on a table lock when SIGTERM arrives.
        const { pets, responses, exit, exitMs, socketError } = await pipelined(t, fixture, server, names, {
          async beforeSignal(write, first, second) {
            await locker.query('BEGIN');
            await locker.query('LOCK TABLE pets IN EXCLUSIVE MODE');
            write(first.head + first.body + second.head + second.body);
            for (let i = 0; !names.every((n) => accepted.has(n)); i++) {
              assert.ok(i < 100, 'the server accepted both requests');
              await sleep(20);
            }
            await sleep(100);
          },
          async afterSignal() {
            await locker.query('COMMIT');
          },
        });
        assert.deepEqual(
          responses.map((r) => r.status),
          [201, 201],
          `both accepted requests were committed and answered (socket error ${socketError})`,
        );
        assert.equal(exit.code, 0);
        assert.ok(exitMs < SHUTDOWN_TIMEOUT_MS, `exited ${exitMs} ms after SIGTERM`);
        server = await startServer(fixture.env);
        const verified = await verifyPets(server.url, fixture.key, pipelinedSent(names, pets, responses));
        assert.equal(verified.acknowledged, 2);
        t.diagnostic(`postgres: both pipelined requests committed after SIGTERM and both 201s delivered; exit 0 after ${exitMs} ms`);
      });
    }
  });
}
