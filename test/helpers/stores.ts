// Real stores for the repository contract suites: a fresh database per test, migrated, with
// accounts; closed and dropped when the test ends.
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { createStore } from '../../src/store/index.js';
import { storeConfig } from './store-config.js';
import type { Account, Store } from '../../src/store/types.js';
import type { Backend } from './backends.js';

export const T0 = '2024-05-01T12:00:00.000Z';

export interface TestStore {
  store: Store;
  accounts: Account[];
  /** Another store on the same database (another connection, as another process would have). */
  another(): Promise<Store>;
}

/** A migrated store on a new database; `accounts` new accounts in it. */
export async function storeWithAccounts(t: TestContext, backend: Backend, accounts: number): Promise<TestStore> {
  const database = await backend.createMigratedDatabase();
  const store = await createStore(storeConfig(database.url, { pgPoolMax: 4 })).catch(async (error: unknown) => {
    await database.drop();
    throw error;
  });
  const others: Store[] = [];
  t.after(async () => {
    for (const other of others) await other.close();
    await store.close();
    await database.drop();
  });
  await store.migrate();
  const created: Account[] = [];
  for (let i = 0; i < accounts; i++) {
    created.push(await store.accounts.create({ id: `acct_${randomBytes(6).toString('hex')}`, name: 'Test account', createdAt: T0 }));
  }
  const another = async () => {
    const other = await createStore(storeConfig(database.url, { pgPoolMax: 4 }));
    others.push(other);
    return other;
  };
  return { store, accounts: created, another };
}

/** Thrown to roll a transaction back in a test. */
export class Rollback extends Error {}
