// Upgrading a SQLite store made by the release before the shared numbering: it recorded
// 'a cheaper event log' as 7 and 'event runs' as 8, which are 8 and 9 on both backends now
// (7, 'api key change notifications', is PostgreSQL's and a no-op on SQLite). The store is
// built exactly as that release left it (its rows, its schema, data written through it); then
// two `petstore migrate` processes at once and the real app run over it: the rows move, only 7
// is applied, and the data is served as before.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { createServices } from '../src/services/index.js';
import { migrations } from '../src/store/migrations/index.js';
import { createStore } from '../src/store/index.js';
import type { Pet } from '../src/schemas/index.js';
import { startApp } from './helpers/app.js';
import { sqliteBackend } from './helpers/backends.js';
import { storeConfig } from './helpers/store-config.js';
import { cliJson } from './helpers/process.js';

const T0 = '2026-11-24T00:00:00.000Z';

/** schema_migrations as the release before the shared numbering left a SQLite store. */
const FORMER_SQLITE_ROWS: Array<[number, string]> = [
  [1, 'accounts, api keys, pets'],
  [2, 'idempotency keys'],
  [3, 'per-account pet ids'],
  [4, 'orders'],
  [5, 'messages and jobs'],
  [6, 'events and webhooks'],
  [7, 'a cheaper event log'],
  [8, 'event runs'],
];

type Row = { version: number; name: string; applied_at: string };

function readRows(url: string): Row[] {
  const db = new Database(url, { readonly: true });
  try {
    return db.prepare<[], Row>('SELECT version, name, applied_at FROM schema_migrations ORDER BY version').all();
  } finally {
    db.close();
  }
}

/** That release's schema: each change's SQLite SQL (unchanged since), recorded under its former version. */
function buildFormerSchema(url: string): void {
  const db = new Database(url);
  try {
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
    for (const [version, name] of FORMER_SQLITE_ROWS) {
      db.exec(migrations.find((m) => m.name === name)!.sqlite);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(version, name, T0);
    }
  } finally {
    db.close();
  }
}

// Version 10 (inventory and categories) came after that release: today's store code writes the
// data with its tables present, which are then removed again, leaving that release's schema.
const WITHOUT_10 = `
  DROP TABLE categories;
  DROP INDEX pets_by_account_category;
  ALTER TABLE pets DROP COLUMN deleted_at;
  ALTER TABLE accounts DROP COLUMN pets_available;
  ALTER TABLE accounts DROP COLUMN pets_pending;
  ALTER TABLE accounts DROP COLUMN pets_sold;
  ALTER TABLE accounts DROP COLUMN pets_unset;
`;

// Version 11 (api key scopes and expiry) too: its columns are in place while the data is written.
const WITHOUT_11 = `
  DROP INDEX api_keys_by_account_seq;
  ALTER TABLE api_keys DROP COLUMN name;
  ALTER TABLE api_keys DROP COLUMN scopes;
  ALTER TABLE api_keys DROP COLUMN expires_at;
  ALTER TABLE api_keys DROP COLUMN last_used_at;
  ALTER TABLE api_keys DROP COLUMN seq;
  ALTER TABLE accounts DROP COLUMN last_key_seq;
`;

// And 12 (the audit log).
const WITHOUT_12 = `
  DROP TABLE audit_log;
  ALTER TABLE accounts DROP COLUMN last_audit_seq;
  ALTER TABLE api_keys DROP COLUMN expired_use_audited_at;
`;

// And 13 (sealed webhook secrets' key ids).
const WITHOUT_13 = `
  ALTER TABLE webhook_endpoints DROP COLUMN secret_key_id;
  ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_key_id;
`;

function execOn(url: string, sql: string): void {
  const db = new Database(url);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

/** Writes with the store code (that release's SQL, with 10's to 13's tables in place for the moment): pets in one batch, an order, an endpoint. */
async function writeData(url: string) {
  execOn(url, migrations.find((m) => m.version === 10)!.sqlite);
  execOn(url, migrations.find((m) => m.version === 11)!.sqlite);
  execOn(url, migrations.find((m) => m.version === 12)!.sqlite);
  execOn(url, migrations.find((m) => m.version === 13)!.sqlite);
  const store = await createStore(storeConfig(url, { pgPoolMax: 2, readCache: false }));
  try {
    assert.deepEqual(await store.pendingMigrations(), [7, 10, 11, 12, 13, 14], 'only the no-op, 10, 11, 12, 13 and 14 are pending, before anything moved');
    const services = await createServices({ store, clock: { now: () => Date.now() }, environment: 'production' });
    const account = await services.accounts.create('Former numbering');
    const key = (await services.apiKeys.create(account.id, 'production')).key;
    // Created at once: one group commit, so the log holds a run of events in one row (migration 9's columns).
    const pets = await Promise.all(
      Array.from({ length: 6 }, (_, i) => services.pets.create(account.id, { name: `Pet ${i}`, categoryId: i + 1, status: 'available' })),
    );
    const order = await services.orders.place(account.id, pets[0]!.id);
    const endpoint = await services.webhooks.create(account.id, { url: 'https://hooks.example.com/h', description: 'before' });
    const events = await store.events.list({ accountId: account.id, limit: 100, afterSeq: 0 });
    return { key, pets, order, endpoint, eventIds: events.map((e) => e.id) };
  } finally {
    await store.close();
    execOn(url, WITHOUT_13);
    execOn(url, WITHOUT_12);
    execOn(url, WITHOUT_11);
    execOn(url, WITHOUT_10);
  }
}

describe('upgrading a SQLite store recorded under the former numbering', () => {
  test('when two `petstore migrate` run at once and the app starts, then the rows move to 8 and 9, only 7 (and the later 10 to 13) is applied, and the data is served', async (t) => {
    const database = await sqliteBackend.createDatabase();
    const cleanups: Array<() => unknown> = [() => database.drop()];
    t.after(async () => {
      for (const fn of cleanups.reverse()) await fn();
    });
    buildFormerSchema(database.url);
    const before = await writeData(database.url);
    const db = new Database(database.url, { readonly: true });
    assert.ok(db.prepare<[], { span: number }>('SELECT max(span) AS span FROM events').get()!.span > 1, 'a run of events in one row');
    db.close();
    assert.deepEqual(readRows(database.url).map((r) => r.version), [1, 2, 3, 4, 5, 6, 7, 8], 'listing pending moved nothing');

    const env = { PETSTORE_DATABASE_URL: database.url };
    const runs = await Promise.all([cliJson<{ applied: number[] }>(['migrate'], env), cliJson<{ applied: number[] }>(['migrate'], env)]);
    assert.deepEqual(runs.flatMap((r) => r.applied).sort((x, y) => x - y), [7, 10, 11, 12, 13, 14], 'each of the no-op, 10, 11, 12, 13 and 14 applied once, by one process; 8 and 9 were not applied again');

    const rows = readRows(database.url);
    assert.deepEqual(rows.map((r) => [r.version, r.name]), migrations.map((m) => [m.version, m.name]));
    for (const row of rows) {
      if (row.version === 7 || row.version >= 10) assert.notEqual(row.applied_at, T0, `${row.version} is applied now`);
      else assert.equal(row.applied_at, T0, `version ${row.version} keeps its row: moved, not applied again`);
    }

    const app = await startApp({ after: (fn: () => unknown) => void cleanups.push(fn) }, { databaseUrl: database.url, backend: sqliteBackend });
    assert.deepEqual(await app.store.migrate(), []);
    assert.deepEqual(await app.store.pendingMigrations(), []);
    const { key, pets, order, endpoint, eventIds } = before;
    const expected: Pet[] = pets.map((p) => (p.id === order.petId ? { ...p, status: 'pending' } : p));
    assert.deepEqual((await app.request('GET', '/v1/pets?limit=100', { key })).body, expected.sort((a, b) => a.id - b.id));
    // Migration 10 counted what was there: the inventory and each category's pets.
    const count = (status: string) => expected.filter((p) => p.status === status).length;
    assert.deepEqual((await app.request('GET', '/v1/store/inventory', { key })).body, {
      available: count('available'), pending: count('pending'), sold: 0, withoutStatus: 0, total: expected.length,
    });
    assert.deepEqual((await app.request('GET', '/v1/categories?limit=100', { key })).body, expected.map((p) => ({ id: p.categoryId, petCount: 1 })));
    assert.deepEqual((await app.request('GET', `/v1/store/orders/${order.id}`, { key })).body, order);
    const got = await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}`, { key });
    assert.equal(got.status, 200, got.text);
    assert.equal((got.body as { description: string }).description, 'before');
    const events = (await app.request('GET', '/v1/events?limit=100', { key })).body as Array<{ id: string; type: string }>;
    assert.deepEqual(events.map((e) => e.id), eventIds);
    assert.equal(events.filter((e) => e.type === 'pet.created').length, pets.length);

    const created = await app.request('POST', '/v1/pets', { key, body: { name: 'After', categoryId: 1 } });
    assert.equal(created.status, 201, created.text);
    assert.equal((created.body as Pet).id, pets.length + 1);
  });
});
