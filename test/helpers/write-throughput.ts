// Write throughput with full durability (not a test; run it by hand):
//
//   npm run build && node --import tsx test/helpers/write-throughput.ts [--connections 50] [--duration 5] [--warmup 1] [--count-fsyncs]
//
// Starts the built server (`bin/petstore.js serve`, log level warn) on a fresh SQLite file (or
// on PETSTORE_BENCH_DATABASE_URL, e.g. a fresh PostgreSQL database), creates an account and a
// key with the CLI, drives POST /v1/pets with autocannon (warm-up, then the measured run) and
// prints req/s and latency. Rate limits are lifted so the store is what is measured. At the end
// it checks the store holds every pet whose 201 was received (plus at most the requests still
// in flight when autocannon stopped).
//
// --count-fsyncs attaches `strace -f -c -e trace=fsync,fdatasync` to the server and prints the
// summary: how many commits (WAL fsyncs) the requests took. strace slows the server down, so use
// it for the count, not for the throughput figure.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createStore } from '../../src/store/index.js';
import { cliJson } from './process.js';
import { storeConfig } from './store-config.js';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '50' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    'count-fsyncs': { type: 'boolean', default: false },
  },
});
const connections = Number(values.connections);
const duration = Number(values.duration);
const warmup = Number(values.warmup);

const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-throughput-'));
const databaseUrl = process.env.PETSTORE_BENCH_DATABASE_URL || path.join(dir, 'petstore.db');
async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The built server at log level warn (no per-request logging), ready once /readyz answers 200. */
async function startServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.resolve('bin/petstore.js'), 'serve'], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (i > 200) throw new Error('server did not become ready');
    await sleep(100);
  }
  let strace: ChildProcess | undefined;
  if (values['count-fsyncs']) {
    strace = spawn('strace', ['-f', '-c', '-e', 'trace=fsync,fdatasync', '-o', path.join(dir, 'strace.txt'), '-p', String(child.pid)], {
      stdio: 'ignore',
    });
    await sleep(500); // attached
  }
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
      if (strace && strace.exitCode === null) await once(strace, 'exit');
    },
  };
}

const env = {
  PETSTORE_DATABASE_URL: databaseUrl,
  PETSTORE_ENV: 'production',
  PETSTORE_LOG_LEVEL: 'warn',
  PETSTORE_RATE_LIMIT_PER_SECOND: '1000000',
  PETSTORE_RATE_LIMIT_BURST: '1000000',
};

function load(url: string, key: string, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        connections,
        duration: seconds,
        timeout: 10,
        requests: [
          {
            method: 'POST',
            path: '/v1/pets',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'Throughput Pet', categoryId: 3, status: 'available' }),
          },
        ],
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
}

try {
  await cliJson<unknown>(['migrate'], env).catch(() => undefined);
  const account = await cliJson<{ id: string }>(['accounts', 'create', '--name', 'Throughput'], env);
  const { key } = await cliJson<{ key: string }>(['keys', 'create', '--account', account.id], env);
  const server = await startServer();
  let created = 0;
  let runs = 1;
  try {
    if (warmup > 0) {
      created += (await load(server.url, key, warmup))['2xx'];
      runs++;
    }
    const result = await load(server.url, key, duration);
    created += result['2xx'];
    const line = {
      store: databaseUrl.startsWith('postgres') ? 'postgres' : 'sqlite',
      connections,
      durationSec: result.duration,
      requests: result.requests.total,
      reqPerSec: Math.round(result['2xx'] / result.duration),
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  } finally {
    await server.stop();
  }
  if (values['count-fsyncs']) process.stdout.write(readFileSync(path.join(dir, 'strace.txt'), 'utf8'));
  const store = await createStore(storeConfig(databaseUrl, { pgPoolMax: 1 }));
  try {
    const pets = await store.pets.list({ accountId: account.id, limit: 10_000_000 });
    process.stdout.write(`201s received: ${created}; pets stored: ${pets.length}\n`);
    // autocannon stops with up to `connections` requests in flight per run: committed, uncounted.
    if (pets.length < created || pets.length > created + connections * runs) {
      process.stdout.write('MISMATCH\n');
      process.exitCode = 1;
    }
  } finally {
    await store.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
