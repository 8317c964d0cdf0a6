import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { StoreUnavailableError } from '../src/errors.js';
import { createStore } from '../src/store/index.js';
import { postgresAdminUrl, postgresBackend, withPostgresAdmin } from './helpers/backends.js';
import { storeConfig } from './helpers/store-config.js';

test(
  'when a PostgreSQL database stops accepting connections (55000), then the store reports it unavailable and recovers when it is allowed again',
  { skip: postgresAdminUrl ? false : 'set PETSTORE_TEST_POSTGRES_URL to run it' },
  async (t) => {
    const database = await postgresBackend.createDatabase();
    const name = new URL(database.url).pathname.slice(1);
    const store = await createStore(storeConfig(database.url, { pgPoolMax: 2 }));
    t.after(async () => {
      await withPostgresAdmin((admin) => admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS true`));
      await store.close();
      await database.drop();
    });
    await store.migrate();
    await withPostgresAdmin(async (admin) => {
      await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
    });
    let failure: unknown;
    for (let i = 0; i < 3 && !failure; i++) await store.ping().catch((err: unknown) => (failure = err));
    assert.ok(failure instanceof StoreUnavailableError, `got ${String(failure)}`);
    await withPostgresAdmin((admin) => admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS true`));
    await store.ping();
  },
);
