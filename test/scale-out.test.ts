// Two independent instances (real `petstore serve` processes) on one PostgreSQL database and
// one Redis: concurrent migrate-on-start, shared data, cursors, revocation and rate limits.
// Needs PETSTORE_TEST_POSTGRES_URL and PETSTORE_TEST_REDIS_URL; skipped (and says so) otherwise.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { MIGRATION_LOCK_KEY } from '../src/store/postgres/index.js';
import { migrations } from '../src/store/migrations/index.js';
import { type BackendDatabase, postgresAdminUrl, postgresBackend } from './helpers/backends.js';
import { cliJson, createAccountWithKey, type ServerProcess, startServerProcess } from './helpers/process.js';

const REDIS_URL = process.env.PETSTORE_TEST_REDIS_URL || undefined;
const skip = postgresAdminUrl && REDIS_URL
  ? false
  : 'they need PostgreSQL and Redis: set PETSTORE_TEST_POSTGRES_URL and PETSTORE_TEST_REDIS_URL to run them';
if (skip) process.stderr.write(`Scale-out tests skipped: ${skip}.\n`);

const RATE_PER_SECOND = 1;
const BURST = 10;

interface Pet {
  id: number;
  name: string;
}

async function call(server: ServerProcess, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as unknown) : undefined };
}

const nextLink = (headers: Headers) => /<([^>]+)>;\s*rel="next"/.exec(headers.get('link') ?? '')?.[1];

describe('two instances on one PostgreSQL database and one Redis', { skip }, () => {
  let database: BackendDatabase;
  let env: Record<string, string>;
  let a: ServerProcess;
  let b: ServerProcess;
  /** How many instances were waiting for the migration lock at the same moment. */
  let waitingTogether = 0;

  before(async () => {
    database = await postgresBackend.createDatabase();
    env = {
      PETSTORE_DATABASE_URL: database.url,
      PETSTORE_REDIS_URL: REDIS_URL!,
      PETSTORE_RATE_LIMIT_PER_SECOND: String(RATE_PER_SECOND),
      PETSTORE_RATE_LIMIT_BURST: String(BURST),
    };
    // Hold the migration lock while both start, so that both are inside migrate() at once
    // (the race to prevent); then let them go.
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      const starting = Promise.all([startServerProcess(env), startServerProcess(env)]);
      starting.catch(() => undefined); // awaited below
      for (let i = 0; i < 200 && waitingTogether < 2; i += 1) {
        const { rows } = await holder.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        );
        waitingTogether = rows[0]!.n;
        if (waitingTogether < 2) await sleep(50);
      }
      await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      [a, b] = await starting;
    } finally {
      await holder.end();
    }
  });

  after(async () => {
    await a?.stop();
    await b?.stop();
    await database?.drop();
  });

  test('when both start at once on an empty database, then the migrations are applied exactly once and both serve', async () => {
    assert.equal(waitingTogether, 2, 'both instances were migrating at the same time');
    const runs = [a, b].flatMap((s) => s.logs().filter((l) => l.msg === 'applied migrations'));
    assert.equal(runs.length, 1, 'one instance applied the migrations, the other found none pending');
    assert.deepEqual(runs[0]?.applied, migrations.map((m) => m.version));
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      assert.deepEqual(rows.map((r) => r.version), migrations.map((m) => m.version));
    } finally {
      await client.end();
    }
    for (const server of [a, b]) assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
  });

  test('when a pet is created through one instance, then the other lists and fetches it', async () => {
    const { key } = await createAccountWithKey(env);
    const created = await call(a, 'POST', '/v1/pets', key, { name: 'Shared Rex', categoryId: 3, status: 'available' });
    assert.equal(created.status, 201);
    const pet = created.body as Pet;
    const listed = await call(b, 'GET', '/v1/pets', key);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body, [pet]);
    const fetched = await call(b, 'GET', `/v1/pets/${pet.id}`, key);
    assert.equal(fetched.status, 200);
    assert.deepEqual(fetched.body, pet);
  });

  test('when one instance issues a cursor, then the other accepts it and continues the listing', async () => {
    const { key } = await createAccountWithKey(env);
    const ids: number[] = [];
    for (const name of ['One', 'Two', 'Three']) ids.push(((await call(a, 'POST', '/v1/pets', key, { name, categoryId: 1 })).body as Pet).id);

    for (const [first, second] of [[a, b], [b, a]] as const) {
      const page1 = await call(first, 'GET', '/v1/pets?limit=2', key);
      assert.deepEqual((page1.body as Pet[]).map((p) => p.id), ids.slice(0, 2));
      const next = nextLink(page1.headers);
      assert.ok(next, 'the first page links to the next');
      const page2 = await call(second, 'GET', next, key);
      assert.equal(page2.status, 200, JSON.stringify(page2.body));
      assert.deepEqual((page2.body as Pet[]).map((p) => p.id), ids.slice(2));
      assert.equal(nextLink(page2.headers), undefined);
    }
  });

  test('when a key is revoked with the CLI, then both instances refuse it within 1 second', async () => {
    const { key, keyId } = await createAccountWithKey(env);
    for (const server of [a, b]) assert.equal((await call(server, 'GET', '/v1/pets', key)).status, 200);

    await cliJson(['keys', 'revoke', keyId], { PETSTORE_DATABASE_URL: database.url });
    const revokedAt = Date.now();
    const refusedAfter = await Promise.all(
      [a, b].map(async (server) => {
        for (;;) {
          const res = await call(server, 'GET', '/v1/pets', key);
          if (res.status === 401) {
            assert.equal((res.body as { code: string }).code, 'unauthorized');
            return Date.now() - revokedAt;
          }
          if (Date.now() - revokedAt > 3000) return Infinity;
          await sleep(50);
        }
      }),
    );
    for (const ms of refusedAfter) assert.ok(ms <= 1000, `refused ${ms} ms after the revocation`);
  });

  test('when requests alternate between the instances, then they share one bucket and the 429 comes right after the burst', async () => {
    const { key } = await createAccountWithKey(env);
    const statuses: number[] = [];
    const remaining: string[] = [];
    const started = Date.now();
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 2 * BURST + 2 && !refused; i += 1) {
      const res = await call(i % 2 === 0 ? a : b, 'GET', '/v1/pets', key);
      statuses.push(res.status);
      if (res.status === 429) refused = res;
      else remaining.push(/r=(\d+)/.exec(res.headers.get('ratelimit') ?? '')?.[1] ?? '?');
    }
    const elapsed = Date.now() - started;
    assert.deepEqual(statuses, [...Array<number>(BURST).fill(200), 429], `in ${elapsed} ms at ${RATE_PER_SECOND}/s`);
    // One bucket: each instance sees the other's requests.
    assert.deepEqual(remaining, Array.from({ length: BURST }, (_, i) => String(BURST - 1 - i)));
    assert.equal((refused!.body as { code: string }).code, 'rate_limited');
    assert.ok(Number(refused!.headers.get('retry-after')) >= 1);
  });
});
