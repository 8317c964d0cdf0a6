// A create cut off by a crash after claiming its Idempotency-Key: the claim dies with its
// owner (it stops being renewed), so the client's same-key retry succeeds within 3 s of the
// crash and never creates a second pet; while the owner lives, the key stays its own (409).
// Deterministic: the create is held between claim and commit (PostgreSQL: the account's row
// locked by the test; SQLite: a process whose create never ends), then killed with SIGKILL.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import pg from 'pg';
import { IDEMPOTENCY_LEASE_MS } from '../src/services/idempotency.js';
import { type BackendDatabase, postgresAdminUrl, postgresBackend, sqliteBackend } from './helpers/backends.js';
import { createAccountWithKey, type ServerProcess, startServerProcess } from './helpers/process.js';

/** What the issue promises a careful client: its retry succeeds within this long after the crash. */
const RETRY_WITHIN_MS = 3000;

async function createPet(server: ServerProcess, apiKey: string, idempotencyKey: string, name: string) {
  const res = await fetch(`${server.url}/v1/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ name, categoryId: 1 }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: (await res.json()) as { id: number; code?: string } };
}

/** Retries the same request every 100 ms until a 201; returns it, the statuses seen and when. */
async function retryUntilCreated(server: ServerProcess, apiKey: string, idempotencyKey: string, name: string, budgetMs: number) {
  const start = Date.now();
  const seen: number[] = [];
  while (Date.now() - start < budgetMs) {
    const res = await createPet(server, apiKey, idempotencyKey, name);
    seen.push(res.status);
    if (res.status === 201) return { res, seen, at: Date.now() };
    assert.equal(res.status, 409, `only 409 idempotency_key_in_use is expected before the lease ends, got ${res.status}`);
    await sleep(100);
  }
  throw new Error(`no 201 within ${budgetMs} ms; statuses: ${seen.join(' ')}`);
}

const stopAll: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const stop of stopAll.reverse()) await stop().catch(() => undefined);
});

describe('a create cut off by a crash after claiming its Idempotency-Key (postgres)', {
  skip: postgresAdminUrl ? false : 'needs PETSTORE_TEST_POSTGRES_URL',
}, () => {
  test('when the instance holding the claim is killed, then the same-key retry through another instance succeeds within 3 s and creates one pet', async (t) => {
    const database: BackendDatabase = await postgresBackend.createDatabase();
    stopAll.push(() => database.drop());
    const env = { PETSTORE_DATABASE_URL: database.url, PETSTORE_MESSAGE_WORKER: 'false' };
    const a = await startServerProcess(env);
    stopAll.push(() => a.stop('SIGKILL'));
    const b = await startServerProcess(env);
    stopAll.push(() => b.stop());
    const { key: apiKey, accountId } = await createAccountWithKey(env);
    const idempotencyKey = randomUUID();
    const name = 'Cut off';

    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    stopAll.push(() => db.end());
    stopAll.push(() => holder.end());
    // Hold the account's row (as a concurrent create would): the create on `a` claims its key
    // (whose foreign key check needs only FOR KEY SHARE), then waits to number its pet.
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE', [accountId]);
    const first = createPet(a, apiKey, idempotencyKey, name).catch((error: unknown) => error);
    for (let i = 0; ; i += 1) {
      const claimed = await db.query('SELECT 1 FROM idempotency_keys WHERE account_id = $1 AND key = $2', [accountId, idempotencyKey]);
      const waiting = await db.query(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%last_pet_id%'",
      );
      if (claimed.rowCount === 1 && waiting.rowCount! >= 1) break;
      if (i >= 100) {
        const activity = await db.query("SELECT state, wait_event_type, query FROM pg_stat_activity WHERE datname = current_database()");
        assert.fail(`the create claimed its key (${claimed.rowCount}) and waits for the account's row (${waiting.rowCount}): ${JSON.stringify(activity.rows)}`);
      }
      await sleep(50);
    }

    // While its owner lives (and renews the claim), the key is its own, even past the lease.
    await sleep(IDEMPOTENCY_LEASE_MS + 500);
    const meanwhile = await createPet(b, apiKey, idempotencyKey, name);
    assert.equal(meanwhile.status, 409);
    assert.equal(meanwhile.body.code, 'idempotency_key_in_use');

    a.child.kill('SIGKILL');
    const crashedAt = Date.now();
    await once(a.child, 'exit');
    assert.ok(await first instanceof Error, 'the request in flight on the killed instance failed');
    // The held lock goes away (as any lock would); the dead instance's transaction never commits.
    await holder.query('ROLLBACK');

    const { res, seen, at } = await retryUntilCreated(b, apiKey, idempotencyKey, name, RETRY_WITHIN_MS);
    t.diagnostic(`retry after the crash: 201 after ${at - crashedAt} ms; statuses before: ${seen.slice(0, -1).join(' ') || 'none'}`);
    assert.ok(at - crashedAt <= RETRY_WITHIN_MS);
    assert.equal(res.replayed, null, 'the retry created the pet (the dead request never committed)');
    const again = await createPet(b, apiKey, idempotencyKey, name);
    assert.equal(again.status, 201);
    assert.equal(again.replayed, 'true');
    assert.equal(again.body.id, res.body.id);
    // Give the dead instance's session every chance to have committed something: it has not.
    await sleep(500);
    const pets = await db.query('SELECT id FROM pets WHERE account_id = $1', [accountId]);
    assert.deepEqual(pets.rows.map((r: { id: number }) => Number(r.id)), [res.body.id]);
  });
});

describe('a create cut off by a crash after claiming its Idempotency-Key (sqlite)', () => {
  test('when the process holding the claim is killed, then the same-key retry succeeds within 3 s and creates one pet', async (t) => {
    const database = await sqliteBackend.createDatabase();
    stopAll.push(() => database.drop());
    const env = { PETSTORE_DATABASE_URL: database.url, PETSTORE_MESSAGE_WORKER: 'false' };
    const server = await startServerProcess(env);
    stopAll.push(() => server.stop());
    const { key: apiKey, accountId } = await createAccountWithKey(env);
    const idempotencyKey = randomUUID();
    const name = 'Cut off';

    // Another process on the same file claims the key and never finishes its create.
    const owner: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/claim-and-hang.ts', database.url, accountId, idempotencyKey, name], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    stopAll.push(async () => owner.kill('SIGKILL'));
    let out = '';
    owner.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    for (let i = 0; !out.includes('claimed'); i += 1) {
      assert.ok(i < 200 && owner.exitCode === null, `the owner claims the key: ${out}`);
      await sleep(50);
    }

    await sleep(IDEMPOTENCY_LEASE_MS + 500);
    const meanwhile = await createPet(server, apiKey, idempotencyKey, name);
    assert.equal(meanwhile.status, 409, 'while the owner lives, the key is its own, even past the lease');

    owner.kill('SIGKILL');
    const crashedAt = Date.now();
    await once(owner, 'exit');
    const { res, seen, at } = await retryUntilCreated(server, apiKey, idempotencyKey, name, RETRY_WITHIN_MS);
    t.diagnostic(`retry after the crash: 201 after ${at - crashedAt} ms; statuses before: ${seen.slice(0, -1).join(' ') || 'none'}`);
    assert.ok(at - crashedAt <= RETRY_WITHIN_MS);
    const again = await createPet(server, apiKey, idempotencyKey, name);
    assert.equal(again.replayed, 'true');
    assert.equal(again.body.id, res.body.id);
    const db = new Database(database.url, { readonly: true });
    try {
      const pets = db.prepare('SELECT id FROM pets WHERE account_id = ?').all(accountId) as Array<{ id: number }>;
      assert.deepEqual(pets.map((r) => r.id), [res.body.id]);
    } finally {
      db.close();
    }
  });
});
