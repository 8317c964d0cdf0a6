// Upgrading a store made by the previous release (schema versions 1 and 2: one global pet id
// sequence) to per-account pet ids (version 3), on both backends. The old store is built with
// the previous release's own migrations (append-only, so versions 1 and 2 are unchanged: each
// backend's SQL of the shared list) and
// its own INSERT; then the real CLI migrates it, and the real app must serve every pet under
// its old id, accept cursors and replay idempotency keys issued before, and number new pets
// after each account's highest id.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createServices } from '../src/services/index.js';
import { generateKey, hashKey } from '../src/services/api-keys.js';
import { createCursorCodec } from '../src/services/cursor.js';
import { requestHash } from '../src/services/pets.js';
import { migrations } from '../src/store/migrations/index.js';
import { createStore } from '../src/store/index.js';
import { type NewPet, type Pet, PET_STATUSES } from '../src/schemas/index.js';
import { startApp } from './helpers/app.js';
import { type Backend, backends } from './helpers/backends.js';
import { cliJson } from './helpers/process.js';
import { storeConfig } from './helpers/store-config.js';

const PREVIOUS_VERSIONS = [1, 2];
const T0 = '2026-11-01T00:00:00.000Z';

/** Runs SQL on the database the way the previous release's store did. */
interface OldDatabase {
  exec(sql: string): Promise<void>;
  /** The previous release's createPet: the database assigns the id from its global sequence. */
  insertPet(accountId: string, pet: NewPet): Promise<number>;
  completeIdempotencyKey(accountId: string, key: string, hash: string, petId: number): Promise<void>;
  close(): Promise<void>;
}

async function openOld(backend: Backend, url: string): Promise<OldDatabase> {
  if (backend.name === 'sqlite') {
    const db = new Database(url);
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    return {
      exec: async (sql) => void db.exec(sql),
      insertPet: async (accountId, pet) =>
        Number(
          db.prepare('INSERT INTO pets (account_id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?)')
            .run(accountId, pet.name, pet.categoryId, pet.status ?? null, T0).lastInsertRowid,
        ),
      completeIdempotencyKey: async (accountId, key, hash, petId) =>
        void db.prepare('INSERT INTO idempotency_keys (account_id, key, request_hash, pet_id, created_at, locked_at) VALUES (?, ?, ?, ?, ?, ?)')
          .run(accountId, key, hash, petId, Date.now(), Date.now()),
      close: async () => void db.close(),
    };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    exec: async (sql) => void (await client.query(sql)),
    insertPet: async (accountId, pet) =>
      (await client.query<{ id: string }>(
        'INSERT INTO pets (account_id, name, category_id, status, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id',
        [accountId, pet.name, pet.categoryId, pet.status ?? null, T0],
      )).rows.map((r) => Number(r.id))[0]!,
    completeIdempotencyKey: async (accountId, key, hash, petId) =>
      void (await client.query(
        'INSERT INTO idempotency_keys (account_id, key, request_hash, pet_id, created_at, locked_at) VALUES ($1, $2, $3, $4, $5, $5)',
        [accountId, key, hash, petId, Date.now()],
      )),
    close: () => client.end(),
  };
}

/** The schema exactly as the previous release left it: versions 1 and 2, recorded as applied. */
async function previousReleaseSchema(backend: Backend, old: OldDatabase): Promise<void> {
  await old.exec(
    backend.name === 'sqlite'
      ? 'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)'
      : 'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)',
  );
  for (const m of migrations.filter((m) => PREVIOUS_VERSIONS.includes(m.version))) {
    await old.exec(m[backend.name]);
    await old.exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (${m.version}, '${m.name}', '${T0}')`);
  }
}

/** The previous release's key creation: its columns only (migration 11 added more). */
async function oldKey(old: OldDatabase, accountId: string): Promise<string> {
  const key = generateKey('production');
  const id = `key_old${hashKey(key).slice(0, 12)}`;
  await old.exec(`INSERT INTO api_keys (id, account_id, environment, key_hash, hint, created_at) VALUES ('${id}', '${accountId}', 'production', '${hashKey(key)}', 'psk_live_…${key.slice(-4)}', '${T0}')`);
  return key;
}

const nextLink = (link: string | null) => /<([^>]+)>; rel="next"/.exec(link ?? '')?.[1];

/** A fresh database and a cleanup list run last-in first-out after the test (the drop last). */
async function scratch(t: TestContext, backend: Backend) {
  const database = await backend.createDatabase();
  const cleanups: Array<() => unknown> = [() => database.drop()];
  t.after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return { url: database.url, scope: { after: (fn: () => unknown) => void cleanups.push(fn) } };
}

for (const backend of backends) {
  describe(`upgrading a previous release's store to per-account ids (${backend.name})`, () => {
    test('when `petstore migrate` upgrades it, then every pet keeps its id, old cursors and idempotency keys work, and each account continues after its highest id', async (t) => {
      const { url, scope } = await scratch(t, backend);
      const old = await openOld(backend, url);
      await previousReleaseSchema(backend, old);

      // Accounts and the cursor secret through the services (their SQL did not change); keys as that release wrote them.
      const store = await createStore(storeConfig(url, { pgPoolMax: 2, readCache: false }));
      const services = await createServices({ store, clock: { now: () => Date.now() }, environment: 'production' });
      const a = await services.accounts.create('Old A');
      const b = await services.accounts.create('Old B');
      const empty = await services.accounts.create('Old, no pets');
      const keyA = await oldKey(old, a.id);
      const keyB = await oldKey(old, b.id);
      const keyEmpty = await oldKey(old, empty.id);

      // Global ids, interleaved: A gets 1, 2, 4, 5, 7, 8 …, B gets 3, 6, 9 ….
      const before: Record<string, Pet[]> = { [a.id]: [], [b.id]: [] };
      for (let i = 0; i < 9; i++) {
        const owner = i % 3 === 2 ? b.id : a.id;
        const pet: NewPet = { name: `Old ${i}`, categoryId: i + 1, ...(i % 2 ? { status: 'available' as const } : {}) };
        before[owner]!.push({ id: await old.insertPet(owner, pet), ...pet });
      }
      const replayed = before[a.id]![1]!;
      const { id: _id, ...replayedBody } = replayed;
      await old.completeIdempotencyKey(a.id, 'old-key', requestHash(replayedBody), replayed.id);
      // Cursors issued before the upgrade, by the unchanged cursor code and secret: after A's
      // second pet, and after A's first available pet (the pages a client held then).
      const cursors = createCursorCodec(await store.settings.getOrCreate('cursor_secret', () => 'never stored: the services created it'), PET_STATUSES);
      const oldCursor = cursors.encode(a.id, { afterId: before[a.id]![1]!.id, status: undefined });
      const firstAvailable = before[a.id]!.find((pet) => pet.status === 'available')!;
      const oldAvailable = { nextCursor: cursors.encode(a.id, { afterId: firstAvailable.id, status: 'available' }) };
      await store.close();
      await old.close();

      const env = { PETSTORE_DATABASE_URL: url };
      assert.deepEqual(await cliJson<{ applied: number[] }>(['migrate'], env), {
        // One numbering on both backends (7, key change notifications, is a no-op on SQLite).
        applied: migrations.map((m) => m.version).filter((v) => !PREVIOUS_VERSIONS.includes(v)),
      });

      const app = await startApp(scope, { databaseUrl: url, backend });
      for (const [accountId, key] of [[a.id, keyA], [b.id, keyB]] as const) {
        for (const pet of before[accountId]!) {
          const res = await app.request('GET', `/v1/pets/${pet.id}`, { key });
          assert.equal(res.status, 200, res.text);
          assert.deepEqual(res.body, pet, 'the same id and fields');
        }
        assert.deepEqual((await app.request('GET', '/v1/pets?limit=100', { key })).body, before[accountId]);
      }

      const resumed = await app.request('GET', `/v1/pets?limit=2&cursor=${oldCursor}`, { key: keyA });
      assert.equal(resumed.status, 200, resumed.text);
      assert.deepEqual(resumed.body, before[a.id]!.slice(2, 4), 'the old cursor continues where it left off');
      const resumedAvailable = await app.request('GET', `/v1/pets?limit=1&status=available&cursor=${oldAvailable.nextCursor}`, { key: keyA });
      assert.deepEqual(resumedAvailable.body, before[a.id]!.filter((p) => p.status === 'available').slice(1, 2));

      const replay = await app.request('POST', '/v1/pets', { key: keyA, body: replayedBody, headers: { 'idempotency-key': 'old-key' } });
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(replay.body, replayed);
      const reused = await app.request('POST', '/v1/pets', { key: keyA, body: { name: 'Else', categoryId: 1 }, headers: { 'idempotency-key': 'old-key' } });
      assert.equal(reused.status, 422);
      assert.equal((reused.body as { code: string }).code, 'idempotency_key_reused');

      // New pets: after the account's own highest id, whatever the other accounts hold.
      const maxA = Math.max(...before[a.id]!.map((p) => p.id));
      const maxB = Math.max(...before[b.id]!.map((p) => p.id));
      for (const [key, max] of [[keyA, maxA], [keyB, maxB], [keyEmpty, 0]] as const) {
        const created = await app.request('POST', '/v1/pets', { key, body: { name: 'New', categoryId: 1 } });
        assert.equal(created.status, 201, created.text);
        assert.equal((created.body as Pet).id, max + 1);
        const idem = await app.request('POST', '/v1/pets', { key, body: { name: 'New idem', categoryId: 1 }, headers: { 'idempotency-key': `new-${max}` } });
        assert.equal((idem.body as Pet).id, max + 2);
      }
      // The old cursor now reaches the new pets too.
      let next: string | undefined = `/v1/pets?limit=2&cursor=${oldCursor}`;
      const walked: Pet[] = [];
      while (next) {
        const page = await app.request('GET', next, { key: keyA });
        walked.push(...(page.body as Pet[]));
        next = nextLink(page.headers.get('link'));
      }
      assert.deepEqual(walked.map((p) => p.id), [...before[a.id]!.slice(2).map((p) => p.id), maxA + 1, maxA + 2]);
      assert.deepEqual(await app.store.pendingMigrations(), []);
    });

    test('when the previous release still writes during a rolling upgrade (it sends no id), then its pets are numbered from the same per-account counter', {
      skip: backend.name === 'sqlite' ? 'SQLite runs one release at a time (one machine): no rolling upgrade' : false,
    }, async (t) => {
      const { url, scope } = await scratch(t, backend);
      const app = await startApp(scope, { databaseUrl: url, backend });
      const { accountId, key } = await app.createAccount('Rolling');
      const other = await app.createAccount('Other');
      assert.equal(((await app.request('POST', '/v1/pets', { key, body: { name: 'New release', categoryId: 1 } })).body as Pet).id, 1);
      const old = await openOld(backend, url);
      scope.after(() => old.close());
      assert.equal(await old.insertPet(accountId, { name: 'Old release', categoryId: 1 }), 2);
      assert.equal(await old.insertPet(other.accountId, { name: 'Old release', categoryId: 1 }), 1);
      await assert.rejects(old.insertPet('acct_unknown', { name: 'Orphan', categoryId: 1 }));
      assert.equal(((await app.request('POST', '/v1/pets', { key, body: { name: 'New again', categoryId: 1 } })).body as Pet).id, 3);
      assert.deepEqual(((await app.request('GET', '/v1/pets', { key })).body as Pet[]).map((p) => [p.id, p.name]), [
        [1, 'New release'], [2, 'Old release'], [3, 'New again'],
      ]);
    });
  });
}
