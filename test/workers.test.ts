// `petstore serve --workers N` (node:cluster), as real processes: validation, one migration run
// in the primary, workers sharing a port on both stores, restarts with backoff, graceful shutdown.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { MIGRATION_LOCK_KEY } from '../src/store/postgres/index.js';
import { migrations } from '../src/store/migrations/index.js';
import { type BackendDatabase, backends, sqliteBackend } from './helpers/backends.js';
import {
  cli,
  createAccountWithKey,
  httpRequest,
  type LogLine,
  type ServerProcess,
  startServerProcess,
} from './helpers/process.js';

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Pids of the workers the primary reported listening, in order. */
const workerPids = (server: ServerProcess) =>
  server.logs().filter((l) => l.msg === 'worker listening' && l.pid === server.child.pid).map((l) => l.workerPid as number);

// A worker's start took 10 s once under the full suite's load (2 cores): wait longer than that.
const waitForNewWorker = (server: ServerProcess, known: number[]) =>
  server.waitForLog((l) => l.msg === 'worker listening' && l.pid === server.child.pid && !known.includes(l.workerPid as number), 30_000);

/** Starts a cluster on a fresh database of `backend`; stopped and dropped after the calling suite or test. */
async function startCluster(
  t: { after(fn: () => unknown): void },
  database: BackendDatabase,
  env: Record<string, string> = {},
  workers = 2,
): Promise<ServerProcess> {
  const server = await startServerProcess({ PETSTORE_DATABASE_URL: database.url, ...env }, ['--workers', String(workers)]);
  t.after(async () => {
    await server.stop('SIGKILL');
    for (const pid of workerPids(server)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  });
  return server;
}

// The suites start their own processes and databases: run them side by side.
describe('petstore serve --workers', { concurrency: 2 }, () => {
  // Each of these only runs the CLI; run them side by side.
  /**
   * Sends a POST's headers and the start of its body, and resolves once a worker has taken the
   * request: with `Expect: 100-continue`, Node answers "100 Continue" as it hands the request to
   * the app. The rest of the body is up to the caller (`socket.write`), or never comes.
   */
  async function requestInFlight(url: string, head: string, bodyStart: string): Promise<{ socket: net.Socket; response: () => string }> {
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    await once(socket, 'connect');
    let response = '';
    socket.on('data', (c: Buffer) => (response += c.toString()));
    socket.write(`${head}Expect: 100-continue\r\n\r\n`);
    for (let i = 0; i < 200 && !response.startsWith('HTTP/1.1 100 Continue\r\n\r\n'); i += 1) await sleep(25);
    assert.match(response, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, 'a worker took the request');
    response = '';
    socket.write(bodyStart);
    return { socket, response: () => response };
  }

  describe('petstore serve --workers: usage', { concurrency: true }, () => {
    const invalid: Array<[string, string[], RegExp]> = [
      ['--workers is 0', ['serve', '--workers', '0'], /--workers must be an integer from 1 to 64, got "0"/],
      ['--workers is 65', ['serve', '--workers', '65'], /--workers must be an integer from 1 to 64, got "65"/],
      ['--workers is not a number', ['serve', '--workers', 'two'], /--workers must be an integer from 1 to 64, got "two"/],
      ['--workers is a fraction', ['serve', '--workers=1.5'], /--workers must be an integer/],
      ['--workers is negative', ['serve', '--workers=-1'], /--workers must be an integer/],
      ['--workers has no value', ['serve', '--workers'], /argument missing/],
      ['--workers is given to another command', ['migrate', '--workers', '2'], /--workers is an option of `petstore serve` only/],
    ];
    for (const [label, args, message] of invalid) {
      test(`when ${label}, then petstore exits 2 with the reason on stderr and starts nothing`, { timeout: 30_000 }, async (t) => {
        const database = await sqliteBackend.createDatabase();
        t.after(() => database.drop());
        const result = await cli(args, { PETSTORE_DATABASE_URL: database.url, PORT: '0' }, { timeoutMs: 30_000 });
        assert.equal(result.code, 2, result.stderr);
        assert.match(result.stderr, message);
        assert.equal(result.stdout, '');
      });
    }

    test('when --workers 2 is asked for an in-memory SQLite database, then it exits 2 (workers could not share it)', { timeout: 30_000 }, async () => {
      const result = await cli(['serve', '--workers', '2'], { PETSTORE_DATABASE_URL: ':memory:', PORT: '0' }, { timeoutMs: 30_000 });
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /in-memory SQLite database/);
    });

    test('when serve --help runs, then it documents --workers', async () => {
      const result = await cli(['serve', '--help'], {});
      assert.equal(result.code, 0);
      assert.match(result.stdout, /--workers <n>/);
    });

    test('when --workers is 1, then serve runs one process as without the flag (no cluster)', async (t) => {
      const database = await sqliteBackend.createDatabase();
      t.after(() => database.drop());
      const server = await startServerProcess({ PETSTORE_DATABASE_URL: database.url }, ['--workers', '1']);
      t.after(() => server.stop('SIGKILL'));
      const listening = server.logs().find((l) => typeof l.msg === 'string' && l.msg.startsWith('Server listening at'));
      assert.equal(listening?.pid, server.child.pid, 'the process itself listens');
      assert.equal(server.logs().some((l) => /workers/.test(String(l.msg))), false, 'no cluster log lines');
      assert.equal((await httpRequest(server.url, 'GET', '/healthz')).status, 200);
      assert.equal(await server.stop('SIGTERM'), 0);
    });
  });

  for (const backend of backends) {
    describe(`petstore serve --workers 2 on ${backend.name}`, () => {
      let database: BackendDatabase;
      let server: ServerProcess;
      let env: Record<string, string>;
      const cleanups: Array<() => unknown> = [];
      before(async () => {
        database = await backend.createDatabase();
        cleanups.push(() => database.drop());
        env = { PETSTORE_DATABASE_URL: database.url };
        server = await startCluster({ after: (fn) => cleanups.push(fn) }, database);
      });
      after(async () => {
        for (const fn of cleanups.reverse()) await fn();
      });

      test('when it starts on an empty database, then the primary applies the migrations once and two workers listen on one port', async () => {
        const pids = workerPids(server);
        assert.equal(new Set(pids).size, 2, 'two workers');
        assert.ok(!pids.includes(server.child.pid!), 'the primary does not serve');
        for (const pid of pids) {
          // Each worker's own line (written by the worker, so it may trail the primary's "cluster ready").
          const listening = await server.waitForLog((l) => l.pid === pid && String(l.msg).startsWith('Server listening at'));
          assert.equal(listening.msg, `Server listening at ${server.url}`, 'on the shared port');
        }
        const applied = server.logs().filter((l) => l.msg === 'applied migrations');
        assert.equal(applied.length, 1, 'one migration run');
        assert.equal(applied[0]?.pid, server.child.pid, 'run by the primary');
        const versions = migrations.map((m) => m.version);
        assert.deepEqual(applied[0]?.applied, versions, 'every migration, before any worker started');
        const firstWorkerLine = server.logs().findIndex((l) => l.pid !== server.child.pid);
        assert.ok(server.logs().indexOf(applied[0]!) < firstWorkerLine);
      });

      if (backend.name === 'postgres') {
        test('when the migration lock is taken as soon as the primary starts forking, then the workers still start (they do not migrate)', { timeout: 90_000 }, async (t) => {
          const fresh = await backend.createDatabase();
          const holder = new pg.Client({ connectionString: fresh.url });
          holder.on('error', () => undefined);
          let cluster: ServerProcess | undefined;
          t.after(async () => {
            await cluster?.stop('SIGKILL');
            await holder.end();
            await fresh.drop();
          });
          await holder.connect();
          let locked: Promise<unknown> | undefined;
          cluster = await startServerProcess({ PETSTORE_DATABASE_URL: fresh.url }, ['--workers', '2'], {
            // A worker takes about half a second to boot, so the lock is held before any could ask for it.
            onLogLine: (line) => {
              if (line.msg === 'starting 2 workers') locked ??= holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
            },
          });
          assert.ok(locked, 'the lock was requested');
          await locked;
          assert.equal((await httpRequest(cluster.url, 'GET', '/readyz')).status, 200);
          assert.equal(await cluster.stop('SIGTERM'), 0);
        });
      }

      test('when pets are created concurrently on separate connections, then both workers write and every pet is listed', async () => {
        const { key } = await createAccountWithKey(env);
        const servedBy = new Map<number, number[]>(); // worker pid -> pet ids
        // Batches of 5 at once: the workers write to the store at the same time.
        for (let batch = 0; batch < 6 && (servedBy.size < 2 || batch < 2); batch += 1) {
          await Promise.all(
            Array.from({ length: 5 }, async (_, j) => {
              const requestId = `workers-${backend.name}-${process.pid}-${batch}-${j}`;
              const res = await httpRequest(server.url, 'POST', '/v1/pets', {
                key,
                body: { name: `Pet ${batch}.${j}`, categoryId: 1 },
                headers: { 'x-request-id': requestId },
              });
              assert.equal(res.status, 201, JSON.stringify(res.body));
              const line = await server.waitForLog((l: LogLine) => l.reqId === requestId && l.msg === 'request completed');
              const pid = line.pid as number;
              servedBy.set(pid, [...(servedBy.get(pid) ?? []), (res.body as { id: number }).id]);
            }),
          );
        }
        assert.equal(servedBy.size, 2, `both workers served requests: ${JSON.stringify([...servedBy])}`);
        const created = [...servedBy.values()].flat().sort((a, b) => a - b);
        const list = await httpRequest(server.url, 'GET', '/v1/pets?limit=100', { key });
        assert.equal(list.status, 200);
        assert.deepEqual((list.body as Array<{ id: number }>).map((p) => p.id), created);
      });
    });
  }

  // Independent clusters: two at a time keeps the file short without starving a 2-core machine.
  describe('petstore serve --workers: supervision and shutdown', { concurrency: 2 }, () => {
    test('when a worker dies, then the primary replaces it after a delay that doubles when it dies again', { timeout: 90_000 }, async (t) => {
      const database = await sqliteBackend.createDatabase();
      t.after(() => database.drop());
      const server = await startCluster(t, database);
      const first = workerPids(server);
      const isRestart = (pid: number) => (l: LogLine) => l.msg === 'worker exited unexpectedly; restarting it' && l.workerPid === pid;

      process.kill(first[0]!, 'SIGKILL');
      const restart1 = await server.waitForLog(isRestart(first[0]!));
      const replacement = await waitForNewWorker(server, first);
      assert.ok((restart1.restartInMs as number) >= 100, `not a tight loop: ${String(restart1.restartInMs)} ms`);
      assert.ok((replacement.time as number) - (restart1.time as number) >= (restart1.restartInMs as number), 'the delay was honoured');

      process.kill(replacement.workerPid as number, 'SIGKILL');
      const restart2 = await server.waitForLog(isRestart(replacement.workerPid as number));
      assert.equal(restart2.restartInMs, (restart1.restartInMs as number) * 2, 'the delay doubles');
      const third = await waitForNewWorker(server, [...first, replacement.workerPid as number]);
      assert.ok((third.time as number) - (restart2.time as number) >= (restart2.restartInMs as number));

      for (let i = 0; i < 4; i += 1) assert.equal((await httpRequest(server.url, 'GET', '/readyz')).status, 200);
      assert.equal(await server.stop('SIGTERM'), 0);
    });

    test('when the primary gets SIGTERM with a request in flight, then that request completes, new connections are refused and it exits 0', { timeout: 90_000 }, async (t) => {
      const database = await sqliteBackend.createDatabase();
      t.after(() => database.drop());
      const server = await startCluster(t, database);
      const workers = workerPids(server);
      const { key } = await createAccountWithKey({ PETSTORE_DATABASE_URL: database.url });

      // A POST whose body arrives in two parts: the request is in flight across the signal.
      const body = JSON.stringify({ name: 'In flight', categoryId: 7 });
      const { socket, response: received } = await requestInFlight(
        server.url,
        `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n`,
        body.slice(0, 10),
      );

      const exited = once(server.child, 'exit');
      server.child.kill('SIGTERM');
      for (const pid of workers) {
        await server.waitForLog((l) => l.pid === pid && l.msg === 'shutting down: finishing requests in flight');
      }
      // Stop accepting: once every worker has closed its listener, the shared port is closed.
      // (A probe caught in that instant can be held unanswered by Node's round-robin handoff,
      // nodejs/node#21746: hence the short per-probe timeout; see docs/scaling.md.)
      let refused = false;
      for (let i = 0; i < 40 && !refused; i += 1) {
        refused = await httpRequest(server.url, 'GET', '/healthz', { timeoutMs: 500 }).then(
          () => false,
          (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED',
        );
        if (!refused) await sleep(50);
      }
      assert.ok(refused, 'new connections are refused during shutdown');
      assert.equal(server.child.exitCode, null, `still waiting for the request in flight: ${server.output()}`);

      socket.write(body.slice(10));
      const completed = Date.now();
      await once(socket, 'close');
      const response = received();
      assert.match(response, /^HTTP\/1\.1 201 /);
      assert.match(response, /"name":"In flight"/);
      assert.match(response, /\r\nconnection: close\r\n/i, 'the keep-alive connection ends with the response');
      const [code] = (await exited) as [number | null];
      assert.equal(code, 0);
      // Node's keep-alive timeout is 5 s: exiting well before it means the connection was not kept.
      assert.ok(Date.now() - completed < 4000, `exited ${Date.now() - completed} ms after the last response (no keep-alive wait)`);
      for (const pid of workers) assert.equal(isAlive(pid), false, `worker ${pid} exited`);
      assert.ok(server.logs().some((l) => l.pid === server.child.pid && l.msg === 'all workers stopped; exiting'));
    });

    test('when Ctrl+C sends SIGINT to the primary and the workers at once, then each worker shuts down once, cleanly, and it exits 0', { timeout: 40_000 }, async (t) => {
      const database = await sqliteBackend.createDatabase();
      t.after(() => database.drop());
      const server = await startCluster(t, database);
      const workers = workerPids(server);
      const exited = once(server.child, 'exit');
      // A terminal signals the whole process group; the primary forwards its SIGINT as well.
      server.child.kill('SIGINT');
      for (const pid of workers) process.kill(pid, 'SIGINT');
      const [code] = (await exited) as [number | null];
      assert.equal(code, 0, server.output());
      // How the primary saw each worker end: exit code 0, not killed by the second SIGINT.
      const ends = server.logs().filter((l) => l.pid === server.child.pid && workers.includes(l.workerPid as number) && 'code' in l);
      assert.deepEqual(ends.map((l) => [l.code, l.signal]), [[0, null], [0, null]], server.output());
      for (const pid of workers) {
        assert.equal(server.logs().filter((l) => l.pid === pid && l.msg === 'shutting down: finishing requests in flight').length, 1, 'shut down once');
      }
    });

    test('when a worker cannot finish within PETSTORE_SHUTDOWN_TIMEOUT_MS, then the primary exits 1 and no worker is left', { timeout: 40_000 }, async (t) => {
      const database = await sqliteBackend.createDatabase();
      t.after(() => database.drop());
      const server = await startCluster(t, database, { PETSTORE_SHUTDOWN_TIMEOUT_MS: '300' });
      const workers = workerPids(server);
      const { key } = await createAccountWithKey({ PETSTORE_DATABASE_URL: database.url });
      // Headers promise a body that never comes.
      const { socket } = await requestInFlight(
        server.url,
        `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n`,
        '{',
      );
      t.after(() => socket.destroy());
      const started = Date.now();
      assert.equal(await server.stop('SIGTERM'), 1);
      assert.ok(Date.now() - started < 5000, `exited after ${Date.now() - started} ms`);
      for (const pid of workers) assert.equal(isAlive(pid), false, `worker ${pid} exited`);
    });

    test('when the workers cannot start (port taken), then the primary stops and exits 1 instead of restarting them', { timeout: 40_000 }, async (t) => {
      const database = await sqliteBackend.createDatabase();
      t.after(() => database.drop());
      const blocker = net.createServer();
      blocker.listen(0, '127.0.0.1');
      await once(blocker, 'listening');
      t.after(() => blocker.close());
      const port = (blocker.address() as net.AddressInfo).port;
      const result = await cli(['serve', '--workers', '2'], { PETSTORE_DATABASE_URL: database.url, PORT: String(port), HOST: '127.0.0.1', PETSTORE_LOG_LEVEL: 'info' }, { timeoutMs: 25_000 });
      assert.equal(result.code, 1, result.stdout + result.stderr);
      assert.match(result.stderr, /failed to start: .*EADDRINUSE/);
      assert.match(result.stdout, /worker exited before the cluster came up/);
      assert.doesNotMatch(result.stdout, /restarting it/);
    });
  });
});

describe('petstore serve --workers: metrics', () => {
  test('when requests are spread over two workers, then every /metrics scrape counts all of them', { timeout: 60_000 }, async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    const server = await startCluster(t, database);
    const { key } = await createAccountWithKey({ PETSTORE_DATABASE_URL: database.url });
    const total = 20;
    for (let i = 0; i < total; i += 1) assert.equal((await httpRequest(server.url, 'GET', '/v1/pets', { key })).status, 200);
    const served = (text: string) =>
      Number(/petstore_http_requests_total\{method="GET",route="\/v1\/pets",status="200"\} (\d+)/.exec(text)?.[1] ?? 0);
    // Separate connections reach both workers; each scrape must see the whole cluster.
    for (let i = 0; i < 4; i += 1) {
      const scrape = await httpRequest(server.url, 'GET', '/metrics');
      assert.equal(scrape.status, 200);
      assert.equal(served(String(scrape.body)), total);
    }
  });
});
