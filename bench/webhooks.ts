// Webhook bench (standalone; bench/run.ts is the HTTP bench):
//   node --import tsx bench/webhooks.ts [--store sqlite|postgres] [--events 10000] [--seconds 2] [--blocks 10]
//     [--writes-only] [--cpu-prof]
// (i) Drain rate: a backlog of --events pet.created events for one endpoint is written with the
//     server's worker off, then ONE server process starts with its worker on and delivers them to
//     a receiver in this process answering 204 at once. Target: >= 1000 deliveries/s.
//     The backlog is only events: the drain includes fanning them out to the endpoint.
// (ii) POST /v1/pets with events on (one endpoint registered) vs PETSTORE_EVENTS=false:
//     autocannon, 50 connections, against two servers side by side (one per mode), in --blocks
//     blocks of --seconds slices (off on on off), the ratio of the modes' totals. The worker is off:
//     this is the write path, where a create writes its event and nothing else whatever the
//     endpoints (their deliveries are the worker's fan-out, measured by the drain).
//     Target: with events within 10 % of without.
// Everything on 127.0.0.1; the built server (dist/, bin/petstore.js): run `npm run build` first.
// PostgreSQL: a fresh database on PETSTORE_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres), dropped at the end.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { runLoad, type LoadResult } from './lib/load.js';
import { type Child, freePort, runNode, startChild, stopAllChildren, stopChild, waitForHttp } from './lib/procs.js';
import { type BenchDatabase, benchAdminUrl, createPostgresDatabase, serviceEnv } from './lib/service.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// PETSTORE_BENCH_SERVICE_ROOT: another checkout's build, measured by this harness (bench/side-by-side.sh).
const SERVICE_ROOT = process.env.PETSTORE_BENCH_SERVICE_ROOT || ROOT;
const BIN = path.join(SERVICE_ROOT, 'bin', 'petstore.js');
const DRAIN_TARGET = 1000;
const WRITE_TARGET_RATIO = 0.9;
const CONNECTIONS = 50;
/** The whole bench gives up after this long (a stuck drain must not hang it). */
const DEADLINE_MS = 10 * 60_000;

const { values: opts } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    events: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '2' },
    blocks: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '12' },
    'cpu-prof': { type: 'boolean', default: false },
    'writes-only': { type: 'boolean', default: false },
  },
});
if (opts.store !== 'sqlite' && opts.store !== 'postgres') throw new Error('--store is sqlite or postgres');
const EVENTS = Number(opts.events);
const SECONDS = Number(opts.seconds);
const BLOCKS = Number(opts.blocks);
const WARMUP = Number(opts.warmup);
type Mode = 'off' | 'on';

const log = (message: string) => process.stderr.write(`[bench:webhooks] ${message}\n`);

/** A receiver answering 204 at once; counts distinct webhook-ids and when the first and the last new one came. */
async function startReceiver() {
  const ids = new Set<string>();
  let received = 0;
  let first = 0;
  let last = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      const id = String(req.headers['webhook-id']);
      if (!ids.has(id)) {
        ids.add(id);
        last = performance.now();
        if (ids.size === 1) first = last;
      }
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    stats: () => ({ distinct: ids.size, received, first, last }),
    reset() {
      ids.clear();
      received = 0;
      first = last = 0;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'petstore-bench-webhooks-'));
  const database: BenchDatabase =
    opts.store === 'postgres' ? await createPostgresDatabase(benchAdminUrl()) : { url: path.join(tmp, 'petstore.db'), drop: async () => {} };
  const receiver = await startReceiver();
  const profileDir = path.join(tmp, 'profiles');
  try {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const env = serviceEnv(port, database.url, {
      PETSTORE_LOG_LEVEL: 'warn',
      PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
      PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
    });
    await runNode([BIN, 'migrate', '--json'], env);
    const newKey = async (name: string) => {
      const account = JSON.parse(await runNode([BIN, 'accounts', 'create', '--name', name, '--json'], env)) as { id: string };
      return (JSON.parse(await runNode([BIN, 'keys', 'create', '--account', account.id, '--json'], env)) as { key: string }).key;
    };
    /** A service on `at` (the main port unless told): its process once it answers /readyz. */
    const serve = async (extra: NodeJS.ProcessEnv, nodeArgs: string[] = [], at = port, name = 'service'): Promise<Child> => {
      const child = startChild(name, [...nodeArgs, BIN, 'serve'], { ...env, PORT: String(at), ...extra }, { cwd: SERVICE_ROOT, forward: true });
      await waitForHttp(child, `http://127.0.0.1:${at}/readyz`);
      return child;
    };
    const post = async (key: string, p: string, body: unknown, base = baseUrl) => {
      const res = await fetch(base + p, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (res.status !== 201) throw new Error(`POST ${p}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<unknown>;
    };
    const petRequest = (key: string) => ({
      method: 'POST',
      path: '/v1/pets',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }),
    });
    const checkLoad = (what: string, load: LoadResult) => {
      if (load.non2xx > 0 || load.errors > 0 || load.timeouts > 0) {
        throw new Error(`${what}: ${load.non2xx} non-2xx (${JSON.stringify(load.statusCodes)}), ${load.errors} errors, ${load.timeouts} timeouts`);
      }
    };

    // (i) The backlog, written with the worker off, then drained by one process.
    const measureDrain = async (): Promise<{ rate: number; seconds: number }> => {
      const drainKey = await newKey('bench-drain');
      let server = await serve({ PETSTORE_WEBHOOK_WORKER: 'false' });
      await post(drainKey, '/v1/webhook-endpoints', { url: receiver.url });
      let t0 = performance.now();
      const seeded = await runLoad({ url: baseUrl, connections: CONNECTIONS, duration: 0, amount: EVENTS, requests: [petRequest(drainKey)], serverPid: server.pid });
      checkLoad('seeding', seeded);
      log(`${EVENTS} events queued in ${((performance.now() - t0) / 1000).toFixed(1)} s (worker off)`);
      await stopChild(server);

      // One process with its worker on: time from the first delivery received to the last distinct one.
      receiver.reset();
      t0 = performance.now();
      server = await serve({}, opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
      const drainDeadline = Date.now() + 120_000;
      while (receiver.stats().distinct < EVENTS) {
        if (Date.now() > drainDeadline) throw new Error(`drain: only ${receiver.stats().distinct} of ${EVENTS} received after 120 s`);
        await sleep(20);
      }
      const drain = receiver.stats();
      const drainSec = (drain.last - drain.first) / 1000;
      const drainRate = (EVENTS - 1) / drainSec;
      // Recorded too: the pending gauge (the whole store) reaches 0 once every outcome is written.
      let pending = NaN;
      for (let i = 0; i < 100; i++) {
        const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
        pending = Number(/^petstore_webhook_deliveries_pending (\d+)/m.exec(metrics)?.[1] ?? NaN);
        if (pending === 0) break;
        await sleep(100);
      }
      const recordedSec = (performance.now() - t0) / 1000;
      log(`drained ${EVENTS} in ${drainSec.toFixed(2)} s (${Math.round(drainRate)}/s), ${drain.received - drain.distinct} repeats; pending after ${recordedSec.toFixed(1)} s from spawn: ${pending}`);
      await stopChild(server);
      if (opts['cpu-prof']) log(`CPU profile of the draining server in ${profileDir} (summarize: node --import tsx bench/cpuprofile-summary.ts ${profileDir}); the temp dir is removed at exit, so it is copied to ${path.join(ROOT, 'bench', 'results', 'webhooks-profile')}`);
      if (opts['cpu-prof']) fs.cpSync(profileDir, path.join(ROOT, 'bench', 'results', 'webhooks-profile'), { recursive: true });
      return { rate: drainRate, seconds: drainSec };
    };
    const drain = opts['writes-only'] ? undefined : await measureDrain();

    // (ii) POST /v1/pets, events off and on (one endpoint registered: a create writes the same
    // with or without endpoints since the fan-out moved to the worker). Both servers run side
    // by side on the same database (each on its own port, the worker off in both: this is the
    // write path, not delivering), and the load alternates between them in short slices in a
    // balanced order (off on on off, repeated). One run per mode after a restart varied by
    // ±15 % on this VM (autovacuum, checkpoints, steal, the database growing), more than the
    // difference being measured; slices spread all of that over both modes alike.
    const writeKey = await newKey('bench-writes');
    const servers = {} as Record<Mode, { child: Child; url: string }>;
    for (const mode of ['off', 'on'] as const) {
      const modePort = await freePort();
      const prof = opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.join(ROOT, 'bench', 'results', `webhooks-profile-writes-${mode}`)}`] : [];
      const child = await serve(
        // node-postgres names its connections after PGAPPNAME: each mode's backends are found by it.
        { PETSTORE_EVENTS: mode === 'off' ? 'false' : 'true', PETSTORE_WEBHOOK_WORKER: 'false', PGAPPNAME: `petstore-bench-${mode}` },
        prof, modePort, `service-${mode}`,
      );
      servers[mode] = { child, url: `http://127.0.0.1:${modePort}` };
    }
    await post(writeKey, '/v1/webhook-endpoints', { url: receiver.url }, servers.on.url);
    /** PostgreSQL: the backends serving a mode's server, whose CPU each slice measures. */
    const backendPids = async (mode: Mode): Promise<number[] | undefined> => {
      if (opts.store !== 'postgres') return undefined;
      const admin = new pg.Client({ connectionString: benchAdminUrl() });
      await admin.connect();
      try {
        return (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [`petstore-bench-${mode}`])).rows.map((r) => r.pid);
      } finally {
        await admin.end();
      }
    };
    const slice = async (mode: Mode, seconds: number) => {
      const databasePids = await backendPids(mode);
      return runLoad({
        url: servers[mode].url, connections: CONNECTIONS, duration: seconds, requests: [petRequest(writeKey)], serverPid: servers[mode].child.pid,
        ...(databasePids ? { databasePids } : {}),
      });
    };
    // Warm-up: the first ~10 s of load ran at half the rate of the rest on this VM, in both modes.
    for (let i = 0; i < WARMUP / 2; i++) await slice(i % 2 === 0 ? 'off' : 'on', 2);
    const runs: Array<{ mode: Mode; load: LoadResult }> = [];
    for (let block = 0; block < BLOCKS; block++) {
      for (const mode of ['off', 'on', 'on', 'off'] as const) {
        const load = await slice(mode, SECONDS);
        checkLoad(`POST /v1/pets events ${mode}`, load);
        runs.push({ mode, load });
      }
    }
    for (const mode of ['off', 'on'] as const) await stopChild(servers[mode].child);
    const of = (mode: Mode) => runs.filter((r) => r.mode === mode).map((r) => r.load);
    const total = (mode: Mode) => {
      const loads = of(mode);
      const requests = loads.reduce((a, l) => a + l.requests, 0);
      const seconds = loads.reduce((a, l) => a + l.durationSec, 0);
      const p99 = Math.max(...loads.map((l) => l.latencyMs.p99));
      const cpu = loads.reduce((a, l) => a + l.serverCpuPct, 0) / loads.length;
      const others = loads.reduce((a, l) => a + l.otherCpuPct, 0) / loads.length;
      const pgUs = loads.reduce((a, l) => a + (l.databaseCpuUsPerRequest ?? NaN) * l.requests, 0) / requests;
      const serverUs = loads.reduce((a, l) => a + l.serverCpuUsPerRequest * l.requests, 0) / requests;
      return { reqPerSec: requests / seconds, p99, cpu, others, pgUs, serverUs, slices: loads.map((l) => Math.round(l.reqPerSec)) };
    };
    const totals = { off: total('off'), on: total('on') };
    for (const mode of ['off', 'on'] as const) log(`POST /v1/pets events ${mode}: slices ${totals[mode].slices.join(' ')} req/s`);
    const ratio = totals.on.reqPerSec / totals.off.reqPerSec;

    const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
    const rows = [
      '| measure | value | target | verdict |',
      '|---|---:|---:|---|',
      ...(drain ? [`| drain: ${EVENTS} deliveries, one process, one endpoint | ${Math.round(drain.rate)}/s (${drain.seconds.toFixed(2)} s) | ≥ ${DRAIN_TARGET}/s | ${verdict(drain.rate >= DRAIN_TARGET)} |`] : []),
      ...(['off', 'on'] as const).map((mode) => `| POST /v1/pets, events ${mode} (${CONNECTIONS} conns, ${runs.length / 2} slices of ${SECONDS} s) | ${Math.round(totals[mode].reqPerSec)} req/s, worst slice p99 ${totals[mode].p99.toFixed(1)} ms, server CPU ${Math.round(totals[mode].cpu)} % (${totals[mode].serverUs.toFixed(1)} µs/req)${Number.isNaN(totals[mode].pgUs) ? '' : `, PostgreSQL backends ${totals[mode].pgUs.toFixed(1)} µs/req`}, others ${Math.round(totals[mode].others)} % | | |`),
      `| POST /v1/pets, events on (one endpoint) / off | ${(100 * ratio).toFixed(1)} % | ≥ ${100 * WRITE_TARGET_RATIO} % | ${verdict(ratio >= WRITE_TARGET_RATIO)} |`,
    ];
    process.stdout.write(`\n### Webhooks bench (${opts.store}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((n) => n.toFixed(1)).join(' ')})\n\n${rows.join('\n')}\n`);
  } finally {
    await stopAllChildren();
    await receiver.close();
    await database.drop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const deadline = setTimeout(() => {
  log(`gave up after ${DEADLINE_MS / 1000} s`);
  void stopAllChildren().finally(() => process.exit(1));
}, DEADLINE_MS);
deadline.unref();
main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    void stopAllChildren().finally(() => process.exit(1));
  },
);
