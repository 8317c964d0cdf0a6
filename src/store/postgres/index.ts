// The PostgreSQL store: its repositories over one pool (driver.ts).
import { postgresDialect } from '../core/dialect.js';
import { createAccountRepository } from '../accounts.js';
import { type ApiKeyWatch, createApiKeyRepository } from '../api-keys.js';
import { createAuditLogRepository } from '../audit-log.js';
import { createCategoryRepository } from '../categories.js';
import { createIdempotencyRepository } from '../idempotency.js';
import { createPetRepository } from '../pets.js';
import { createSettingsRepository } from '../settings.js';
import type { Store } from '../types.js';
import { CONNECTION_TIMEOUT_MS, guard, isConnectionError, openPostgres, type PostgresOptions } from './driver.js';
import { createPostgresEvents } from './events.js';
import { announcer, EVENTS_CHANNEL } from './event-notices.js';
import { watchChannel, watchKeyChanges } from './key-changes.js';
import { createPostgresJobs } from './jobs.js';
import { createPostgresMessages } from './messages.js';
import { migrate, pendingMigrations } from '../core/migrator.js';
import { createPostgresMigrationDialect } from './migration-dialect.js';
import { createPostgresOrders } from './orders.js';
import { postgresPetBatches } from './pets.js';
import { createPostgresWebhooks } from './webhooks.js';
import type { SecretBox } from '../../webhooks/secret-box.js';

export { isConnectionError };

export { MIGRATION_LOCK_KEY } from './migration-dialect.js';

/** `events`: write the event log with every change (default true). */
export function createPostgresStore(url: string, options: PostgresOptions & { events?: boolean; secrets?: SecretBox }): Store {
  const eventsOn = options.events !== false;
  const db = openPostgres(url, options);
  const { pool } = db;
  const events = createPostgresEvents(db, eventsOn);
  const watches = new Set<ApiKeyWatch>();
  const pets = createPetRepository({ db, dialect: postgresDialect, events, backend: postgresPetBatches(db, eventsOn) });

  return {
    kind: 'postgres',
    db,
    settings: createSettingsRepository(db, postgresDialect),
    accounts: createAccountRepository(db),
    apiKeys: createApiKeyRepository(db, postgresDialect, (onChange) => {
      const watch = watchKeyChanges(url, { connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECTION_TIMEOUT_MS }, onChange);
      watches.add(watch);
      return watch;
    }),
    idempotency: createIdempotencyRepository(db, postgresDialect),
    pets,
    events,
    categories: createCategoryRepository(db, postgresDialect),
    orders: createPostgresOrders(db),
    messages: createPostgresMessages(db),
    jobs: createPostgresJobs(db),
    webhooks: createPostgresWebhooks(db, options.secrets),
    auditLog: createAuditLogRepository(db),
    announceEvents: announcer(db),
    watchEvents(onEvents) {
      const watch = watchChannel(url, { connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECTION_TIMEOUT_MS }, EVENTS_CHANNEL, () => onEvents());
      watches.add(watch);
      return watch;
    },

    migrate: () => guard(() => migrate(createPostgresMigrationDialect(pool))),

    pendingMigrations: () => guard(() => pendingMigrations(createPostgresMigrationDialect(pool))),

    poolStats() {
      return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
    },

    ping: () => db.ping(),

    async close() {
      // Nobody is left waiting: what is queued is committed first.
      await pets.drain();
      await Promise.all([...watches].map((watch) => watch.close()));
      await db.close();
    },
  };
}
