// Webhook fairness bench (issue 30, part 1): does one account's dead receivers delay another's?
//   node --import tsx bench/webhook-fairness.ts [--store sqlite|postgres] [--processes 1|2] [--seconds 30]
//     [--endpoints 16] [--backlog 500] [--timeout-ms 15000] [--modes before,after]
// Account A registers --endpoints endpoints on receivers that accept connections and never
// answer, then writes a backlog of --backlog pets (events); at once account B, with one receiver
// answering 204, creates a pet every 100 ms for --seconds. Reported: B's delivery latency from
// the create's 201 to its arrival (p50, p99, max) and how many of B's never arrived within
// --seconds + 10 s. Each mode is a fresh database and fresh servers, with the same settings but:
//   before  PETSTORE_WEBHOOK_ACCOUNT_CONCURRENCY=PETSTORE_WEBHOOK_CONCURRENCY (no share: the old claims)
//   after   the defaults (an account holds at most its share of the slots)
// Target (after): p99 <= 2 s, none lost. Everything on 127.0.0.1; the built server (npm run build).
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type Child, freePort, runNode, startChild, stopAllChildren, stopChild, waitForHttp } from './lib/procs.js';
import { type BenchDatabase, benchAdminUrl, createPostgresDatabase, serviceEnv } from './lib/service.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'petstore.js');
const CONCURRENCY = 64;

const { values: opts } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    processes: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '30' },
    endpoints: { type: 'string', default: '16' },
    backlog: { type: 'string', default: '500' },
    'timeout-ms': { type: 'string', default: '15000' },
    modes: { type: 'string', default: 'before,after' },
  },
});
if (opts.store !== 'sqlite' && opts.store !== 'postgres') throw new Error('--store is sqlite or postgres');
const PROCESSES = Number(opts.processes);
if (PROCESSES > 1 && opts.store !== 'postgres') throw new Error('--processes 2 needs --store postgres');
const SECONDS = Number(opts.seconds);
const ENDPOINTS = Number(opts.endpoints);
const BACKLOG = Number(opts.backlog);
const TIMEOUT_MS = Number(opts['timeout-ms']);
const MODES = opts.modes.split(',') as Array<'before' | 'after'>;

const log = (message: string) => process.stderr.write(`[bench:fairness] ${message}\n`);

/** Accepts connections and reads requests, never answers. */
async function silentReceiver() {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

/** Answers 204 at once; when each pet name first arrived. */
async function answeringReceiver() {
  const arrived = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const name = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { object: { name: string } } }).data.object.name;
      if (!arrived.has(name)) arrived.set(name, performance.now());
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrived,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

async function run(mode: 'before' | 'after') {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'petstore-bench-fairness-'));
  const database: BenchDatabase =
    opts.store === 'postgres' ? await createPostgresDatabase(benchAdminUrl()) : { url: path.join(tmp, 'petstore.db'), drop: async () => {} };
  const silent = await Promise.all(Array.from({ length: ENDPOINTS }, () => silentReceiver()));
  const answering = await answeringReceiver();
  const children: Child[] = [];
  try {
    const ports = await Promise.all(Array.from({ length: PROCESSES }, () => freePort()));
    const env = serviceEnv(ports[0]!, database.url, {
      PETSTORE_LOG_LEVEL: 'warn',
      PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
      PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
      PETSTORE_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      PETSTORE_WEBHOOK_CONCURRENCY: String(CONCURRENCY),
      ...(mode === 'before' ? { PETSTORE_WEBHOOK_ACCOUNT_CONCURRENCY: String(CONCURRENCY) } : {}),
    });
    await runNode([BIN, 'migrate', '--json'], env);
    const newKey = async (name: string) => {
      const account = JSON.parse(await runNode([BIN, 'accounts', 'create', '--name', name, '--json'], env)) as { id: string };
      return (JSON.parse(await runNode([BIN, 'keys', 'create', '--account', account.id, '--json'], env)) as { key: string }).key;
    };
    const [keyA, keyB] = [await newKey('bench-fairness-a'), await newKey('bench-fairness-b')];
    for (const [i, port] of ports.entries()) {
      const child = startChild(`service-${i}`, [BIN, 'serve'], { ...env, PORT: String(port) }, { cwd: ROOT, forward: true });
      children.push(child);
      await waitForHttp(child, `http://127.0.0.1:${port}/readyz`);
    }
    let next = 0;
    const post = async (key: string, p: string, body: unknown): Promise<number> => {
      const port = ports[next++ % ports.length]!;
      const res = await fetch(`http://127.0.0.1:${port}${p}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const answered = performance.now();
      if (res.status !== 201) throw new Error(`POST ${p}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      return answered;
    };
    for (const receiver of silent) await post(keyA, '/v1/webhook-endpoints', { url: receiver.url });
    await post(keyB, '/v1/webhook-endpoints', { url: answering.url });

    // A's backlog, 20 creates at a time; B starts at once, while it is written.
    const backlog = (async () => {
      for (let i = 0; i < BACKLOG; i += 20) {
        await Promise.all(Array.from({ length: Math.min(20, BACKLOG - i) }, (_, j) => post(keyA, '/v1/pets', { name: `a-${i + j}`, categoryId: 1 })));
      }
    })();
    const created = new Map<string, number>();
    const started = performance.now();
    for (let n = 0; performance.now() - started < SECONDS * 1000; n++) {
      const due = started + n * 100;
      if (due > performance.now()) await sleep(due - performance.now());
      const name = `b-${n}`;
      created.set(name, await post(keyB, '/v1/pets', { name, categoryId: 1 }));
    }
    await backlog;
    // Late arrivals count, up to 10 s after the last create.
    const waitUntil = performance.now() + 10_000;
    while (answering.arrived.size < created.size && performance.now() < waitUntil) await sleep(100);
    const latencies = [...created].flatMap(([name, at]) => {
      const arrived = answering.arrived.get(name);
      return arrived === undefined ? [] : [arrived - at];
    }).sort((a, b) => a - b);
    return {
      mode,
      store: opts.store,
      processes: PROCESSES,
      created: created.size,
      delivered: latencies.length,
      lost: created.size - latencies.length,
      p50Ms: Math.round(percentile(latencies, 50)),
      p99Ms: Math.round(percentile(latencies, 99)),
      maxMs: Math.round(latencies.at(-1) ?? NaN),
      silentConnections: silent.reduce((sum, r) => sum + r.connections(), 0),
    };
  } finally {
    for (const receiver of silent) await receiver.close();
    await answering.close();
    for (const child of children) await stopChild(child, 30_000);
    await database.drop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  log(`${opts.store}, ${PROCESSES} process(es): A ${ENDPOINTS} silent endpoints + ${BACKLOG} events; B a pet every 100 ms for ${SECONDS} s; timeout ${TIMEOUT_MS} ms`);
  const results = [];
  for (const mode of MODES) {
    const result = await run(mode);
    log(`${mode}: B p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, max ${result.maxMs} ms; ${result.delivered}/${result.created} delivered, ${result.lost} not within ${SECONDS + 10} s`);
    results.push(result);
  }
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    await stopAllChildren();
    process.exit(1);
  },
);
