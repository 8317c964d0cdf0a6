// Repository-level tests: a migrated database of a backend, with accounts, and the driver
// (SqlDatabase) the repositories run on, opened beside the store that migrated it.
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import type { SqlDatabase } from '../../src/store/core/sql.js';
import { storeConfig } from './store-config.js';
import { createStore } from '../../src/store/index.js';
import { openPostgres } from '../../src/store/postgres/driver.js';
import { openSqlite } from '../../src/store/sqlite/driver.js';
import type { Store } from '../../src/store/types.js';
import type { Backend } from './backends.js';

export interface RepositoryFixture {
  /** The driver the repositories under test run on. */
  db: SqlDatabase;
  /** A store on the same database (what made it and its accounts). */
  store: Store;
  accounts: string[];
  url: string;
}

/** A fresh migrated database with `accounts` accounts; everything is closed and dropped after the test. */
export async function repositoryFixture(t: TestContext, backend: Backend, accounts = 2, options: { events?: boolean } = {}): Promise<RepositoryFixture> {
  const database = await backend.createMigratedDatabase();
  const config = storeConfig(database.url, { pgPoolMax: 2, pgPipelineConnections: 0 });
  const store = await createStore({ ...config, events: { ...config.events, enabled: options.events ?? true } });
  const db: SqlDatabase = backend.name === 'sqlite' ? openSqlite(database.url) : openPostgres(database.url, { poolMax: 2, pipelineConnections: 0 });
  t.after(async () => {
    await db.close();
    await store.close();
    await database.drop();
  });
  await store.migrate();
  const ids: string[] = [];
  for (let i = 0; i < accounts; i++) {
    const id = `acct_${randomBytes(6).toString('hex')}`;
    await store.accounts.create({ id, name: `Account ${i}`, createdAt: '2024-05-01T12:00:00.000Z' });
    ids.push(id);
  }
  return { db, store, accounts: ids, url: database.url };
}
