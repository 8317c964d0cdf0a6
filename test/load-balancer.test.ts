// The documented topology, for real: Debian's HAProxy with deploy/haproxy.cfg in front of three
// `petstore serve` processes on one PostgreSQL database (a throwaway cluster, so that it can be
// restarted) and one Redis (a throwaway redis-server, so that it can be stopped), under constant
// mixed load through HAProxy (creates with Idempotency-Key, lists, gets, from several accounts):
// a rolling restart, a kill -9, a database restart and a Redis outage. Each scenario reports
// its figures with t.diagnostic. Skipped, and says so, without haproxy (unless
// PETSTORE_TEST_REQUIRE_HAPROXY=1), the PostgreSQL server binaries or redis-server.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { haproxySkip, type Haproxy, SERVER_NAMES, startHaproxy } from './helpers/haproxy.js';
import { createThrowawayPostgres, PG_BIN, pgSkip, type ThrowawayPostgres } from './helpers/postgres-cluster.js';
import { createAccountWithKey, freePort, type ServerProcess, startServerProcess } from './helpers/process.js';

const REDIS_SERVER = '/usr/bin/redis-server';
const skip = haproxySkip || pgSkip || (existsSync(REDIS_SERVER) ? false : `${REDIS_SERVER} was not found`);
if (skip) process.stderr.write(`Load balancer tests skipped: ${skip}.\n`);

/** What the issue promises a client retrying a create cut off by a crash. */
const RETRY_WITHIN_MS = 3000;
/** A request answering later than this counts as a hang (the service's request timeout is 10 s). */
const HANG_MS = 12_000;
const PROBE_MS = 45_000;
const ACCOUNTS = 12;
const CONCURRENCY = 6;
/** The instances' rate limit per key (per second; the burst is twice this). */
const PROBE_RATE = 50;
/**
 * Each load loop starts a request at most this often: CONCURRENCY loops then send at most 300 a
 * second, 25 a second per key on average over ACCOUNTS keys, half their limit.
 */
const LOOP_INTERVAL_MS = 20;

interface Outcome {
  op: 'create' | 'list' | 'get' | 'retry';
  status: number;
  code?: string;
  retryAfter?: string | null;
  error?: string;
  startedAt: number;
  endedAt: number;
}

interface Created {
  account: number;
  id: number;
  name: string;
}

/** A throwaway redis-server on a free port that can be stopped and started again. */
async function startRedis(): Promise<{ url: string; start(): Promise<void>; stop(): Promise<void> }> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const started = child;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      started.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('Ready to accept connections')) resolve();
      });
      started.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
    });
  };
  const stop = async () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await once(child, 'exit');
  };
  process.once('exit', () => child?.kill('SIGKILL'));
  await start();
  return { url: `redis://127.0.0.1:${port}`, start, stop };
}

/**
 * Constant mixed load through the balancer: `concurrency` loops, each picking an account and
 * an operation (35 % creates with a fresh Idempotency-Key, 35 % lists, 30 % gets of a pet it
 * created). A create that fails is retried with the same key and body every 150 ms for
 * `retryForMs`, as a careful client would.
 */
class Load {
  readonly outcomes: Outcome[] = [];
  readonly created: Created[] = [];
  /** Creates that failed at first and the time their retry got a 201 (undefined: never). */
  readonly retried: Array<{ failedAt: number; startedAt: number; succeededAt: number | undefined; name: string }> = [];
  private running = true;
  private readonly loops: Promise<void>[];
  private counter = 0;
  private readonly prefix = randomUUID().slice(0, 8);

  constructor(
    private readonly url: string,
    private readonly keys: string[],
    private readonly retryForMs: number,
    concurrency = CONCURRENCY,
  ) {
    this.loops = Array.from({ length: concurrency }, (_, i) => this.loop(i));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  get sent(): number {
    return this.outcomes.length;
  }

  /** Outcomes that are not a success for their operation. */
  failures(): Outcome[] {
    return this.outcomes.filter((o) => o.error !== undefined || !(o.status === 200 || o.status === 201));
  }

  private async call(op: Outcome['op'], method: string, path: string, key: string, body?: unknown, idempotencyKey?: string) {
    const startedAt = Date.now();
    try {
      const res = await fetch(this.url + path, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(HANG_MS),
      });
      const text = await res.text();
      let parsed: { id?: number; code?: string } | undefined;
      try {
        parsed = text ? (JSON.parse(text) as { id?: number; code?: string }) : undefined;
      } catch {
        parsed = undefined;
      }
      const outcome: Outcome = { op, status: res.status, startedAt, endedAt: Date.now(), retryAfter: res.headers.get('retry-after') };
      if (parsed?.code) outcome.code = parsed.code;
      this.outcomes.push(outcome);
      return { outcome, body: parsed };
    } catch (error) {
      const outcome: Outcome = { op, status: 0, error: `${(error as Error).name}: ${(error as Error).message}${(error as Error).cause ? ` (${String((error as Error).cause)})` : ''}`, startedAt, endedAt: Date.now() };
      this.outcomes.push(outcome);
      return { outcome, body: undefined };
    }
  }

  private async loop(worker: number): Promise<void> {
    const mine: Created[] = [];
    while (this.running) {
      const began = Date.now();
      await this.step(worker, mine);
      // Paced: on a fast machine the loops outran the keys' rate limit (50/s each) and got 429s.
      const rest = LOOP_INTERVAL_MS - (Date.now() - began);
      if (rest > 0) await sleep(rest);
    }
  }

  private async step(worker: number, mine: Created[]): Promise<void> {
    const account = Math.floor(Math.random() * this.keys.length);
    const key = this.keys[account]!;
    const dice = Math.random();
    if (dice < 0.35) {
      const name = `${this.prefix}-w${worker}-${(this.counter += 1)}`;
      const idempotencyKey = randomUUID();
      const body = { name, categoryId: 1 };
      let { outcome, body: answer } = await this.call('create', 'POST', '/v1/pets', key, body, idempotencyKey);
      if (outcome.status !== 201) {
        const record = { failedAt: outcome.endedAt, startedAt: outcome.startedAt, succeededAt: undefined as number | undefined, name };
        this.retried.push(record);
        while (outcome.status !== 201 && Date.now() - record.failedAt < this.retryForMs) {
          await sleep(150);
          ({ outcome, body: answer } = await this.call('retry', 'POST', '/v1/pets', key, body, idempotencyKey));
        }
        if (outcome.status === 201) record.succeededAt = outcome.endedAt;
      }
      if (outcome.status === 201) {
        const pet = { account, id: answer!.id!, name };
        this.created.push(pet);
        mine.push(pet);
      }
    } else if (dice < 0.7 || mine.length === 0) {
      await this.call('list', 'GET', '/v1/pets?limit=20', key);
    } else {
      const pet = mine[Math.floor(Math.random() * mine.length)]!;
      await this.call('get', 'GET', `/v1/pets/${pet.id}`, this.keys[pet.account]!);
    }
  }
}

describe('three instances behind HAProxy (deploy/haproxy.cfg), one PostgreSQL, one Redis', { skip, timeout: 180_000 }, () => {
  let cluster: ThrowawayPostgres;
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let lb: Haproxy;
  let db: pg.Pool;
  let env: Record<string, string>;
  const ports: number[] = [];
  const instances: ServerProcess[] = [];
  const accounts: Array<{ accountId: string; key: string }> = [];
  let probeKey: string;

  const startInstance = async (i: number) => {
    instances[i] = await startServerProcess({ ...env, PORT: String(ports[i]) });
  };

  /** Every 201 the load got is in the database, with its name, and no create happened twice. */
  async function verifyCreates(load: Load): Promise<number> {
    const { rows } = await db.query<{ account_id: string; id: string; name: string }>('SELECT account_id, id, name FROM pets');
    const byName = new Map<string, Array<{ account_id: string; id: number }>>();
    for (const row of rows) byName.set(row.name, [...(byName.get(row.name) ?? []), { account_id: row.account_id, id: Number(row.id) }]);
    for (const pet of load.created) {
      const found = byName.get(pet.name);
      assert.deepEqual(found, [{ account_id: accounts[pet.account]!.accountId, id: pet.id }], `pet ${pet.name}: acknowledged once, stored once`);
    }
    for (const [name, found] of byName) assert.equal(found.length, 1, `${name} created once`);
    return load.created.length;
  }

  const keys = () => accounts.map((a) => a.key);

  before(async () => {
    cluster = await createThrowawayPostgres(PG_BIN!);
    redis = await startRedis();
    for (let i = 0; i < SERVER_NAMES.length; i += 1) ports.push(await freePort());
    env = {
      PETSTORE_DATABASE_URL: cluster.url,
      PETSTORE_REDIS_URL: redis.url,
      PETSTORE_SHUTDOWN_DELAY_MS: '2000',
      PETSTORE_MESSAGE_WORKER: 'false',
      // Half the default rate, so the Redis outage test's probe outruns the refill even on a
      // machine CI has slowed several times over (at 100/s it could not, and saw no 429); the
      // load's keys stay below it (LOOP_INTERVAL_MS).
      PETSTORE_RATE_LIMIT_PER_SECOND: String(PROBE_RATE),
      PETSTORE_RATE_LIMIT_BURST: String(PROBE_RATE * 2),
    };
    await startInstance(0); // migrates
    await Promise.all([startInstance(1), startInstance(2)]);
    lb = await startHaproxy(ports.map((port) => `127.0.0.1:${port}`));
    for (const name of SERVER_NAMES) await lb.waitForStatus(name, 'UP', 10_000);
    for (let i = 0; i < ACCOUNTS; i += 1) accounts.push(await createAccountWithKey(env, `Load ${i}`));
    probeKey = (await createAccountWithKey(env, 'Rate limit probe')).key;
    db = new pg.Pool({ connectionString: cluster.url, max: 2 });
    db.on('error', () => {});
  });

  after(async () => {
    await db?.end().catch(() => undefined);
    await lb?.stop();
    for (const instance of instances) await instance?.stop('SIGKILL');
    await redis?.stop();
    cluster?.destroy();
  });

  test('rolling restart: SIGTERM each instance in turn, start it again, wait until HAProxy sees it up: no request fails, every 201 is stored', async (t) => {
    const load = new Load(lb.url, keys(), 0);
    // A failed assertion must not leave the load running (the file would never end).
    t.after(() => load.stop());
    await sleep(1000);
    const restarts: number[] = [];
    for (const [i, name] of SERVER_NAMES.entries()) {
      const start = Date.now();
      assert.equal(await instances[i]!.stop('SIGTERM'), 0, `instance ${name} shut down cleanly`);
      await startInstance(i);
      // Two good checks a second apart (deploy/haproxy.cfg), but a restarted instance on a busy
      // machine has taken longer than 10 s to pass them: generous, not a speed assertion.
      await lb.waitForStatus(name, 'UP', 30_000);
      restarts.push(Date.now() - start);
    }
    await sleep(500);
    await load.stop();
    const failures = load.failures();
    const verified = await verifyCreates(load);
    t.diagnostic(`rolling restart: ${load.sent} requests sent, ${failures.length} failed, ${load.retried.length} retried, ${verified} 201s verified in the database; SIGTERM to up again in HAProxy: ${restarts.map((ms) => `${ms} ms`).join(', ')}`);
    assert.deepEqual(failures, [], 'no request failed');
    assert.ok(verified > 0 && load.sent > 100);
  });

  test('kill -9 of one instance: only requests in flight on it fail, their same-key retries succeed within 3 s without duplicates, HAProxy takes it out within the check interval', async (t) => {
    const load = new Load(lb.url, keys(), RETRY_WITHIN_MS + 2000);
    // A failed assertion must not leave the load running (the file would never end).
    t.after(() => load.stop());
    await sleep(1000);
    const victim = 1;
    instances[victim]!.child.kill('SIGKILL');
    const killedAt = Date.now();
    const downAfter = await lb.waitForStatus(SERVER_NAMES[victim]!, 'DOWN', 5000);
    await sleep(RETRY_WITHIN_MS);
    await startInstance(victim);
    const upAfter = await lb.waitForStatus(SERVER_NAMES[victim]!, 'UP', 10_000);
    await sleep(500);
    await load.stop();

    const failures = load.failures().filter((o) => o.op !== 'retry' || o.status !== 409);
    const verified = await verifyCreates(load);
    const slowest = load.retried.length === 0 ? 'none failed' : `last 201 ${Math.max(...load.retried.map((r) => (r.succeededAt ?? Infinity) - killedAt))} ms after the kill`;
    t.diagnostic(
      `kill -9: ${load.sent} requests sent, ${failures.length} failed (in flight on the killed instance), ${load.retried.length} creates retried with their key ` +
      `(${slowest}), ${verified} 201s verified in the database; HAProxy marked it DOWN ${downAfter} ms after the kill, UP ${upAfter} ms after its restart`,
    );
    for (const failure of failures) {
      assert.ok(failure.startedAt <= killedAt + 50, `only requests in flight at the kill fail: ${JSON.stringify(failure)}`);
    }
    assert.ok(failures.length <= CONCURRENCY);
    for (const retry of load.retried) {
      assert.ok(retry.succeededAt !== undefined && retry.succeededAt - killedAt <= RETRY_WITHIN_MS, `retry of ${retry.name} got a 201 within 3 s of the kill`);
    }
    assert.ok(downAfter <= 2000, `out of the pool within the check interval (inter 1 s, then fastinter 250 ms × fall 2): ${downAfter} ms`);
  });

  test('a create caught between claiming its key and committing, its instance killed: the same request retried through HAProxy gets its 201 within 3 s, one pet', async (t) => {
    // The account's row held (as a concurrent create would hold it): the create on instance a
    // claims its key, then waits to number its pet.
    const account = await createAccountWithKey(env, 'Held');
    const holder = new pg.Client({ connectionString: cluster.url });
    await holder.connect();
    const idempotencyKey = randomUUID();
    const body = JSON.stringify({ name: 'Held', categoryId: 1 });
    const headers = { authorization: `Bearer ${account.key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey };
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE', [account.accountId]);
      const first = fetch(`${instances[0]!.url}/v1/pets`, { method: 'POST', headers, body }).then((r) => r.status, (e: Error) => e.message);
      for (let i = 0; ; i += 1) {
        const { rowCount } = await db.query('SELECT 1 FROM idempotency_keys WHERE account_id = $1 AND key = $2', [account.accountId, idempotencyKey]);
        if (rowCount === 1) break;
        assert.ok(i < 100, 'the create claimed its key');
        await sleep(50);
      }
      await sleep(300);
      instances[0]!.child.kill('SIGKILL');
      const killedAt = Date.now();
      await holder.query('ROLLBACK');
      assert.equal(typeof (await first), 'string', 'the request in flight failed with the instance');
      const statuses: number[] = [];
      let pet: { id: number } | undefined;
      while (!pet) {
        assert.ok(Date.now() - killedAt <= RETRY_WITHIN_MS, `a 201 within 3 s of the kill; got ${statuses.join(' ')}`);
        const res = await fetch(`${lb.url}/v1/pets`, { method: 'POST', headers, body, signal: AbortSignal.timeout(HANG_MS) });
        statuses.push(res.status);
        if (res.status === 201) pet = (await res.json()) as { id: number };
        else {
          await res.arrayBuffer();
          await sleep(150);
        }
      }
      const after = Date.now() - killedAt;
      await sleep(300);
      const { rows } = await db.query('SELECT id FROM pets WHERE account_id = $1', [account.accountId]);
      t.diagnostic(`held create, instance killed: the same-key retry through HAProxy got its 201 ${after} ms after the kill (${statuses.length} tries: ${statuses.join(' ')}); pets stored: ${rows.length}`);
      assert.deepEqual(rows.map((r: { id: string }) => Number(r.id)), [pet.id]);
    } finally {
      await holder.end();
      await startInstance(0);
      await lb.waitForStatus(SERVER_NAMES[0], 'UP', 30_000);
    }
  });

  test('database restart: 503 service_unavailable with Retry-After while down (never a 500 or a hang), /readyz fails on every instance, all serve again within 5 s', async (t) => {
    const load = new Load(lb.url, keys(), 20_000);
    // A failed assertion must not leave the load running (the file would never end).
    t.after(() => load.stop());
    await sleep(1000);
    const stoppingAt = Date.now();
    await cluster.stop();
    const downAt = Date.now();
    // Every instance says it is not ready, and HAProxy takes them all out.
    for (const instance of instances) {
      const ready = await fetch(`${instance.url}/readyz`, { signal: AbortSignal.timeout(5000) });
      assert.equal(ready.status, 503);
    }
    for (const name of SERVER_NAMES) await lb.waitForStatus(name, 'DOWN', 5000);
    const outOfPool = Date.now() - downAt;
    await sleep(Math.max(0, 3000 - outOfPool));
    await cluster.start();
    const upAt = Date.now();
    // Every instance answers a /v1 request again (directly), and HAProxy has all of them up.
    for (const instance of instances) {
      for (;;) {
        const res = await fetch(`${instance.url}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${accounts[0]!.key}` }, signal: AbortSignal.timeout(5000) });
        await res.arrayBuffer();
        if (res.status === 200) break;
        assert.ok(Date.now() - upAt < 5000, 'serves again within 5 s');
        await sleep(100);
      }
    }
    for (const name of SERVER_NAMES) await lb.waitForStatus(name, 'UP', Math.max(0, 5000 - (Date.now() - upAt)));
    const recovered = Date.now() - upAt;
    await sleep(1000);
    await load.stop();

    const failures = load.failures().filter((o) => !(o.op === 'retry' && o.status === 409));
    const unexpected = failures.filter((o) => !(o.status === 503 && o.code === 'service_unavailable' && /^[1-9][0-9]*$/.test(o.retryAfter ?? '')));
    const outside = failures.filter((o) => o.endedAt < stoppingAt || o.startedAt > upAt + recovered);
    const verified = await verifyCreates(load);
    t.diagnostic(
      `database restart: ${load.sent} requests sent, ${failures.length} answered 503 service_unavailable with Retry-After while it was down (${load.retried.length} creates retried, all stored), ` +
      `${unexpected.length} other failures; all instances out of HAProxy ${outOfPool} ms after the stop; every instance serving and up in HAProxy ${recovered} ms after the database was back; ${verified} 201s verified`,
    );
    assert.deepEqual(unexpected, [], 'only 503 service_unavailable with Retry-After (no 500, no hang)');
    assert.deepEqual(outside, [], 'failures only while the database was down');
    assert.ok(failures.length > 0, 'the outage was seen');
    assert.ok(load.retried.every((r) => r.succeededAt !== undefined), 'every create retried after the outage was stored');
    assert.ok(recovered <= 5000);
  });

  // Probing lasts up to 45 s: on two busy cores a probe can fall below the refill rate,
  // and Redis answers can miss the limiter's 200 ms deadline (fail open) for a while.
  test('Redis outage: the service keeps answering (rate limits fail open) and the limiter works again by itself when Redis is back', async (t) => {
    // A probe's GET whose pooled connection was reset (once in CI, on a saturated machine, just
    // after Redis came back) is sent again once, as HTTP lets a client repeat an idempotent
    // request; resets are counted and bounded below. The load's own requests are never repeated.
    let resets = 0;
    const probeGet = async (): Promise<Response> => {
      const send = () => fetch(`${lb.url}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${probeKey}` }, signal: AbortSignal.timeout(HANG_MS) });
      try {
        return await send();
      } catch (error) {
        if (!(error instanceof TypeError)) throw error;
        resets += 1;
        return send();
      }
    };
    /** Sends `n` requests on the probe key, 32 at a time; how many were refused with 429, and whether all others succeeded. */
    const probe = async (n: number) => {
      let limited = 0;
      let other = 0;
      let next = 0;
      await Promise.all(Array.from({ length: 32 }, async () => {
        while (next < n) {
          next += 1;
          const res = await probeGet();
          await res.arrayBuffer();
          if (res.status === 429) limited += 1;
          else if (res.status !== 200) other += 1;
        }
      }));
      return { limited, other };
    };
    // Until the bucket empties: on a slow machine a probe may not outrun the refill, or
    // a Redis answer may miss the limiter's 200 ms deadline (fail open), so one probe can pass.
    // The load starts afterwards: on a CI machine busy with other suites, the probe sharing two
    // cores with it once stayed under the refill rate for 30 s and saw no 429.
    let before = { limited: 0, other: 0 };
    const started = Date.now();
    let probed = 0;
    while (before.limited === 0) {
      const elapsed = Date.now() - started;
      assert.ok(elapsed < PROBE_MS, `the shared limit applies with Redis up (burst ${PROBE_RATE * 2}, ${PROBE_RATE}/s) within ${PROBE_MS / 1000} s of probing (${probed} probes in ${elapsed} ms, none refused)`);
      const more = await probe(1500);
      probed += 1500;
      before = { limited: more.limited, other: before.other + more.other };
    }
    const load = new Load(lb.url, keys(), 0);
    // A failed assertion must not leave the load running (the file would never end).
    t.after(() => load.stop());
    await sleep(500);
    await redis.stop();
    const stoppedAt = Date.now();
    await sleep(1000);
    const during = await probe(500);
    const outage = Date.now() - stoppedAt;
    await redis.start();
    const backAt = Date.now();
    let after = { limited: 0, other: 0 };
    while (after.limited === 0) {
      assert.ok(Date.now() - backAt < PROBE_MS, `the limiter applies again within ${PROBE_MS / 1000} s of Redis being back`);
      await sleep(250);
      after = await probe(1500);
    }
    const recovered = Date.now() - backAt;
    await load.stop();
    const failures = load.failures();
    const verified = await verifyCreates(load);
    t.diagnostic(
      `Redis outage (${outage} ms): ${load.sent} load requests sent, ${failures.length} failed, ${verified} 201s verified; probes of 1500/500/1500 requests on one key: ` +
      `${before.limited} refused with 429 before, ${during.limited} during the outage (fail open), ${after.limited} once Redis was back (limiter working again ${recovered} ms after Redis restarted); ` +
        `${resets} probe connections reset and the request repeated`,
    );
    assert.deepEqual(failures, []);
    assert.ok(resets <= 3, `${resets} probe requests met a reset connection (at most 3 tolerated)`);
    assert.equal(during.limited, 0, 'fail open');
    assert.equal(during.other + before.other + after.other, 0);
  });
});
