// Upgrading an event log made by the release that fanned out at write time (schema 6/7: event
// ids of the time and random digits, a unique index on them, a delivery and a job written with
// each event) to the log keyed by sequence alone (migration 8), on both backends:
// old ids are still found (through the partial index), nothing already fanned out is fanned
// out again, and new events get ids that carry their sequence and reach the endpoint once.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { migrations } from '../src/store/migrations/index.js';
import { createStore } from '../src/store/index.js';
import { backends, type Backend } from './helpers/backends.js';
import { createPet } from './helpers/store.js';
import { storeConfig } from './helpers/store-config.js';

const T0 = '2026-11-20T00:00:00.000Z';
const ACCOUNT = 'acct_migrated';
// The previous release's ids: 'evt_', 12 hex digits of the time in ms, 20 random ones.
const OLD_IDS = ['evt_019aa13e4c00a1b2c3d4e5f6a7b8c9d0e1f2', 'evt_019aa13e4c01f0e1d2c3b4a5968778695a4b'];

/** Builds schema 6 with the previous release's migrations and writes what it wrote: two events, an endpoint, the first event's delivery and job. */
async function buildVersion6(backend: Backend, url: string): Promise<void> {
  // The previous release: SQLite 1-6; PostgreSQL 1-7 (7: key change notifications, which SQLite did not have).
  const old = migrations.filter((m) => m.version <= (backend.name === 'sqlite' ? 6 : 7)).map((m) => ({ version: m.version, name: m.name, sql: m[backend.name] }));
  const data = JSON.stringify({ object: { id: 1, name: 'Rex', categoryId: 1, status: 'available' } });
  const statements: Array<[string, unknown[]]> = [
    ['INSERT INTO accounts (id, name, created_at, last_pet_id, last_event_seq, last_endpoint_seq) VALUES ($1, $2, $3, 2, 2, 1)', [ACCOUNT, 'migrated', T0]],
    ['INSERT INTO pets (account_id, id, name, category_id, status, created_at) VALUES ($1, 1, $2, 1, $3, $4), ($1, 2, $2, 1, $3, $4)', [ACCOUNT, 'Rex', 'available', T0]],
    ["INSERT INTO events (account_id, seq, id, type, created_at, data) VALUES ($1, 1, $2, 'pet.created', $3, $4), ($1, 2, $5, 'pet.created', $3, $4)", [ACCOUNT, OLD_IDS[0], T0, data, OLD_IDS[1]]],
    ['INSERT INTO webhook_endpoints (account_id, seq, id, url, event_mask, secret, created_at) VALUES ($1, 1, $2, $3, -1, $4, $5)', [ACCOUNT, 'we_old', 'https://hooks.example.com/h', 'whsec_x', T0]],
    ["INSERT INTO webhook_deliveries (account_id, endpoint_id, event_seq, id, status, next_attempt_at, created_at) VALUES ($1, $2, 1, $3, 'succeeded', NULL, $4), ($1, $2, 2, $5, 'pending', 0, $4)", [ACCOUNT, 'we_old', 'whd_1', T0, 'whd_2']],
    ["INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at) VALUES ('webhook.deliver', $1, 2, $2, 0, 0)", [ACCOUNT, 'we_old']],
  ];
  if (backend.name === 'sqlite') {
    const db = new Database(url);
    try {
      db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
      for (const m of old) {
        db.exec(m.sql);
        db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, T0);
      }
      // $n becomes ?, its value repeated where it is used again.
      for (const [sql, params] of statements) {
        const values: unknown[] = [];
        db.prepare(sql.replace(/\$(\d+)/g, (_, n: string) => (values.push(params[Number(n) - 1]), '?'))).run(...values);
      }
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)');
    for (const m of old) {
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations VALUES ($1, $2, $3)', [m.version, m.name, T0]);
    }
    for (const [sql, params] of statements) await client.query(sql, params);
  } finally {
    await client.end();
  }
}

describe('migrating the event log to sequence-keyed ids and fan-out cursors', { concurrency: true }, () => {
  for (const backend of backends) {
    test(`${backend.name}: when a schema-6 log is migrated, then old ids are found, nothing is fanned out twice, and new events carry their sequence`, async (t) => {
      const database = await backend.createDatabase();
      t.after(() => database.drop());
      await buildVersion6(backend, database.url);
      const store = await createStore(storeConfig(database.url, { pgPoolMax: 2, pgPipelineConnections: 0 }));
      t.after(() => store.close());
      // Every later migration (7 is a no-op only PostgreSQL records as applied from schema 6).
      const later = migrations.map((m) => m.version).filter((v) => v >= (backend.name === 'sqlite' ? 7 : 8));
      assert.deepEqual(await store.migrate(), later);

      // Old ids, found through the partial index; ids that are not there, of either form, are not.
      for (const [i, id] of OLD_IDS.entries()) assert.equal((await store.events.get(ACCOUNT, id))?.seq, i + 1, id);
      assert.equal(await store.events.get(ACCOUNT, 'evt_019aa13e4c00a1b2c3d4e5f6a7b8c9d0e1f3'), undefined);
      assert.equal(await store.events.get('acct_other', OLD_IDS[0]!), undefined, 'another account does not see it');

      // The endpoint's cursor starts after what the previous release fanned out itself.
      assert.equal(await store.webhooks.fanOut(1000), 0, 'nothing fanned out again');
      const pet = await createPet(store, ACCOUNT, { name: 'Tom', categoryId: 2, status: 'available' }, new Date().toISOString());
      assert.equal(pet.id, 3);
      const [event] = await store.events.list({ accountId: ACCOUNT, limit: 10, afterSeq: 2 });
      assert.equal(event?.seq, 3);
      assert.match(event!.id, /^evt_000000000003[0-9a-f]{20}$/, 'the new id carries its sequence');
      assert.equal((await store.events.get(ACCOUNT, event!.id))?.seq, 3);
      const forged = event!.id.slice(0, 16) + '0'.repeat(20);
      assert.equal(await store.events.get(ACCOUNT, forged), undefined, 'the sequence alone does not find it: the random digits must match');
      assert.equal(await store.events.get('acct_other', event!.id), undefined);

      assert.equal(await store.webhooks.fanOut(1000), 1, 'the new event is fanned out');
      assert.equal(await store.webhooks.fanOut(1000), 0, 'once');
      const deliveries = await store.webhooks.listDeliveries({ accountId: ACCOUNT, endpointId: 'we_old', limit: 10 });
      assert.deepEqual(deliveries.map((d) => [d.eventSeq, d.status]), [[1, 'succeeded'], [2, 'pending'], [3, 'pending']]);
      assert.deepEqual((await store.webhooks.stats()).pending, 2, 'two jobs: the old pending delivery and the new one');
    });
  }
});
