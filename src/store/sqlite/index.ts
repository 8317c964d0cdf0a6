// The SQLite store: its repositories over one connection (driver.ts).
import type { Store } from '../types.js';
import { sqliteDialect } from '../core/dialect.js';
import type { Sql } from '../core/sql.js';
import { createAccountRepository, type IdCounter } from '../accounts.js';
import { createApiKeyRepository } from '../api-keys.js';
import type { EventRepository, NewEvent } from '../events.js';
import { createIdempotencyRepository } from '../idempotency.js';
import { createPetRepository } from '../pets.js';
import { createSettingsRepository } from '../settings.js';
import { watchExternalChanges } from './changes.js';
import type { SqliteContext } from './context.js';
import { openSqlite, sqlitePath, storeError } from './driver.js';
import { createSqliteEvents, createSqliteEventWriter } from './events.js';
import { createSqliteJobs } from './jobs.js';
import { createSqliteMessages } from './messages.js';
import { migrate, pendingMigrations } from '../core/migrator.js';
import { createSqliteMigrationDialect } from './migration-dialect.js';
import { createSqliteOrders } from './orders.js';
import { type AppendMany, sqlitePetBatches, withReadCache } from './pets.js';
import { createReadCache } from './read-cache.js';
import { createSqliteWebhooks } from './webhooks.js';

export { sqlitePath };

export interface SqliteStoreOptions {
  /** Cache pages and pets in memory, invalidated exactly (see read-cache.ts). Default true. */
  readCache?: boolean;
  /** Write the event log (and webhook deliveries) with every change. Default true. */
  events?: boolean;
}

/** Wraps every method so SQLite's "cannot serve" failures surface as StoreUnavailableError. */
function guardUnavailable<T extends object>(methods: T): T {
  const guarded: Record<string, unknown> = { ...(methods as Record<string, unknown>) };
  for (const [name, value] of Object.entries(methods as Record<string, unknown>)) {
    if (typeof value !== 'function') continue;
    const method = value as (...args: unknown[]) => unknown;
    const unavailable = (error: unknown): never => {
      throw storeError(error);
    };
    guarded[name] = (...args: unknown[]) => {
      try {
        const result = method(...args);
        return result instanceof Promise ? result.catch(unavailable) : result;
      } catch (error) {
        return unavailable(error);
      }
    };
  }
  return guarded as T;
}

export function createSqliteStore(url: string, options: SqliteStoreOptions = {}): Store {
  const db = openSqlite(url);
  const { connection } = db;

  const cache = options.readCache === false ? undefined : createReadCache();
  const changes = watchExternalChanges(db, cache);
  const syncNextIds = (counter: IdCounter, accountId: string, count: number): number => {
    const row = db.statement<[number, string], { last: number }>(
      `UPDATE accounts SET ${counter} = ${counter} + ? WHERE id = ? RETURNING ${counter} AS last`,
    ).get(count, accountId);
    return row ? row.last - count + 1 : 1;
  };
  const writeEvents = createSqliteEventWriter({ stmt: db.statement, nextIds: syncNextIds }, options.events !== false);
  const appendMany: AppendMany = async (_tx: Sql, writes) => writeEvents.writeMany(writes);
  const events: Pick<EventRepository, 'append'> = {
    append: async (_tx: Sql, accountId: string, list: readonly NewEvent[], createdAt: string) => writeEvents.write(accountId, list, createdAt),
  };
  const pets = createPetRepository({ db, dialect: sqliteDialect, events, backend: sqlitePetBatches(db, appendMany, cache) });
  const context: SqliteContext = { db: connection, stmt: db.statement, cache, nextIds: syncNextIds, writeEvents };

  return {
    kind: 'sqlite',
    db,
    settings: createSettingsRepository(db, sqliteDialect),
    accounts: createAccountRepository(db),
    apiKeys: createApiKeyRepository(db),
    idempotency: createIdempotencyRepository(db, sqliteDialect),
    pets: cache ? withReadCache(pets, cache, () => void changes.counter()) : pets,
    events,
    orders: createSqliteOrders(db),
    messages: createSqliteMessages(db),
    jobs: createSqliteJobs(db),
    ...guardUnavailable({
      ...createSqliteEvents(context),
      ...createSqliteWebhooks(context),
    }),
    externalChangeCounter: () => changes.counter(),

    async migrate() {
      try {
        return await migrate(createSqliteMigrationDialect(connection));
      } finally {
        // Statements prepared before may refer to tables a migration rebuilt.
        db.forgetStatements();
      }
    },

    pendingMigrations: () => pendingMigrations(createSqliteMigrationDialect(connection)),

    ping: () => db.ping(),

    async close() {
      // Nobody is left waiting: what is queued is committed (or rejected, if already closed).
      await pets.drain();
      cache?.clear();
      if (connection.open) changes.close();
      await db.close();
    },
  };
}
