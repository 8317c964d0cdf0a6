// `npm run bench`: load-tests the production build (dist/, via bin/petstore.js) against a
// bare node:http "ceiling" measured in the same run on the same machine, and reports every
// scenario as a ratio to it. Writes bench/results/latest.{json,md} and prints the table.
//
//   npm run bench                          # default run, < 5 min
//   npm run bench -- --only list20,create  # a subset (the ceiling always runs)
//   npm run bench -- --duration 10         # seconds per measured run (default 5)
//   npm run bench -- --soak                # adds the ~1M-request RSS leak check (long)
//   npm run bench -- --only list20 --cpu-prof   # service runs under --cpu-prof; summary printed
//   npm run bench -- --no-pin              # let the scheduler place processes (default: bench CPU 0, servers CPU 1)
//   npm run bench -- --store postgres      # a fresh PostgreSQL database (PETSTORE_BENCH_POSTGRES_URL admin URL), dropped after
//   npm run bench -- --log-level info      # the service's log level (default warn; info is the shipped default)
//   npm run bench -- --only defaults       # SQLite: list20 and get-by-id as shipped (info) vs at warn, side by side (info, warn, warn, info)
//   npm run bench -- --only webhooks       # POST /v1/pets with events on vs off, and the webhook drain rate (bench/webhooks.ts)
// A saved profile can be summarized again with bench/cpuprofile-summary.ts.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { resolveProfile, summarizeCpuProfile } from './cpuprofile-summary.js';
import { type AcRequest, type LoadResult, runLoad, stopCurrentLoad } from './lib/load.js';
import {
  type Child,
  freePort,
  hasTaskset,
  isRunning,
  pinToCpu,
  readMachineCpu,
  readMemory,
  RssSampler,
  startChild,
  stopAllChildren,
  stopChild,
  ticksPerSecond,
  waitForHttp,
} from './lib/procs.js';
import {
  errorSummary,
  machineInfo,
  machineLine,
  markdownTable,
  median,
  type Row,
  rowHasErrors,
  type Target,
  targetsTable,
  type Verdict,
} from './lib/report.js';
import { type Credentials, type SeedResult, seedStore } from './lib/seed.js';
import { benchAdminUrl, createPostgresDatabase, DEFAULT_ADMIN_URL, serviceEnv } from './lib/service.js';
import { PATCH_PAIRS, patchPostPairs } from './patch-pairs.js';
import { measureTracing, startTracingServices, stopTracingServices, type TracingService } from './tracing.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// PETSTORE_BENCH_SERVICE_ROOT: measure another checkout's build (a worktree of an earlier
// commit) with this harness, for side-by-side runs (bench/side-by-side.sh).
const SERVICE_ROOT = process.env.PETSTORE_BENCH_SERVICE_ROOT || ROOT;
const BIN = path.join(SERVICE_ROOT, 'bin', 'petstore.js');
// PETSTORE_BENCH_NODE_ARGS="--flag …": Node or V8 flags for the measured service (V8's are refused in NODE_OPTIONS).
const NODE_ARGS = (process.env.PETSTORE_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const RESULTS = path.join(ROOT, 'bench', 'results');

const CATALOG_PETS = 100_000;
const OTHER_PETS = 1_000;
const PAGE = 20;
const DEEP_PAGE_NUMBER = 5_000;
const CONNECTIONS = [1, 50] as const;
const WARMUP_CONNECTIONS = 50;

const SCENARIO_IDS = ['list20', 'list100-available', 'deep-page', 'create', 'get-by-id', 'mixed', 'patch', 'inventory', 'inventory-10', 'defaults', 'tracing', 'webhooks', 'stream-fanout', 'soak'] as const;
type ScenarioId = (typeof SCENARIO_IDS)[number];


const HELP = `Usage: npm run bench -- [options]

  --only <ids>        Comma-separated scenarios (repeatable): ${SCENARIO_IDS.join(', ')}
  --duration <s>      Seconds per measured run (default 5)
  --warmup <s>        Seconds of warm-up per scenario, at ${WARMUP_CONNECTIONS} connections (default 1)
  --soak              Also run the leak check: RSS after 100k vs after --soak-requests (default 1,000,000)
  --soak-requests <n> Total requests of the soak (default 1000000)
  --cpu-prof          Run the service under node --cpu-prof and print a summary of the profile
  --no-pin            Do not pin the bench to CPU 0 and the servers to CPU 1
  --store <s>         sqlite (default) or postgres: a fresh database created through the admin URL
                      PETSTORE_BENCH_POSTGRES_URL (default ${DEFAULT_ADMIN_URL}) and dropped after
  --log-level <l>     The service's PETSTORE_LOG_LEVEL (default warn; the shipped default is info)
  --set NAME=VALUE    A PETSTORE_* setting for the service (repeatable), e.g. --set PETSTORE_PG_POOL_MAX=4
  -h, --help

The defaults scenario (SQLite only; in the default run there) starts two more services on the same
store, one with no log level configured (info, as shipped) and one at warn, and measures list20 and
get-by-id on each, one after the other, reporting the loss of info against warn.

When create and patch both run, seven pairs of rounds follow on the same service (POST then PATCH,
PATCH then POST, …): the PATCH target is the median of their PATCH ÷ POST req/s (bench/patch-pairs.ts).

The tracing scenario starts three more services on the same store (tracing off; on at 100 % to a
local OTLP receiver, bench/otlp-sink.ts on the bench's CPU; on at parent-based 1 %), warms the three
up together (10 s of each scenario on all three at once: at 1 % the sampled path is optimised late),
and measures list20, get-by-id and create on each, in the order off, 100, 1, 1, 100, off, each row with its cost;
then nine paired rounds with the three loaded at once, whose median CPU-per-request ratio to off
is the steadier figure on a noisy machine.`;

type StoreKind = 'sqlite' | 'postgres';
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

interface Options {
  scenarios: ScenarioId[];
  /** Extra PETSTORE_* settings for the service (--set). */
  settings: Record<string, string>;
  store: StoreKind;
  logLevel: string;
  duration: number;
  warmup: number;
  soakRequests: number;
  cpuProf: boolean;
  pin: boolean;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      only: { type: 'string', multiple: true },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      soak: { type: 'boolean' },
      'soak-requests': { type: 'string' },
      'cpu-prof': { type: 'boolean' },
      'no-pin': { type: 'boolean' },
      store: { type: 'string' },
      'log-level': { type: 'string' },
      set: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const number = (raw: string | undefined, name: string, fallback: number, min: number) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min) throw new Error(`--${name} must be a number ≥ ${min}, got "${raw}"`);
    return n;
  };
  const store = values.store ?? 'sqlite';
  if (store !== 'sqlite' && store !== 'postgres') throw new Error(`--store must be sqlite or postgres, got "${store}"`);
  const logLevel = values['log-level'] ?? 'warn';
  if (!LOG_LEVELS.includes(logLevel)) throw new Error(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  // The defaults comparison is SQLite's (issue 16); a PostgreSQL run leaves it out.
  let scenarios: ScenarioId[] = SCENARIO_IDS.filter((id) => (id !== 'soak' || values.soak === true) && (id !== 'defaults' || store === 'sqlite'));
  if (values.only) {
    const wanted = values.only.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
    for (const id of wanted) {
      if (!(SCENARIO_IDS as readonly string[]).includes(id)) throw new Error(`unknown scenario "${id}"; known: ${SCENARIO_IDS.join(', ')}`);
    }
    scenarios = SCENARIO_IDS.filter((id) => wanted.includes(id) || (id === 'soak' && values.soak === true));
    if (store === 'postgres' && scenarios.includes('defaults')) throw new Error('the defaults scenario runs on SQLite only');
  }
  const settings: Record<string, string> = {};
  for (const pair of values.set ?? []) {
    const eq = pair.indexOf('=');
    if (eq < 1 || !pair.startsWith('PETSTORE_')) throw new Error(`--set takes PETSTORE_NAME=value, got "${pair}"`);
    settings[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return {
    scenarios,
    settings,
    store,
    logLevel,
    duration: number(values.duration, 'duration', 5, 1),
    warmup: number(values.warmup, 'warmup', 1, 0),
    soakRequests: Math.round(number(values['soak-requests'], 'soak-requests', 1_000_000, 200_000)),
    cpuProf: values['cpu-prof'] === true,
    pin: values['no-pin'] !== true,
  };
}

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

/** Set while the fresh store exists, so a Ctrl-C removes it too. */
let removeTempDir: (() => void) | undefined;
/** Set while the bench's PostgreSQL database exists. */
let dropDatabase: (() => Promise<void>) | undefined;

/** Whether a service at this log level writes a line per request (then its stdout goes to a file, not through the bench). */
const logsRequests = (level: string) => ['info', 'debug', 'trace'].includes(level);

// ---------------------------------------------------------------------------------------
// Requests

const auth = (c: Credentials) => ({ authorization: `Bearer ${c.key}` });
const get = (urlPath: string, c: Credentials): AcRequest => ({ method: 'GET', path: urlPath, headers: auth(c) });
const NEW_PET = JSON.stringify({ name: 'Bench Pet', categoryId: 3, status: 'available' });
const post = (c: Credentials): AcRequest => ({
  method: 'POST',
  path: '/v1/pets',
  headers: { ...auth(c), 'content-type': 'application/json' },
  body: NEW_PET,
});

/** mulberry32: a seeded PRNG, so the random request mixes are the same every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Context {
  baseUrl: string;
  seed: SeedResult;
  /** Path (with the signed cursor) of page 5 000 of 20; set when a scenario needs it. */
  deepPath: string | undefined;
  /** PostgreSQL runs: the pids of the bench database's backends now. */
  databasePids?: () => Promise<number[]>;
}

/**
 * A fixed array of `n` random pet ids: pre-encoded by autocannon, unlike a per-request
 * setupRequest. 100, not more: autocannon's own cost per request grows with the length of
 * its request list (1 000 distinct requests cost it ~2 µs more per request than 100, which at
 * 50 connections made the row measure the load generator: 0.66× instead of 0.79× with the
 * service's CPU per request unchanged), while the service caches any of them alike.
 */
function getByIdRequests(ctx: Context, n = 100, seed = 1): AcRequest[] {
  const rand = prng(seed);
  const ids = ctx.seed.catalogIds;
  return Array.from({ length: n }, () => get(`/v1/pets/${ids[Math.floor(rand() * ids.length)]}`, ctx.seed.catalog));
}

/** Pets each PATCH connection renames, in turn. */
const PATCH_PETS_PER_CONNECTION = 50;
let patchRuns = 0;

/**
 * PATCH /v1/pets/{petId} renaming random catalog pets: connection k renames its own 50 (drawn at
 * random, no pet shared between connections) to names of this run, then back to other names of
 * this run, and so on, so every request changes its pet and writes (the pet, its pet.updated
 * event, a durable commit). Each connection's 100 requests are built and encoded once: built
 * per request (a new id and name each time), autocannon spent ~14 µs more CPU per request, on
 * the core PostgreSQL shares, than for a POST (docs/performance.md, "PATCH, sixth round").
 */
function patchRequests(ctx: Context): (client: number) => AcRequest[] {
  const run = ++patchRuns;
  const ids = shuffled(ctx.seed.catalogIds, prng(4));
  const headers = { ...auth(ctx.seed.catalog), 'content-type': 'application/merge-patch+json' };
  return (client) => {
    const mine = ids.slice(client * PATCH_PETS_PER_CONNECTION, (client + 1) * PATCH_PETS_PER_CONNECTION);
    return ['a', 'b'].flatMap((turn) =>
      mine.map((id): AcRequest => ({ method: 'PATCH', path: `/v1/pets/${id}`, headers, body: JSON.stringify({ name: `Renamed ${run}-${client}${turn}` }) })),
    );
  };
}

/** A copy of `items` in random order (Fisher–Yates). */
function shuffled<T>(items: readonly T[], rand: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** 90 % reads on the catalog (first pages, by id, status filter, deep page), 10 % POSTs on the writer, shuffled. */
function mixedRequests(ctx: Context): AcRequest[] {
  const { catalog, writer } = ctx.seed;
  const rand = prng(2);
  const requests: AcRequest[] = [
    ...Array.from({ length: 400 }, () => get(`/v1/pets?limit=${PAGE}`, catalog)),
    ...getByIdRequests(ctx, 250, 3),
    ...Array.from({ length: 150 }, () => get('/v1/pets?limit=100&status=available', catalog)),
    ...Array.from({ length: 100 }, () => get(requireDeepPath(ctx), catalog)),
    ...Array.from({ length: 100 }, () => post(writer)),
  ];
  for (let i = requests.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [requests[i], requests[j]] = [requests[j]!, requests[i]!];
  }
  return requests;
}

function requireDeepPath(ctx: Context): string {
  if (!ctx.deepPath) throw new Error('deep page path not computed');
  return ctx.deepPath;
}

// ---------------------------------------------------------------------------------------
// Pre-flight checks: one request per scenario through fetch, verifying more than the status.

interface Pet {
  id: number;
  name: string;
  categoryId: number;
  status?: string;
}

async function call(ctx: Context, c: Credentials, urlPath: string, init: RequestInit = {}) {
  const res = await fetch(ctx.baseUrl + urlPath, { ...init, headers: { ...auth(c), ...(init.headers as Record<string, string>) } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: (): unknown => JSON.parse(text) };
}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`pre-flight check failed: ${message}`);
}

function expectIds(pets: Pet[], expected: number[], what: string): void {
  check(pets.length === expected.length, `${what}: ${pets.length} pets, expected ${expected.length}`);
  check(
    pets.every((p, i) => p.id === expected[i]),
    `${what}: ids ${pets[0]?.id}…${pets.at(-1)?.id}, expected ${expected[0]}…${expected.at(-1)}`,
  );
}

/** Follows Link headers from the first page to page `n` (cursors are signed: they cannot be built). */
async function walkToPage(ctx: Context, n: number): Promise<string> {
  const ids = ctx.seed.catalogIds;
  let urlPath = `/v1/pets?limit=${PAGE}`;
  for (let page = 1; ; page++) {
    const res = await call(ctx, ctx.seed.catalog, urlPath);
    check(res.status === 200, `page ${page}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
    expectIds(res.json() as Pet[], ids.slice((page - 1) * PAGE, page * PAGE), `page ${page}`);
    if (page === n) return urlPath;
    const next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    check(next !== undefined, `page ${page} has no rel="next" link`);
    urlPath = next;
  }
}

const PREFLIGHT: Record<Exclude<ScenarioId, 'soak' | 'defaults' | 'tracing' | 'webhooks' | 'stream-fanout'>, (ctx: Context) => Promise<void>> = {
  async list20(ctx) {
    const res = await call(ctx, ctx.seed.catalog, `/v1/pets?limit=${PAGE}`);
    check(res.status === 200, `list20: HTTP ${res.status}`);
    expectIds(res.json() as Pet[], ctx.seed.catalogIds.slice(0, PAGE), 'list20');
    check(/rel="next"/.test(res.headers.get('link') ?? ''), 'list20: no next link');
  },
  async 'list100-available'(ctx) {
    const res = await call(ctx, ctx.seed.catalog, '/v1/pets?limit=100&status=available');
    check(res.status === 200, `list100-available: HTTP ${res.status}`);
    const pets = res.json() as Pet[];
    check(pets.length === 100 && pets.every((p) => p.status === 'available'), 'list100-available: expected 100 available pets');
  },
  async 'deep-page'(ctx) {
    const res = await call(ctx, ctx.seed.catalog, requireDeepPath(ctx));
    check(res.status === 200, `deep-page: HTTP ${res.status}`);
    const start = (DEEP_PAGE_NUMBER - 1) * PAGE;
    expectIds(res.json() as Pet[], ctx.seed.catalogIds.slice(start, start + PAGE), 'deep-page');
  },
  async create(ctx) {
    const res = await call(ctx, ctx.seed.writer, '/v1/pets', { method: 'POST', body: NEW_PET, headers: { 'content-type': 'application/json' } });
    check(res.status === 201, `create: HTTP ${res.status} ${res.text.slice(0, 200)}`);
    const pet = res.json() as Pet;
    check(Number.isInteger(pet.id) && pet.name === 'Bench Pet', `create: unexpected body ${res.text}`);
  },
  async 'get-by-id'(ctx) {
    const id = ctx.seed.catalogIds[12_345]!;
    const res = await call(ctx, ctx.seed.catalog, `/v1/pets/${id}`);
    check(res.status === 200 && (res.json() as Pet).id === id, `get-by-id: HTTP ${res.status} ${res.text.slice(0, 200)}`);
  },
  async mixed(ctx) {
    await PREFLIGHT.list20(ctx);
    await PREFLIGHT['get-by-id'](ctx);
  },
  async patch(ctx) {
    const id = ctx.seed.catalogIds[23_456]!;
    const res = await call(ctx, ctx.seed.catalog, `/v1/pets/${id}`, { method: 'PATCH', body: '{"name":"Preflight"}', headers: { 'content-type': 'application/merge-patch+json' } });
    check(res.status === 200 && (res.json() as Pet).name === 'Preflight', `patch: HTTP ${res.status} ${res.text.slice(0, 200)}`);
  },
  async inventory(ctx) {
    await expectInventory(ctx, ctx.seed.catalog, CATALOG_PETS);
  },
  async 'inventory-10'(ctx) {
    await expectInventory(ctx, ctx.seed.tiny, 10);
  },
};

async function expectInventory(ctx: Context, account: Credentials, total: number): Promise<void> {
  const res = await call(ctx, account, '/v1/store/inventory');
  check(res.status === 200 && (res.json() as { total: number }).total === total, `inventory: HTTP ${res.status} ${res.text.slice(0, 200)} (expected total ${total})`);
}

// ---------------------------------------------------------------------------------------

interface Measured {
  rows: Row[];
  /** Best ceiling req/s per connection count (measured at the start and at the end of the run). */
  ceiling: Map<number, number>;
  soak?: { rssAfterFirstMb: number; rssAfterAllMb: number; firstRequests: number; totalRequests: number };
  /** PATCH req/s ÷ POST req/s of each alternated pair (patch-pairs.ts), when both ran. */
  patchPairs?: number[];
}

/** The servers get CPU 1 and the bench CPU 0: left alone, the scheduler sometimes puts the
 * client and the server on the same core, which halves the 50-connection ceiling at random. */
const SERVER_CPU = 1;
const BENCH_CPU = 0;

async function main(): Promise<number> {
  const opts = parseOptions(process.argv.slice(2));
  const wall0 = Date.now();
  if (!fs.existsSync(path.join(SERVICE_ROOT, 'dist', 'cli', 'main.js'))) throw new Error(`${SERVICE_ROOT}/dist/ is missing: run \`npm run build\` first`);

  // Shared machines: say so up front when something else is already using the CPU.
  const idle0 = readMachineCpu();
  await sleep(1_000);
  const idle1 = readMachineCpu();
  const busyBeforePct = idle0 && idle1 ? (100 * (idle1.busy - idle0.busy)) / ticksPerSecond : 0;
  if (busyBeforePct > NOISY_OTHER_CPU_PCT) log(`warning: before starting, other processes used ${Math.round(busyBeforePct)}% of a core; results will be noisy`);

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'petstore-bench-'));
  removeTempDir = () => fs.rmSync(tmp, { recursive: true, force: true });
  const machine = machineInfo(ROOT, tmp);
  const dbFile = path.join(tmp, 'petstore.db');
  const adminUrl = benchAdminUrl();
  const profileDir = path.join(RESULTS, 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
  try {
    const port = await freePort();
    let database = dbFile;
    if (opts.store === 'postgres') {
      const created = await createPostgresDatabase(adminUrl);
      database = created.url;
      dropDatabase = () => {
        dropDatabase = undefined;
        return created.drop();
      };
    }
    const env = serviceEnv(port, database, { PETSTORE_LOG_LEVEL: opts.logLevel, ...opts.settings });

    const shownDatabase = opts.store === 'postgres' ? database.replace(/\/\/[^@/]*@/, '//') : dbFile;
    log(`seeding ${shownDatabase}: accounts and keys via the CLI, ${CATALOG_PETS.toLocaleString('en-US')} pets in one transaction`);
    const seed = await seedStore({ cli: [BIN], env, database, catalogPets: CATALOG_PETS, otherPets: OTHER_PETS });
    log(`seeded in ${(seed.seedMs / 1000).toFixed(1)} s; catalog statuses ${JSON.stringify(seed.catalogStatusCounts)}`);

    const pinned = opts.pin && os.cpus().length >= 2 && hasTaskset() && pinToCpu(process.pid, BENCH_CPU);
    if (opts.pin && !pinned) log('not pinning CPUs (needs 2+ cores and taskset)');
    const serverCpu = pinned ? SERVER_CPU : undefined;

    const serverArgs = [...NODE_ARGS, ...(opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), BIN, 'serve'];
    const serviceLog = logsRequests(opts.logLevel) ? path.join(tmp, 'service.log') : undefined;
    const service = startChild('service', serverArgs, env, { cwd: SERVICE_ROOT, forward: true, cpu: serverCpu, ...(serviceLog ? { stdoutFile: serviceLog } : {}) });
    const ctx: Context = { baseUrl: `http://127.0.0.1:${port}`, seed, deepPath: undefined };
    if (opts.store === 'postgres') {
      const name = new URL(database).pathname.slice(1);
      ctx.databasePids = async () => {
        const admin = new pg.Client({ connectionString: adminUrl });
        await admin.connect();
        try {
          const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name]);
          return rows.map((r) => r.pid);
        } finally {
          await admin.end();
        }
      };
    }
    await waitForHttp(service, `${ctx.baseUrl}/readyz`);
    const rss = new RssSampler(service.pid);
    log(`service ready on ${ctx.baseUrl} (pid ${service.pid}${pinned ? `, CPU ${SERVER_CPU}; bench on CPU ${BENCH_CPU}` : ''})`);

    // The ceiling answers with the real first page's exact bytes and content-type.
    const page = await call(ctx, seed.catalog, `/v1/pets?limit=${PAGE}`);
    check(page.status === 200, `first page: HTTP ${page.status}`);
    const bodyFile = path.join(tmp, 'page.json');
    fs.writeFileSync(bodyFile, page.text);
    const contentType = page.headers.get('content-type') ?? 'application/json; charset=utf-8';
    const pageBytes = Buffer.byteLength(page.text);
    const ceilingPort = await freePort();
    const ceilingServer = startChild(
      'ceiling',
      ['--import', 'tsx', path.join(ROOT, 'bench', 'ceiling-server.ts'), bodyFile],
      { ...process.env, PORT: String(ceilingPort), CONTENT_TYPE: contentType },
      { cwd: ROOT, forward: true, cpu: serverCpu },
    );
    const ceilingUrl = `http://127.0.0.1:${ceilingPort}`;
    await waitForHttp(ceilingServer, `${ceilingUrl}/v1/pets?limit=${PAGE}`);
    const same = await fetch(`${ceilingUrl}/v1/pets?limit=${PAGE}`).then((r) => r.text());
    check(same === page.text, 'the ceiling answers a different body than the page');

    const needsDeep = opts.scenarios.some((s) => s === 'deep-page' || s === 'mixed' || s === 'soak');
    if (needsDeep) {
      const t0 = Date.now();
      ctx.deepPath = await walkToPage(ctx, DEEP_PAGE_NUMBER);
      log(`walked to page ${DEEP_PAGE_NUMBER} of ${PAGE} in ${((Date.now() - t0) / 1000).toFixed(1)} s (ids checked on every page)`);
    }

    const defaultsServices = opts.scenarios.includes('defaults') ? await startDefaultsServices(env, tmp, serverCpu) : undefined;
    // Issue 28: the same store served with tracing off, on at 100 % and at parent-based 1 %.
    const tracing = opts.scenarios.includes('tracing')
      ? await startTracingServices(BIN, SERVICE_ROOT, env, { server: serverCpu, bench: pinned ? BENCH_CPU : undefined })
      : undefined;
    const measured = await measure(opts, ctx, service, rss, { child: ceilingServer, url: ceilingUrl }, defaultsServices, tracing?.services);
    for (const s of defaultsServices ?? []) await stopChild(s.child);
    if (tracing) await stopTracingServices(tracing);

    const memory = readMemory(service.pid);
    rss.stop();
    const serverMemory = {
      hwmMb: Math.max(rss.hwmKb, memory?.hwmKb ?? 0) / 1024,
      peakSampledRssMb: rss.peakRssKb / 1024,
      finalRssMb: (memory?.rssKb ?? NaN) / 1024,
    };
    await stopChild(service);

    let profileSummary: string | undefined;
    if (opts.cpuProf) {
      const file = resolveProfile(profileDir);
      profileSummary = summarizeCpuProfile(file);
      log(`CPU profile: ${path.relative(ROOT, file)}`);
    }

    const targets = evaluateTargets(measured, serverMemory.hwmMb, opts);
    const storeLine = opts.store === 'postgres'
      ? `Store: PostgreSQL (${await postgresVersion(database)}), a fresh database on ${adminUrl.replace(/\/\/[^@/]*@/, '//').replace(/\/[^/]*$/, '')}, dropped after the run; the CPU of its backends serving the service is shown apart ("+ PostgreSQL"), not in "other".`
      : 'Store: SQLite (a fresh file in the temp folder).';
    const wallSec = (Date.now() - wall0) / 1000;
    const invalid = measured.rows.filter(rowHasErrors);
    const noisy = measured.rows.filter((r) => r.load.otherCpuPct > NOISY_OTHER_CPU_PCT);

    // Issue 19's rows (event-log cost on writes, webhook drain rate): bench/webhooks.ts, after the
    // HTTP scenarios, on the same store, with its own servers and database.
    const webhooksSection = opts.scenarios.includes('webhooks') ? runWebhooksBench(opts.store) : undefined;
    const fanoutSection = opts.scenarios.includes('stream-fanout') ? runFanoutBench() : undefined;

    const md = [
      `# Petstore API benchmark`,
      '',
      `Machine: ${machineLine(machine)}; CPU in use by others just before the run: ${Math.round(busyBeforePct)}% of a core.`,
      '',
      `${storeLine} Service log level: ${opts.logLevel}${NODE_ARGS.length ? `; node flags ${NODE_ARGS.join(' ')}` : ''}${Object.keys(opts.settings).length ? `; settings ${Object.entries(opts.settings).map(([k, v]) => `${k}=${v}`).join(', ')}` : ''}. Catalogue: one account with ${CATALOG_PETS.toLocaleString('en-US')} pets (and ${OTHER_PETS.toLocaleString('en-US')} for each of two others, interleaved).`,
      '',
      `Each row: ${opts.duration} s of load from autocannon in the bench process over loopback, after a ${opts.warmup} s warm-up at ${WARMUP_CONNECTIONS} connections per scenario` +
        `${pinned ? `; service and ceiling pinned to CPU ${SERVER_CPU}, bench to CPU ${BENCH_CPU}` : '; no CPU pinning'}. ` +
        `Ceiling: bare node:http in its own process answering the real ${PAGE}-pet page (${pageBytes} bytes, \`${contentType}\`), measured at the start and at the end; ` +
        `× ceiling = req/s ÷ the better of the two at the same connection count. Latency from every response (µs resolution). ` +
        `CPU columns: % of one core used during the run by the server (all threads), the bench process, and everything else on the machine ` +
        `(other processes, interrupts; above ${NOISY_OTHER_CPU_PCT}% the row is marked noisy). ` +
        `Server CPU µs/req: the server's CPU time per completed request, which depends less on the client's speed than req/s does.`,
      '',
      markdownTable(measured.rows),
      '',
      `Service memory: peak RSS (VmHWM) ${serverMemory.hwmMb.toFixed(1)} MB; highest sampled VmRSS ${serverMemory.peakSampledRssMb.toFixed(1)} MB; at the end ${serverMemory.finalRssMb.toFixed(1)} MB.`,
      '',
      '## Targets (reported, not asserted)',
      '',
      targetsTable(targets),
      '',
      `Wall time: ${wallSec.toFixed(0)} s.` +
        (invalid.length ? ` **INVALID: errors in ${invalid.map((r) => `${r.scenario} @${r.connections}`).join(', ')}.**` : '') +
        (noisy.length ? ` Noisy rows (other CPU load): ${noisy.map((r) => `${r.id} @${r.connections}`).join(', ')}.` : ''),
      ...(webhooksSection ? ['', webhooksSection] : []),
      ...(fanoutSection ? ['', fanoutSection] : []),
      ...(profileSummary ? ['', '## CPU profile of the service', '', '```', profileSummary, '```'] : []),
      '',
    ].join('\n');

    fs.mkdirSync(RESULTS, { recursive: true });
    const json = {
      machine: { ...machine, busyBeforePct },
      settings: {
        ...opts,
        pinned,
        catalogPets: CATALOG_PETS,
        deepPageNumber: DEEP_PAGE_NUMBER,
        connections: CONNECTIONS,
        warmupConnections: WARMUP_CONNECTIONS,
      },
      ceiling: { bodyBytes: pageBytes, contentType, reqPerSec: Object.fromEntries(measured.ceiling) },
      seed: { catalogStatusCounts: seed.catalogStatusCounts, seedMs: seed.seedMs, accounts: [seed.catalog, seed.writer, ...seed.others].map((a) => a.name) },
      rows: measured.rows,
      soak: measured.soak,
      patchPairs: measured.patchPairs,
      serverMemory,
      targets,
      wallSec,
      valid: invalid.length === 0,
      noisyRows: noisy.map((r) => `${r.id}@${r.connections}`),
    };
    // latest.* is what people read; the dated copy keeps a subset or profiling run from erasing a full one.
    const stamp = machine.date.replace(/[:.]/g, '-');
    for (const name of ['latest', stamp]) {
      fs.writeFileSync(path.join(RESULTS, `${name}.json`), `${JSON.stringify(json, null, 2)}\n`);
      fs.writeFileSync(path.join(RESULTS, `${name}.md`), md);
    }
    process.stdout.write(`\n${md}\n`);
    log(`wrote bench/results/latest.{md,json} (copies: ${stamp}.{md,json})`);
    return invalid.length ? 1 : 0;
  } finally {
    await stopAllChildren();
    removeTempDir?.();
    removeTempDir = undefined;
    await dropDatabase?.().catch((err: unknown) => log(`could not drop the bench database: ${(err as Error).message}`));
  }
}

/** Runs bench/webhooks.ts on `store` and returns its Markdown section (or why it failed). */
function runWebhooksBench(store: 'sqlite' | 'postgres'): string {
  log('webhooks: bench/webhooks.ts (outbox cost on POST /v1/pets, drain rate of a 10 000-event backlog)');
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'webhooks.ts'), '--store', store], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 12 * 60_000,
  });
  const section = result.stdout.slice(result.stdout.indexOf('### Webhooks bench')).trim();
  return result.status === 0 && section.startsWith('###') ? section.replace(/^###/, '##') : `## Webhooks bench\n\nFailed (exit ${result.status ?? result.signal}).`;
}

/** bench/stream-fanout.ts: 1 000 open event streams on one instance (SQLite). */
function runFanoutBench(): string {
  log('stream-fanout: bench/stream-fanout.ts (1 000 open GET /v1/events/stream, events delivered, commit to receipt, memory per stream)');
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'stream-fanout.ts')], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 5 * 60_000 });
  const section = result.stdout.slice(result.stdout.indexOf('### Stream fan-out bench')).trim();
  return result.status === 0 && section.startsWith('###') ? section.replace(/^###/, '##') : `## Stream fan-out bench\n\nFailed (exit ${result.status ?? result.signal}).`;
}

async function postgresVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    return `PostgreSQL ${rows[0]!.v}`;
  } finally {
    await client.end();
  }
}

interface DefaultsService {
  level: 'info' | 'warn';
  child: Child;
  url: string;
}

/**
 * Two more services on the same store for the defaults comparison: one with no log level set
 * (info, as shipped; its stdout goes to a file, as an operator's would) and one at warn.
 */
async function startDefaultsServices(env: NodeJS.ProcessEnv, tmp: string, cpu: number | undefined): Promise<DefaultsService[]> {
  const started: DefaultsService[] = [];
  for (const level of ['info', 'warn'] as const) {
    const port = await freePort();
    const { PETSTORE_LOG_LEVEL: _level, ...rest } = env;
    const childEnv = { ...rest, PORT: String(port), ...(level === 'warn' ? { PETSTORE_LOG_LEVEL: 'warn' } : {}) };
    const child = startChild(`service-${level}`, [BIN, 'serve'], childEnv, {
      cwd: SERVICE_ROOT,
      forward: true,
      cpu,
      ...(level === 'info' ? { stdoutFile: path.join(tmp, 'service-info.log') } : {}),
    });
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(child, `${url}/readyz`);
    started.push({ level, child, url });
  }
  log(`defaults: services at info (nothing configured) pid ${started[0]!.child.pid} and at warn pid ${started[1]!.child.pid}`);
  return started;
}

/** Runs of one scenario on one service as one: totals, time-weighted CPU, the worse tail. */
function joinLoads(runs: LoadResult[]): LoadResult {
  const sum = (f: (r: LoadResult) => number) => runs.reduce((a, r) => a + f(r), 0);
  const requests = sum((r) => r.requests);
  const durationSec = sum((r) => r.durationSec);
  const byTime = (f: (r: LoadResult) => number) => sum((r) => f(r) * r.durationSec) / durationSec;
  const statusCodes: Record<string, number> = {};
  for (const r of runs) for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  return {
    connections: runs[0]!.connections,
    requests,
    durationSec,
    reqPerSec: requests / durationSec,
    latencyMs: {
      mean: sum((r) => r.latencyMs.mean * r.requests) / requests,
      p50: Math.max(...runs.map((r) => r.latencyMs.p50)),
      p99: Math.max(...runs.map((r) => r.latencyMs.p99)),
      max: Math.max(...runs.map((r) => r.latencyMs.max)),
    },
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    statusCodes,
    serverCpuPct: byTime((r) => r.serverCpuPct),
    benchCpuPct: byTime((r) => r.benchCpuPct),
    serverCpuUsPerRequest: sum((r) => r.serverCpuUsPerRequest * r.requests) / requests,
    otherCpuPct: byTime((r) => r.otherCpuPct),
  };
}

/** Other CPU use (% of one core) above which a row is flagged: something else was running. */
const NOISY_OTHER_CPU_PCT = 25;

async function measure(
  opts: Options,
  ctx: Context,
  service: Child,
  rss: RssSampler,
  ceilingServer: { child: Child; url: string },
  defaultsServices: DefaultsService[] | undefined,
  tracingServices: TracingService[] | undefined,
): Promise<Measured> {
  const rows: Row[] = [];
  const rssMb = () => (rss.sample()?.rssKb ?? NaN) / 1024;
  const pause = () => sleep(250); // let sockets close between runs

  const runCeiling = async (when: 'start' | 'end') => {
    // Same request bytes as the list20 scenario.
    const requests = () => [get(`/v1/pets?limit=${PAGE}`, ctx.seed.catalog)];
    const spec = { url: ceilingServer.url, serverPid: ceilingServer.child.pid };
    if (opts.warmup > 0) {
      log(`ceiling (${when}): warm-up ${opts.warmup} s`);
      await runLoad({ ...spec, connections: WARMUP_CONNECTIONS, duration: opts.warmup, requests: requests() });
    }
    for (const connections of CONNECTIONS) {
      await pause();
      const load = await runLoad({ ...spec, connections, duration: opts.duration, requests: requests() });
      rows.push({ id: `ceiling-${when}`, scenario: `ceiling (${when}): bare node:http, same body`, connections, load, ratio: undefined, serverRssMb: undefined });
      log(`ceiling (${when}) @${connections}: ${Math.round(load.reqPerSec)} req/s (server CPU ${Math.round(load.serverCpuPct)}%, bench ${Math.round(load.benchCpuPct)}%, other ${Math.round(load.otherCpuPct)}%)`);
    }
  };

  await runCeiling('start');

  const scenarios: {
    id: Exclude<ScenarioId, 'soak' | 'defaults' | 'tracing' | 'webhooks' | 'stream-fanout'>;
    title: string;
    requests: () => AcRequest[];
    /** Requests of each connection of one run, when they differ per connection. */
    perClient?: () => (client: number) => AcRequest[];
  }[] = [
    { id: 'list20', title: `GET /v1/pets?limit=${PAGE} (first page)`, requests: () => [get(`/v1/pets?limit=${PAGE}`, ctx.seed.catalog)] },
    { id: 'list100-available', title: 'GET /v1/pets?limit=100&status=available', requests: () => [get('/v1/pets?limit=100&status=available', ctx.seed.catalog)] },
    {
      id: 'deep-page',
      title: `GET /v1/pets?limit=${PAGE}&cursor=… (page ${DEEP_PAGE_NUMBER.toLocaleString('en-US')})`,
      requests: () => [get(requireDeepPath(ctx), ctx.seed.catalog)],
    },
    { id: 'create', title: 'POST /v1/pets (writer account)', requests: () => [post(ctx.seed.writer)] },
    { id: 'get-by-id', title: 'GET /v1/pets/{petId} (random ids)', requests: () => getByIdRequests(ctx) },
    { id: 'mixed', title: 'mixed 90% reads / 10% POST', requests: () => mixedRequests(ctx) },
    { id: 'patch', title: 'PATCH /v1/pets/{petId} (rename, random ids)', requests: () => [], perClient: () => patchRequests(ctx) },
    { id: 'inventory', title: `GET /v1/store/inventory (${CATALOG_PETS.toLocaleString('en-US')} pets)`, requests: () => [get('/v1/store/inventory', ctx.seed.catalog)] },
    { id: 'inventory-10', title: 'GET /v1/store/inventory (10 pets)', requests: () => [get('/v1/store/inventory', ctx.seed.tiny)] },
  ];

  for (const scenario of scenarios.filter((s) => opts.scenarios.includes(s.id))) {
    await PREFLIGHT[scenario.id](ctx);
    if (opts.warmup > 0) {
      log(`${scenario.id}: warm-up ${opts.warmup} s`);
      await runLoad({ url: ctx.baseUrl, connections: WARMUP_CONNECTIONS, duration: opts.warmup, requests: scenario.requests(), perClient: scenario.perClient?.(), serverPid: service.pid });
    }
    for (const connections of CONNECTIONS) {
      await pause();
      const databasePids = await ctx.databasePids?.();
      const load = await runLoad({
        url: ctx.baseUrl,
        connections,
        duration: opts.duration,
        requests: scenario.requests(),
        perClient: scenario.perClient?.(),
        serverPid: service.pid,
        ...(databasePids ? { databasePids } : {}),
      });
      if (!isRunning(service)) throw new Error(`the service exited during ${scenario.id} @${connections}:\n${service.tail()}`);
      const row: Row = { id: scenario.id, scenario: scenario.title, connections, load, ratio: undefined, serverRssMb: rssMb() };
      if (scenario.id === 'deep-page') {
        const first = rows.find((r) => r.id === 'list20' && r.connections === connections);
        row.note = first
          ? `first page ÷ this: ${(first.load.reqPerSec / load.reqPerSec).toFixed(2)}× req/s, p50 ${(load.latencyMs.p50 / first.load.latencyMs.p50).toFixed(2)}× (last page: no Link)`
          : 'last page (no Link)';
      }
      rows.push(row);
      log(
        `${scenario.id} @${connections}: ${Math.round(load.reqPerSec)} req/s, p99 ${load.latencyMs.p99.toFixed(2)} ms, errors ${errorSummary(load)} ` +
          `(server CPU ${Math.round(load.serverCpuPct)}% ${load.serverCpuUsPerRequest.toFixed(0)} µs/req, ` +
          `${load.databaseCpuUsPerRequest === undefined ? '' : `PostgreSQL ${Math.round(load.databaseCpuPct!)}% ${load.databaseCpuUsPerRequest.toFixed(0)} µs/req, `}` +
          `bench ${Math.round(load.benchCpuPct)}%, other ${Math.round(load.otherCpuPct)}%)`,
      );
    }
  }

  if (defaultsServices) {
    // Side by side, in the order info, warn, warn, info: each level's mean position is the same,
    // so a machine that speeds up or slows down during the pair (this VM's ceiling moved by 25 %
    // within one run) counts against neither. Each level's row joins its two runs.
    const connections = 50;
    for (const [id, title, requests] of [
      ['list20', `GET /v1/pets?limit=${PAGE}`, () => [get(`/v1/pets?limit=${PAGE}`, ctx.seed.catalog)]],
      ['get-by-id', 'GET /v1/pets/{petId}', () => getByIdRequests(ctx)],
    ] as const) {
      const runsOf = new Map<DefaultsService, LoadResult[]>();
      const [infoService, warnService] = defaultsServices as [DefaultsService, DefaultsService];
      for (const s of [infoService, warnService, warnService, infoService]) {
        const spec = { url: s.url, serverPid: s.child.pid };
        if (opts.warmup > 0 && !runsOf.has(s)) await runLoad({ ...spec, connections: WARMUP_CONNECTIONS, duration: opts.warmup, requests: requests() });
        await pause();
        const load = await runLoad({ ...spec, connections, duration: opts.duration, requests: requests() });
        runsOf.set(s, [...(runsOf.get(s) ?? []), load]);
        log(`defaults ${id} @${s.level}: ${Math.round(load.reqPerSec)} req/s, p99 ${load.latencyMs.p99.toFixed(2)} ms, errors ${errorSummary(load)} (server CPU ${Math.round(load.serverCpuPct)}%, ${load.serverCpuUsPerRequest.toFixed(0)} µs/req)`);
      }
      const [info, warn] = [infoService, warnService].map((s): Row => {
        const runs = runsOf.get(s)!;
        return {
          id: `defaults-${id}-${s.level}`,
          scenario: `defaults: ${title} at ${s.level === 'info' ? 'info (nothing configured)' : 'warn'}`,
          connections,
          load: joinLoads(runs),
          ratio: undefined,
          serverRssMb: undefined,
          note: `runs: ${runs.map((r) => Math.round(r.reqPerSec)).join(' and ')} req/s`,
        };
      }) as [Row, Row];
      rows.push(info, warn);
      info.note += `; loss vs warn: ${(100 * (1 - info.load.reqPerSec / warn.load.reqPerSec)).toFixed(1)}% req/s, server CPU ${info.load.serverCpuUsPerRequest.toFixed(0)} vs ${warn.load.serverCpuUsPerRequest.toFixed(0)} µs/req`;
    }
  }

  let patchPairs: number[] | undefined;
  if (opts.scenarios.includes('create') && opts.scenarios.includes('patch')) {
    patchPairs = await patchPostPairs({ url: ctx.baseUrl, serverPid: service.pid, duration: opts.duration, post: () => [post(ctx.seed.writer)], patch: () => patchRequests(ctx), log });
  }

  if (tracingServices) {
    rows.push(
      ...(await measureTracing(tracingServices, {
        scenarios: [
          ['list20', `GET /v1/pets?limit=${PAGE}`, () => [get(`/v1/pets?limit=${PAGE}`, ctx.seed.catalog)]],
          ['get-by-id', 'GET /v1/pets/{petId}', () => getByIdRequests(ctx)],
          ['create', 'POST /v1/pets', () => [post(ctx.seed.writer)]],
        ],
        duration: opts.duration,
        warmup: opts.warmup,
        warmupConnections: WARMUP_CONNECTIONS,
        joinLoads,
        log,
      })),
    );
  }

  let soak: Measured['soak'];
  if (opts.scenarios.includes('soak')) {
    const first = 100_000;
    const connections = 50;
    log(`soak: ${first.toLocaleString('en-US')} then ${(opts.soakRequests - first).toLocaleString('en-US')} mixed requests at ${connections} connections`);
    const a = await runLoad({ url: ctx.baseUrl, connections, duration: 0, amount: first, requests: mixedRequests(ctx), serverPid: service.pid });
    const rssAfterFirstMb = rssMb();
    log(`soak: ${a.requests} requests, RSS ${rssAfterFirstMb.toFixed(1)} MB`);
    const b = await runLoad({ url: ctx.baseUrl, connections, duration: 0, amount: opts.soakRequests - first, requests: mixedRequests(ctx), serverPid: service.pid });
    const rssAfterAllMb = rssMb();
    const total = a.requests + b.requests;
    log(`soak: ${total} requests, RSS ${rssAfterAllMb.toFixed(1)} MB`);
    const growth = rssAfterAllMb - rssAfterFirstMb;
    // Row statistics are the second phase's: the first one doubles as warm-up.
    const load: LoadResult = {
      ...b,
      non2xx: a.non2xx + b.non2xx,
      errors: a.errors + b.errors,
      timeouts: a.timeouts + b.timeouts,
      statusCodes: Object.fromEntries(
        [...new Set([...Object.keys(a.statusCodes), ...Object.keys(b.statusCodes)])].map((c) => [c, (a.statusCodes[c] ?? 0) + (b.statusCodes[c] ?? 0)]),
      ),
    };
    rows.push({
      id: 'soak',
      scenario: `soak (leak check): mixed 90/10, ${(total / 1e6).toFixed(2)}M requests`,
      connections,
      load,
      ratio: undefined,
      serverRssMb: rssAfterAllMb,
      note:
        `RSS after ${(a.requests / 1e3).toFixed(0)}k: ${rssAfterFirstMb.toFixed(1)} MB → after ${(total / 1e6).toFixed(2)}M: ${rssAfterAllMb.toFixed(1)} MB ` +
        `(${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MB, ${growth >= 0 ? '+' : ''}${((100 * growth) / rssAfterFirstMb).toFixed(1)}%); stats of the last ${(b.requests / 1e3).toFixed(0)}k`,
    });
    soak = { rssAfterFirstMb, rssAfterAllMb, firstRequests: a.requests, totalRequests: total };
  }

  await runCeiling('end');
  await stopChild(ceilingServer.child);

  // Noise only ever lowers throughput: the better ceiling measurement is the closer to the truth.
  const ceiling = new Map<number, number>();
  for (const row of rows.filter((r) => r.id.startsWith('ceiling-'))) {
    ceiling.set(row.connections, Math.max(ceiling.get(row.connections) ?? 0, row.load.reqPerSec));
  }
  for (const row of rows) {
    const best = ceiling.get(row.connections);
    row.ratio = best ? row.load.reqPerSec / best : undefined;
  }
  // Ceiling rows first, then the scenarios in run order.
  const ordered = [...rows.filter((r) => r.id.startsWith('ceiling-')), ...rows.filter((r) => !r.id.startsWith('ceiling-'))];
  return { rows: ordered, ceiling, ...(soak ? { soak } : {}), ...(patchPairs ? { patchPairs } : {}) };
}

/**
 * PATCH at least the durable POST's ratio on the same store (the same ceiling: req/s compared).
 * The verdict is the median of the alternated pairs (patch-pairs.ts) when they ran; the two
 * rows' own ratio is shown beside it.
 */
function patchTarget(patch: Row | undefined, post: Row | undefined, pairs: readonly number[] | undefined): Target {
  const known = patch?.ratio !== undefined && post?.ratio !== undefined;
  const rows = known ? `rows: ${patch.ratio!.toFixed(3)}× vs ${post.ratio!.toFixed(3)}× (${(patch.load.reqPerSec / post.load.reqPerSec).toFixed(2)} of POST's req/s)` : 'not run';
  const paired = pairs && pairs.length > 0 ? median(pairs) : undefined;
  return {
    name: 'PATCH /v1/pets/{petId} vs durable POST',
    goal: `≥ POST /v1/pets's req/s at 50 conns (same store): median of ${PATCH_PAIRS} alternated pairs`,
    actual: paired === undefined ? rows : `${paired.toFixed(2)} of POST's req/s (pairs ${pairs!.map((r) => r.toFixed(2)).join(', ')}); ${rows}`,
    verdict: paired !== undefined ? (paired >= 1 ? 'PASS' : 'MISS') : known ? (patch.load.reqPerSec >= post.load.reqPerSec ? 'PASS' : 'MISS') : 'SKIP',
  };
}

function evaluateTargets(measured: Measured, peakRssMb: number, opts: Options): Target[] {
  const at = (id: string, connections: number) => measured.rows.find((r) => r.id === id && r.connections === connections);
  const verdict = (ok: boolean | undefined): Verdict => (ok === undefined ? 'SKIP' : ok ? 'PASS' : 'MISS');
  const ratioTarget = (id: string, name: string, min: number): Target => {
    const row = at(id, 50);
    return {
      name,
      goal: `≥ ${min.toFixed(2)}× ceiling at 50 conns`,
      actual: row?.ratio === undefined ? 'not run' : `${row.ratio.toFixed(2)}× (${Math.round(row.load.reqPerSec)} req/s)`,
      verdict: verdict(row?.ratio === undefined ? undefined : row.ratio >= min),
    };
  };

  // Issue 16's targets on PostgreSQL: ratios, p99 ≤ 20 ms each, no non-2xx.
  const pgTarget = (id: string, name: string, min: number): Target => {
    const row = at(id, 50);
    const errors = row ? row.load.non2xx + row.load.errors + row.load.timeouts : 0;
    return {
      name: `${name} (PostgreSQL)`,
      goal: `≥ ${min.toFixed(2)}× ceiling, p99 ≤ 20 ms, no non-2xx at 50 conns`,
      actual: row?.ratio === undefined ? 'not run' : `${row.ratio.toFixed(2)}× (${Math.round(row.load.reqPerSec)} req/s), p99 ${row.load.latencyMs.p99.toFixed(2)} ms, ${errors} non-2xx/errors`,
      verdict: verdict(row?.ratio === undefined ? undefined : row.ratio >= min && row.load.latencyMs.p99 <= 20 && errors === 0),
    };
  };
  const defaultsTarget = (id: string, name: string): Target => {
    const info = at(`defaults-${id}-info`, 50);
    const warn = at(`defaults-${id}-warn`, 50);
    const loss = info && warn ? 1 - info.load.reqPerSec / warn.load.reqPerSec : undefined;
    return {
      name: `Defaults: ${name} at info vs warn`,
      goal: 'loses ≤ 25% req/s at 50 conns (SQLite)',
      actual: loss === undefined ? 'not run' : `${(100 * loss).toFixed(1)}% (${Math.round(info!.load.reqPerSec)} vs ${Math.round(warn!.load.reqPerSec)} req/s)`,
      verdict: verdict(loss === undefined ? undefined : loss <= 0.25),
    };
  };

  const list20 = at('list20', 50);
  const deepRatios = CONNECTIONS.flatMap((c) => {
    const first = at('list20', c);
    const deep = at('deep-page', c);
    return first && deep ? [{ c, ratio: first.load.reqPerSec / deep.load.reqPerSec }] : [];
  });
  const deepKnown = deepRatios.length === CONNECTIONS.length;
  const deep: Target = {
    name: `Deep page (page ${DEEP_PAGE_NUMBER.toLocaleString('en-US')})`,
    goal: 'first-page req/s ÷ deep-page req/s ≤ 1.2 at 1 and 50 conns',
    actual: deepKnown ? deepRatios.map((d) => `${d.ratio.toFixed(2)}× @${d.c}`).join(', ') : 'not run',
    verdict: verdict(deepKnown ? deepRatios.every((d) => d.ratio <= 1.2) : undefined),
  };
  const rss: Target = {
    name: 'Service peak RSS',
    goal: '< 200 MB (VmHWM over the whole run)',
    actual: `${peakRssMb.toFixed(1)} MB${opts.scenarios.includes('soak') ? ' (incl. soak)' : ''}`,
    verdict: verdict(peakRssMb < 200),
  };
  const inventory = opts.store === 'postgres' ? 0.2 : 0.3;
  // Issue 25's targets, on either store.
  const corrections = [
    patchTarget(at('patch', 50), at('create', 50), measured.patchPairs),
    ratioTarget('inventory', `GET /v1/store/inventory (${CATALOG_PETS.toLocaleString('en-US')} pets)`, inventory),
    ratioTarget('inventory-10', 'GET /v1/store/inventory (10 pets)', inventory),
  ];
  if (opts.store === 'postgres') {
    return [
      pgTarget('list20', `GET limit=${PAGE}`, 0.2),
      pgTarget('get-by-id', 'GET /v1/pets/{petId}', 0.25),
      pgTarget('create', 'POST /v1/pets (durable)', 0.12),
      ...corrections,
      deep,
      rss,
    ];
  }
  return [
    {
      name: `GET limit=${PAGE}`,
      goal: '≥ 0.45× ceiling and p99 ≤ 10 ms at 50 conns',
      actual:
        list20?.ratio === undefined
          ? 'not run'
          : `${list20.ratio.toFixed(2)}× (${Math.round(list20.load.reqPerSec)} req/s), p99 ${list20.load.latencyMs.p99.toFixed(2)} ms`,
      verdict: verdict(list20?.ratio === undefined ? undefined : list20.ratio >= 0.45 && list20.load.latencyMs.p99 <= 10),
    },
    ratioTarget('create', 'POST /v1/pets', 0.25),
    ratioTarget('get-by-id', 'GET /v1/pets/{petId}', 0.6),
    ...corrections,
    deep,
    rss,
    defaultsTarget('list20', `GET limit=${PAGE}`),
    defaultsTarget('get-by-id', 'GET /v1/pets/{petId}'),
  ];
}

// Children die with the bench: on Ctrl-C too (the `exit` hook in procs.ts is the last resort).
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    stopCurrentLoad();
    void stopAllChildren()
      .then(() => dropDatabase?.())
      .catch(() => undefined)
      .finally(() => {
        removeTempDir?.();
        process.exit(code);
      });
  });
}

main().then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    stopCurrentLoad();
    await stopAllChildren();
    process.exit(1);
  },
);
