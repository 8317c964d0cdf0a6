// Retries against real failures: a real 429 from a tiny rate limit, and the server process
// killed (kill -9) after committing a create but before its answer arrived, then restarted on
// the same port and database; plus connection failures, timeouts, and answers only a broken
// proxy would give.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';
import { before, describe, test } from 'node:test';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { createAccountWithKey, freePort, type ServerProcess, startServerProcess } from '../helpers/process.js';
import { petstoreError, recordingClient } from './helpers.js';

/** Listens on a free port of 127.0.0.1; `close` also drops open connections. */
async function listening(server: net.Server): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A TCP proxy to 127.0.0.1:targetPort. Once armed with `cutNextAnswer(cut)`, the first bytes of
 * the next answer are held back (so the server has already done the work), `cut` runs (it
 * kills the server), and the client's connection is reset: the client never hears the answer.
 */
async function cuttingProxy(targetPort: number) {
  let cut: (() => Promise<void>) | undefined;
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    let dropping = false;
    upstream.on('error', () => {});
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (dropping) return;
      const cutNow = cut;
      if (!cutNow) {
        client.write(chunk);
        return;
      }
      cut = undefined;
      dropping = true;
      void cutNow().finally(() => client.resetAndDestroy());
    });
  });
  const { port, close } = await listening(server);
  return {
    port,
    close,
    cutNextAnswer(fn: () => Promise<void>) {
      cut = fn;
    },
  };
}

for (const backend of backends) {
  describe(`@petstore/client retries against the real server (${backend.name})`, () => {
    // One request per second per key, bursts of one: each account's second quick call gets 429.
    const getApp = sharedApp({ backend, env: { PETSTORE_RATE_LIMIT_PER_SECOND: '1', PETSTORE_RATE_LIMIT_BURST: '1' } });
    let app: TestApp;
    before(async () => {
      app = await getApp();
    });

    test('when a create meets a real 429, then it waits Retry-After and succeeds with the same Idempotency-Key, creating one pet', async () => {
      const { key, accountId } = await app.createAccount();
      let limitedAt = 0;
      const { petstore, attempts } = recordingClient(app.url, key, { onAnswer: (a) => a.status === 429 && (limitedAt = Date.now()) });
      const first = await petstore.pets.create({ name: 'First', categoryId: 1 });
      const second = await petstore.pets.create({ name: 'Second', categoryId: 1 });
      const retriedAt = Date.now();
      assert.deepEqual(attempts.map((a) => a.status), [201, 429, 201]);
      assert.equal(attempts[1]!.retryAfter, '1');
      assert.equal(attempts[2]!.idempotencyKey, attempts[1]!.idempotencyKey, 'the retry sends the same key');
      assert.ok(retriedAt - limitedAt >= 1000, `waited ${retriedAt - limitedAt} ms after the 429, Retry-After was 1 s`);
      const stored = await app.services.pets.list(accountId, { limit: 10 });
      assert.deepEqual(stored.pets, [first, second]);
    });

    test('when retries are off and the rate limit is hit, then PetstoreError rate_limited carries retryAfter', async () => {
      const { key } = await app.createAccount();
      const { petstore, attempts } = recordingClient(app.url, key, { maxRetries: 0 });
      await petstore.pets.list();
      const error = await petstoreError(petstore.pets.list());
      assert.deepEqual([error.status, error.code, error.retryAfter, error.requestId], [429, 'rate_limited', 1, attempts[1]!.requestId]);
      assert.equal(attempts.length, 2);
    });

    test('when the server is killed after committing a create and before answering, then the retry reaches it restarted and replays: exactly one pet', async (t) => {
      const database = await backend.createDatabase();
      const env = { PETSTORE_DATABASE_URL: database.url, PORT: String(await freePort()) };
      let server: ServerProcess = await startServerProcess(env);
      let restarted: Promise<ServerProcess> | undefined;
      const proxy = await cuttingProxy(Number(env.PORT));
      t.after(async () => {
        await proxy.close();
        await server.stop('SIGKILL');
        await (await restarted?.catch(() => undefined))?.stop('SIGKILL');
        await database.drop();
      });
      const { key } = await createAccountWithKey(env);
      proxy.cutNextAnswer(async () => {
        await server.stop('SIGKILL'); // kill -9 while the 201 is on its way
        restarted = startServerProcess(env); // same port, same database
      });
      const { petstore, attempts } = recordingClient(`http://127.0.0.1:${proxy.port}`, key, { maxRetries: 8 });
      const pet = await petstore.pets.create({ name: 'Survivor', categoryId: 4, status: 'available' });
      server = await restarted!;

      assert.ok(attempts[0]!.error, 'the first attempt got no answer');
      assert.equal(attempts[0]!.status, undefined);
      const last = attempts.at(-1)!;
      assert.deepEqual([last.status, last.replayed], [201, 'true'], 'the retry was answered with the replay of the committed create');
      assert.ok(attempts.slice(1, -1).every((a) => a.error), 'attempts while the server was down failed to connect');
      assert.equal(new Set(attempts.map((a) => a.idempotencyKey)).size, 1, 'one key for every attempt');
      assert.deepEqual(pet, { id: pet.id, name: 'Survivor', categoryId: 4, status: 'available' });
      const direct = recordingClient(server.url, key).petstore;
      assert.deepEqual((await direct.pets.list()).data, [pet], 'exactly one pet');
    });
  });
}

describe('@petstore/client when no answer comes', () => {
  test('when nothing listens at the address, then the call is retried maxRetries times and fails with network_error (status 0)', async () => {
    const port = await freePort();
    const { petstore, attempts } = recordingClient(`http://127.0.0.1:${port}`, 'psk_live_x', { maxRetries: 2 });
    const error = await petstoreError(petstore.pets.create({ name: 'Rex', categoryId: 1 }));
    assert.deepEqual([error.status, error.code, error.requestId], [0, 'network_error', undefined]);
    assert.match(error.message, /ECONNREFUSED/);
    assert.ok(error.cause instanceof Error);
    assert.equal(attempts.length, 3);
    assert.equal(new Set(attempts.map((a) => a.idempotencyKey)).size, 1);
  });

  test('when the server accepts but never answers, then each attempt ends after timeoutMs and the call fails with timeout', async (t) => {
    const silent = await listening(net.createServer(() => {}));
    t.after(() => silent.close());
    const { petstore, attempts } = recordingClient(`http://127.0.0.1:${silent.port}`, 'psk_live_x', { maxRetries: 1, timeoutMs: 200 });
    const started = Date.now();
    const error = await petstoreError(petstore.pets.list());
    const elapsed = Date.now() - started;
    assert.deepEqual([error.status, error.code], [0, 'timeout']);
    assert.equal(attempts.length, 2);
    assert.ok(elapsed >= 400 && elapsed < 3000, `took ${elapsed} ms`);
  });
});

describe('@petstore/client and answers the Petstore server never gives (a stand-in HTTP server, as a broken proxy would answer)', () => {
  let stub: { port: number; close(): Promise<void> };
  const handlers: Record<string, (res: ServerResponse) => void> = {
    // A Retry-After too long to wait out inside a call.
    '/v1/pets/1': (res) => res.writeHead(429, { 'retry-after': '120', 'content-type': 'application/json' }).end('{"code":"rate_limited","message":"slow down","status":429}'),
    '/v1/pets/2': (res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>'),
    // The answer's head arrives, its body never completes.
    '/v1/pets/3': (res) => res.writeHead(200, { 'content-type': 'application/json' }).write('{"id":3,'),
    '/v1/pets/4': (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":4,'),
    '/v1/pets': (res) => res.writeHead(200, { 'content-type': 'application/json', link: '</v1/pets?limit=20>; rel="next"' }).end('[]'),
  };
  before(async () => {
    stub = await listening(createServer((req: IncomingMessage, res: ServerResponse) => handlers[new URL(req.url!, 'http://x').pathname]!(res)));
  });
  test('when the answers are unusable, then PetstoreError says so, retrying only what is safe and worth it', async (t) => {
    t.after(() => stub.close());
    const client = () => recordingClient(`http://127.0.0.1:${stub.port}`, 'psk_live_x', { maxRetries: 2, timeoutMs: 300 });
    const cases = [
      { call: (c: ReturnType<typeof client>) => c.petstore.pets.get(1), fields: [429, 'rate_limited', 120], attempts: 1 },
      { call: (c: ReturnType<typeof client>) => c.petstore.pets.get(2), fields: [502, 'unexpected_response', undefined], attempts: 1 },
      { call: (c: ReturnType<typeof client>) => c.petstore.pets.get(3), fields: [0, 'timeout', undefined], attempts: 3 },
      { call: (c: ReturnType<typeof client>) => c.petstore.pets.get(4), fields: [200, 'unexpected_response', undefined], attempts: 1 },
      { call: (c: ReturnType<typeof client>) => c.petstore.pets.list(), fields: [200, 'unexpected_response', undefined], attempts: 1 },
    ];
    for (const { call, fields, attempts } of cases) {
      const c = client();
      const error = await petstoreError(call(c));
      assert.deepEqual([error.status, error.code, error.retryAfter], fields, error.message);
      assert.equal(c.attempts.length, attempts, error.message);
    }
  });
});
