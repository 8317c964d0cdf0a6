// The shipped Dockerfile and deploy/compose.yaml, for real, on this machine's Docker: the image is
// built on a local stand-in for node:20-bookworm-slim (scripts/docker-test-images.sh: no registry
// here), run read-only with a volume, used through `docker exec petstore …`, stopped under load
// and started again on the same volume; then the compose topology (PostgreSQL, Redis, three
// instances, HAProxy) is brought up and one instance stopped under load through HAProxy. Figures
// (image size, time to a healthy /healthz, stop times) are reported with t.diagnostic.
// Skipped, and says so, without a working Docker (`docker info`), docker-compose or debootstrap,
// unless PETSTORE_TEST_REQUIRE_DOCKER=1 (CI), which makes that an error.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './helpers/process.js';

const DOCKER = existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';
const COMPOSE = 'docker-compose';
const COMPOSE_FILE = 'deploy/compose.yaml';
const MB = 1024 * 1024;
/** What the image may add over its base (the target). */
const ADDED_MAX_BYTES = 80 * MB;
/** `docker stop`'s default grace period: the service must be gone well inside it. */
const STOP_WITHIN_MS = 10_000;

function unavailable(): string | false {
  const info = spawnSync(DOCKER, ['info'], { stdio: 'ignore', timeout: 20_000 });
  if (info.status !== 0) return `\`${DOCKER} info\` failed: install docker.io and start dockerd`;
  if (spawnSync(COMPOSE, ['version'], { stdio: 'ignore' }).status !== 0) return `${COMPOSE} was not found: install docker-compose`;
  if (!existsSync('/usr/sbin/debootstrap')) return 'debootstrap was not found (it makes the stand-in base images): install debootstrap';
  return false;
}
const skip = unavailable();
if (skip && process.env.PETSTORE_TEST_REQUIRE_DOCKER) throw new Error(`PETSTORE_TEST_REQUIRE_DOCKER is set but ${skip}.`);
if (skip) process.stderr.write(`Container tests skipped: ${skip}.\n`);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { env: { ...process.env, DOCKER_BUILDKIT: '1', ...options.env }, timeout: options.timeoutMs ?? 180_000, maxBuffer: 64 * MB },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        const killed = err?.killed ? `killed (${err.signal ?? ''}) after ${options.timeoutMs ?? 180_000} ms\n` : '';
        resolve({ code, stdout: stdout.toString(), stderr: killed + stderr.toString() });
      },
    );
  });
}

async function ok(file: string, args: string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<string> {
  const result = await run(file, args, options);
  assert.equal(result.code, 0, `${file} ${args.join(' ')} failed (${result.code}):\n${result.stderr}${result.stdout}`);
  return result.stdout.trim();
}

const docker = (...args: string[]) => ok(DOCKER, args);

/** Runs `script` with node inside the container (ES module; argv after it in `args`), returns stdout. */
function nodeIn(container: string, script: string, ...args: string[]): Promise<string> {
  return docker('exec', container, 'node', '--input-type=module', '-e', script, ...args);
}

/** An HTTP request from inside a container: [url, method, key, body?] → {status, body}. */
const FETCH_SCRIPT = `const [url, method, key, body] = process.argv.slice(1);
const headers = { authorization: 'Bearer ' + key };
if (body) headers['content-type'] = 'application/json';
const response = await fetch(url, { method, headers, body: body || undefined });
console.log(JSON.stringify({ status: response.status, body: await response.text() }));`;

async function fetchIn(container: string, url: string, method: string, key: string, body?: unknown): Promise<{ status: number; body: string }> {
  const args = [url, method, key];
  if (body !== undefined) args.push(JSON.stringify(body));
  return JSON.parse(await nodeIn(container, FETCH_SCRIPT, ...args)) as { status: number; body: string };
}

/** The CLI through `docker exec`: an account and a key for it. */
async function accountAndKey(container: string): Promise<{ accountId: string; key: string }> {
  const account = JSON.parse(await docker('exec', container, 'petstore', 'accounts', 'create', '--name', 'Container test', '--json')) as { id: string };
  const created = JSON.parse(await docker('exec', container, 'petstore', 'keys', 'create', '--account', account.id, '--json')) as { key: string };
  return { accountId: account.id, key: created.key };
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

const healthy = (url: string) =>
  waitFor(`${url}/healthz`, 60_000, async () => ((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })).ok ? true : undefined));

/** Every pet of the key's account, following Link rel="next". */
async function allPets(baseUrl: string, key: string): Promise<Array<{ id: number; name: string }>> {
  const pets: Array<{ id: number; name: string }> = [];
  let next: string | undefined = `${baseUrl}/v1/pets?limit=100`;
  while (next) {
    const response: Response = await fetch(next, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(response.status, 200);
    pets.push(...((await response.json()) as Array<{ id: number; name: string }>));
    const link = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '');
    next = link ? new URL(link[1]!, baseUrl).href : undefined;
  }
  return pets;
}

/**
 * Creates pets from `concurrency` loops until stopped, each with an Idempotency-Key (so HAProxy
 * may repeat one an instance closed on): as fast as they can, or each at most one per
 * `intervalMs`. Records what was acknowledged (201) and what failed.
 */
class CreateLoad {
  readonly acknowledged: Array<{ id: number; name: string }> = [];
  readonly failures: string[] = [];
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(
    private readonly baseUrl: string,
    private readonly key: string,
    concurrency: number,
    private readonly intervalMs = 0,
  ) {
    this.loops = Array.from({ length: concurrency }, (_, i) => this.loop(i));
  }

  private async loop(worker: number): Promise<void> {
    for (let n = 0; this.running; n++) {
      const name = `load-${worker}-${n}`;
      const next = sleep(this.intervalMs);
      try {
        const response = await fetch(`${this.baseUrl}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
          body: JSON.stringify({ name, categoryId: 1 }),
          signal: AbortSignal.timeout(15_000),
        });
        const body = (await response.json()) as { id: number; code?: string };
        if (response.status === 201) this.acknowledged.push({ id: body.id, name });
        else this.failures.push(`${response.status} ${body.code ?? ''}`);
      } catch (err) {
        this.failures.push(err instanceof Error ? `${err.message} ${String((err.cause as Error | undefined)?.message ?? '')}` : String(err));
        await sleep(20);
      }
      await next;
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

const suffix = randomUUID().slice(0, 8);
let images: Record<'NODE_IMAGE' | 'POSTGRES_IMAGE' | 'REDIS_IMAGE' | 'HAPROXY_IMAGE' | 'PETSTORE_IMAGE', string>;

describe('the container image and the compose topology', { skip, timeout: 30 * 60_000 }, () => {
  const containers: string[] = [];
  const volume = `petstore-ct-${suffix}`;
  const project = `petstorect${suffix}`;
  let composeEnv: Record<string, string> = {};
  // docker-proxy accepts connections before the service listens; undici keeps the socket of such
  // an unanswered fetch unref'd, and its AbortSignal.timeout is unref'd too: without a ref'd
  // handle node:test would see an idle event loop and cancel the test.
  let keepAlive: NodeJS.Timeout | undefined;

  before(async () => {
    keepAlive = setInterval(() => {}, 1000);
    const started = Date.now();
    // A fresh machine builds the base images first (minutes); then Docker's cache answers.
    const out = await ok('bash', ['scripts/docker-test-images.sh', `petstore-api:test-${suffix}`], { timeoutMs: 25 * 60_000 });
    images = Object.fromEntries(out.split('\n').map((line) => line.split('=') as [string, string])) as typeof images;
    assert.ok(images.PETSTORE_IMAGE && images.NODE_IMAGE, out);
    process.stderr.write(`container tests: images ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  });

  after(async () => {
    clearInterval(keepAlive);
    if (Object.keys(composeEnv).length > 0) {
      await run(COMPOSE, ['-p', project, '-f', COMPOSE_FILE, 'down', '-v', '--remove-orphans', '-t', '1'], { env: composeEnv, timeoutMs: 120_000 });
    }
    if (containers.length > 0) await run(DOCKER, ['rm', '-f', '-v', ...containers]);
    await run(DOCKER, ['volume', 'rm', '-f', volume]);
    if (images?.PETSTORE_IMAGE) await run(DOCKER, ['rmi', images.PETSTORE_IMAGE]);
  });

  test('when the image is inspected then it runs as a non-root uid and holds no dev dependency, compiler, test file or npm CA', { timeout: 3 * 60_000 }, async (t) => {
    const [imageSize, baseSize] = await Promise.all([images.PETSTORE_IMAGE, images.NODE_IMAGE].map(async (image) => Number(await docker('image', 'inspect', '-f', '{{.Size}}', image))));
    const added = imageSize! - baseSize!;
    t.diagnostic(`image ${(imageSize! / MB).toFixed(1)} MB, base ${(baseSize! / MB).toFixed(1)} MB: added ${(added / MB).toFixed(1)} MB`);
    assert.ok(added <= ADDED_MAX_BYTES, `the image adds ${(added / MB).toFixed(1)} MB over its base`);

    const config = JSON.parse(await docker('image', 'inspect', '-f', '{{json .Config}}', images.PETSTORE_IMAGE)) as { User: string; Env: string[]; ExposedPorts: object; Volumes: object; Healthcheck?: { Test: string[] } };
    assert.equal(config.User, '1000:1000');
    assert.ok('8080/tcp' in config.ExposedPorts && '/data' in config.Volumes);
    assert.ok(config.Env.includes('HOST=0.0.0.0'));
    assert.ok(config.Healthcheck?.Test.join(' ').includes('/healthz'));
    assert.ok(!config.Env.some((e) => /cafile|EXTRA_CA/i.test(e)), config.Env.join('\n'));

    const devDependencies = ['typescript', 'tsx', '@types', 'autocannon', 'fast-check', 'playwright-core', '@stoplight', 'esbuild', 'standardwebhooks'];
    const probe = [
      'id -u',
      'for c in gcc g++ cc c++ make python3; do command -v $c; done',
      `for d in ${devDependencies.join(' ')}; do [ -e /app/node_modules/$d ] && echo "dev: $d"; done`,
      "find / -xdev \\( -path '/app/test' -o -name '*.test.ts' -o -name '*.test.js' -o -name npm_ca -o -path /app/bench \\) -print 2>/dev/null | grep -v '^/proc' | grep -v '^/app/node_modules/[^/]*/' || true",
    ].join('; ');
    const out = await docker('run', '--rm', '--entrypoint', 'sh', images.PETSTORE_IMAGE, '-c', probe);
    assert.equal(out, '1000', `expected only the uid; found:\n${out}`);
  });

  test('when run read-only on a volume then /healthz answers, the CLI works through docker exec, and a stop under load exits 0 keeping every acknowledged pet', { timeout: 8 * 60_000 }, async (t) => {
    const name = `petstore-ct-${suffix}`;
    const start = async () => {
      const startedAt = Date.now();
      containers.push(await docker('run', '-d', '--name', name, '--read-only', '--tmpfs', '/tmp', '-v', `${volume}:/data`, '-p', '127.0.0.1::8080', '-e', 'PETSTORE_LOG_LEVEL=warn', images.PETSTORE_IMAGE));
      const url = `http://${(await docker('port', name, '8080/tcp')).split('\n')[0]}`;
      await healthy(url);
      return { url, ms: Date.now() - startedAt, startedAt };
    };
    const first = await start();
    t.diagnostic(`docker run to /healthz 200: ${first.ms} ms`);
    const status = await waitFor('docker health status healthy', 60_000, async () =>
      (await docker('inspect', '-f', '{{.State.Health.Status}}', name)) === 'healthy' ? true : undefined,
    );
    assert.ok(status);
    t.diagnostic(`docker run to health status "healthy": ${Date.now() - first.startedAt} ms`);

    const { key } = await accountAndKey(name);
    const created = await fetch(`${first.url}/v1/pets`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Rex', categoryId: 1 }) });
    assert.equal(created.status, 201);
    const rex = (await created.json()) as { id: number };
    assert.ok((await allPets(first.url, key)).some((p) => p.id === rex.id && p.name === 'Rex'));

    const load = new CreateLoad(first.url, key, 8);
    await sleep(1500);
    const stopStarted = Date.now();
    await docker('stop', name);
    const stopMs = Date.now() - stopStarted;
    await load.stop();
    const exit = await docker('inspect', '-f', '{{.State.ExitCode}} {{.State.OOMKilled}}', name);
    t.diagnostic(`docker stop under load: ${stopMs} ms, exit ${exit}; ${load.acknowledged.length} creates acknowledged, ${load.failures.length} refused once stopping`);
    assert.equal(exit, '0 false');
    assert.ok(stopMs < STOP_WITHIN_MS, `docker stop took ${stopMs} ms`);
    assert.ok(load.acknowledged.length > 0, 'the load created nothing');

    await docker('rm', name);
    const second = await start();
    t.diagnostic(`restart on the same volume to /healthz 200: ${second.ms} ms`);
    const kept = new Map((await allPets(second.url, key)).map((p) => [p.id, p.name]));
    assert.equal(kept.get(rex.id), 'Rex');
    const lost = load.acknowledged.filter((p) => kept.get(p.id) !== p.name);
    assert.deepEqual(lost, [], `${lost.length} acknowledged pets lost`);
  });

  // About 25-30 s (up to HAProxy answering: 12-17 s). The instances wait for PostgreSQL at start
  // (PETSTORE_DATABASE_WAIT_MS) besides compose's healthchecks: on a starved host a first
  // connection can take longer than the store's 2 s connect timeout.
  test('when the compose topology is up then HAProxy reaches every instance, a pet created on one is read on another, and stopping one under load loses nothing', { timeout: 10 * 60_000 }, async (t) => {
    const port = await freePort();
    composeEnv = {
      PETSTORE_IMAGE: images.PETSTORE_IMAGE,
      POSTGRES_IMAGE: images.POSTGRES_IMAGE,
      REDIS_IMAGE: images.REDIS_IMAGE,
      HAPROXY_IMAGE: images.HAPROXY_IMAGE,
      POSTGRES_PASSWORD: randomUUID(),
      PETSTORE_HTTP_PORT: `127.0.0.1:${port}`,
      PETSTORE_LOG_LEVEL: 'warn',
    };
    const compose = (...args: string[]) => ok(COMPOSE, ['-p', project, '-f', COMPOSE_FILE, ...args], { env: composeEnv, timeoutMs: 240_000 });
    const upStarted = Date.now();
    const up = await run(COMPOSE, ['-p', project, '-f', COMPOSE_FILE, 'up', '-d', '--no-build'], { env: composeEnv, timeoutMs: 300_000 });
    if (up.code !== 0) {
      // What the services said, to tell a starved host (PostgreSQL connect timeouts) from a defect.
      t.diagnostic((await run(COMPOSE, ['-p', project, '-f', COMPOSE_FILE, 'logs', '--no-color', '--tail', '5'], { env: composeEnv })).stdout.replace(/\n/g, ' | '));
      assert.fail(`docker-compose up failed (${up.code}):\n${up.stderr}`);
    }
    const url = `http://127.0.0.1:${port}`;
    await waitFor('HAProxy with an instance up', 60_000, async () => ((await fetch(`${url}/v1/pets`)).status === 401 ? true : undefined));
    t.diagnostic(`docker-compose up to HAProxy answering: ${Date.now() - upStarted} ms`);

    const id = async (service: string) => (await compose('ps', '-q', service)).split('\n')[0]!;
    const [a, b, c] = await Promise.all(['petstore-a', 'petstore-b', 'petstore-c'].map(id));
    const { key } = await accountAndKey(a!);

    // Metrics: reachable on the compose network (from a, of every instance), never published.
    const requestsOn = async (host: string) => {
      const text = await nodeIn(a!, 'console.log(await (await fetch(process.argv[1])).text())', `http://${host}:9464/metrics`);
      return [...text.matchAll(/^petstore_http_requests_total\{[^}]*route="\/v1\/pets"[^}]*\} (\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    };
    const hosts = ['petstore-a', 'petstore-b', 'petstore-c'];
    const before = await Promise.all(hosts.map(requestsOn));
    for (let round = 0; round < 6; round++) {
      await Promise.all(Array.from({ length: 6 }, async () => assert.equal((await fetch(`${url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status, 200)));
    }
    const deltas = (await Promise.all(hosts.map(requestsOn))).map((n, i) => n - before[i]!);
    t.diagnostic(`GET /v1/pets through HAProxy per instance: ${deltas.join(', ')}`);
    assert.ok(deltas.every((d) => d > 0), `not every instance served: ${deltas.join(', ')}`);
    assert.equal((await fetch(`${url}/metrics`)).status, 404);
    for (const container of [a!, b!, c!]) assert.equal(await docker('port', container), '');

    const made = await fetchIn(a!, 'http://127.0.0.1:8080/v1/pets', 'POST', key, { name: 'Across', categoryId: 2 });
    assert.equal(made.status, 201, made.body);
    const pet = JSON.parse(made.body) as { id: number };
    const read = await fetchIn(b!, `http://127.0.0.1:8080/v1/pets/${pet.id}`, 'GET', key);
    assert.equal(read.status, 200, read.body);
    assert.equal((JSON.parse(read.body) as { name: string }).name, 'Across');

    // 8 loops of at most 10 creates a second: under the key's shared limit (100/s, burst 200),
    // so that every request is a create and any failure is the stop's.
    const load = new CreateLoad(url, key, 8, 100);
    await sleep(1500);
    const stopStarted = Date.now();
    await compose('stop', 'petstore-b');
    const stopMs = Date.now() - stopStarted;
    await sleep(1500);
    await load.stop();
    const exit = await docker('inspect', '-f', '{{.State.ExitCode}}', b!);
    t.diagnostic(`docker-compose stop petstore-b under load: ${stopMs} ms, exit ${exit}; ${load.acknowledged.length} creates acknowledged, ${load.failures.length} failed`);
    assert.equal(exit, '0');
    assert.deepEqual(load.failures, []);
    assert.ok(load.acknowledged.length > 0, 'the load created nothing');
    const kept = new Map((await allPets(url, key)).map((p) => [p.id, p.name]));
    const lost = load.acknowledged.filter((p) => kept.get(p.id) !== p.name);
    assert.deepEqual(lost, [], `${lost.length} acknowledged pets lost`);
  });
});
