// The SQLite store: its repositories over one connection (driver.ts).
import type { Store } from '../types.js';
import { sqliteDialect } from '../core/dialect.js';
import { createAccountRepository } from '../accounts.js';
import { createApiKeyRepository } from '../api-keys.js';
import { createAuditLogRepository } from '../audit-log.js';
import { createCategoryRepository } from '../categories.js';
import { createIdempotencyRepository } from '../idempotency.js';
import { createPetRepository } from '../pets.js';
import { createSettingsRepository } from '../settings.js';
import { watchExternalChanges } from './changes.js';
import { BACKSTOP_PAGES, startCheckpointer } from './checkpointer.js';
import { openSqlite, sqlitePath, storeError } from './driver.js';
import { createSqliteEvents } from './events.js';
import { createSqliteJobs } from './jobs.js';
import { createSqliteMessages } from './messages.js';
import { migrate, pendingMigrations } from '../core/migrator.js';
import { createSqliteMigrationDialect } from './migration-dialect.js';
import { createSqliteOrders } from './orders.js';
import { sqlitePetBatches, withReadCache } from './pets.js';
import { createReadCache } from './read-cache.js';
import { createSqliteWebhooks } from './webhooks.js';
import type { SecretBox } from '../../webhooks/secret-box.js';

export { sqlitePath };

export interface SqliteStoreOptions {
  /** Cache pages and pets in memory, invalidated exactly (see read-cache.ts). Default true. */
  readCache?: boolean;
  /** Write the event log (and webhook deliveries) with every change. Default true. */
  events?: boolean;
  /** Checkpoint the WAL from a thread (checkpointer.ts): for long-running servers. Default false. */
  checkpointThread?: boolean;
  /** Seals webhook signing secrets (default: plain text; createStore passes the key file's). */
  secrets?: SecretBox;
}

export function createSqliteStore(url: string, options: SqliteStoreOptions = {}): Store {
  const db = openSqlite(url);
  const { connection } = db;
  const checkpointer = options.checkpointThread && db.file !== ':memory:' ? startCheckpointer(db.file) : undefined;
  if (checkpointer) connection.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);

  const cache = options.readCache === false ? undefined : createReadCache();
  const changes = watchExternalChanges(db, cache);
  const events = createSqliteEvents(db, options.events !== false);
  const pets = createPetRepository({ db, dialect: sqliteDialect, events, backend: sqlitePetBatches(db, (tx, writes) => events.appendMany(tx, writes), cache) });

  return {
    kind: 'sqlite',
    db,
    settings: createSettingsRepository(db, sqliteDialect),
    accounts: createAccountRepository(db),
    apiKeys: createApiKeyRepository(db, sqliteDialect),
    idempotency: createIdempotencyRepository(db, sqliteDialect),
    pets: cache ? withReadCache(pets, cache, () => void changes.counter()) : pets,
    events,
    categories: createCategoryRepository(db, sqliteDialect),
    orders: createSqliteOrders(db),
    messages: createSqliteMessages(db),
    jobs: createSqliteJobs(db),
    webhooks: createSqliteWebhooks(db, options.secrets),
    auditLog: createAuditLogRepository(db),
    externalChangeCounter: () => changes.counter(),

    async migrate() {
      try {
        return await migrate(createSqliteMigrationDialect(connection));
      } catch (error) {
        throw storeError(error);
      } finally {
        // Statements prepared before may refer to tables a migration rebuilt.
        db.forgetStatements();
      }
    },

    pendingMigrations: () => pendingMigrations(createSqliteMigrationDialect(connection)).catch((error: unknown) => Promise.reject(storeError(error))),

    ping: () => db.ping(),

    async compact() {
      try {
        connection.exec('VACUUM');
        const [result] = connection.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
        return result?.busy === 0;
      } catch (error) {
        throw storeError(error);
      }
    },

    async close() {
      // Nobody is left waiting: what is queued is committed (or rejected, if already closed).
      await pets.drain();
      cache?.clear();
      if (connection.open) changes.close();
      await checkpointer?.stop();
      await db.close();
    },
  };
}
