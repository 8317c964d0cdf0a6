// The PostgreSQL store: its repositories over one pool (driver.ts).
import type { PoolClient, QueryResultRow } from 'pg';
import { postgresDialect } from '../core/dialect.js';
import type { Sql } from '../core/sql.js';
import { createAccountRepository } from '../accounts.js';
import { type ApiKeyWatch, createApiKeyRepository } from '../api-keys.js';
import type { EventRepository, NewEvent } from '../events.js';
import { createIdempotencyRepository } from '../idempotency.js';
import { createPetRepository } from '../pets.js';
import { createSettingsRepository } from '../settings.js';
import type { Store } from '../types.js';
import { CONNECTION_TIMEOUT_MS, guard, isConnectionError, openPostgres, type PostgresOptions } from './driver.js';
import { createPostgresEvents, createPostgresEventWriter } from './events.js';
import { watchKeyChanges } from './key-changes.js';
import { createPostgresJobs } from './jobs.js';
import { createPostgresMessages } from './messages.js';
import { migrate, pendingMigrations } from '../core/migrator.js';
import { createPostgresMigrationDialect } from './migration-dialect.js';
import { createPostgresOrders } from './orders.js';
import { postgresPetBatches } from './pets.js';
import { createPostgresWebhooks } from './webhooks.js';

export { isConnectionError };

export { MIGRATION_LOCK_KEY } from './migration-dialect.js';

type Queryable = Pick<PoolClient, 'query'>;

/** Ends a transaction with ROLLBACK and makes it resolve with `value`. */
class Rollback {
  constructor(readonly value: unknown) {}
}

/** `events`: write the event log with every change (default true). */
export function createPostgresStore(url: string, options: PostgresOptions & { events?: boolean }): Store {
  const eventsOn = options.events !== false;
  const writeEvents = createPostgresEventWriter(eventsOn);
  const db = openPostgres(url, options);
  const { pool } = db;
  const query = <R extends QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> => db.all<R>(text, values);
  const clientOf = (tx: Sql): Queryable => ({ query: (async (text: string, values: unknown[]) => ({ rowCount: await tx.run(text, values), rows: [] })) as never });
  const events: Pick<EventRepository, 'append'> = {
    append: (tx: Sql, accountId: string, list: readonly NewEvent[], createdAt: string) => writeEvents(clientOf(tx), accountId, list, createdAt),
  };
  const rollback = (value: unknown): never => {
    throw new Rollback(value);
  };
  /** Runs `work` in one transaction on one client; `rollback(value)` ends it quietly with that value. */
  const transaction = <T>(work: (client: PoolClient, rollback: (value: T) => never) => Promise<T>): Promise<T> =>
    guard(async () => {
      const client = await pool.connect();
      const ignore = () => {};
      client.on('error', ignore);
      let broken = false;
      try {
        await client.query('BEGIN');
        try {
          const result = await work(client, rollback);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {
            broken = true;
          });
          if (error instanceof Rollback) return error.value as T;
          broken ||= isConnectionError(error);
          throw error;
        }
      } finally {
        client.off('error', ignore);
        client.release(broken);
      }
    });

  const watches = new Set<ApiKeyWatch>();
  const pets = createPetRepository({ db, dialect: postgresDialect, events, backend: postgresPetBatches(db, eventsOn) });
  const context = { query, transaction, writeEvents };

  return {
    kind: 'postgres',
    db,
    settings: createSettingsRepository(db, postgresDialect),
    accounts: createAccountRepository(db),
    apiKeys: createApiKeyRepository(db, (onChange) => {
      const watch = watchKeyChanges(url, { connectionTimeoutMillis: CONNECTION_TIMEOUT_MS }, onChange);
      watches.add(watch);
      return watch;
    }),
    idempotency: createIdempotencyRepository(db, postgresDialect),
    pets,
    events,
    orders: createPostgresOrders(db),
    messages: createPostgresMessages(db),
    jobs: createPostgresJobs(db),
    ...createPostgresEvents(context),
    ...createPostgresWebhooks(context),

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
