// The store: a registry of per-resource repositories (src/store/<resource>.ts, SQL in
// src/store/<backend>/), the database services open their transactions on, and its lifecycle.
// Every backend passes the same contract suites (test/store-contract*.test.ts).
import type { AccountRepository } from './accounts.js';
import type { ApiKeyRepository, ApiKeyWatch } from './api-keys.js';
import type { AuditLogRepository } from './audit-log.js';
import type { CategoryRepository } from './categories.js';
import type { SqlDatabase } from './core/sql.js';
import type { EventRepository } from './events.js';
import type { IdempotencyRepository } from './idempotency.js';
import type { JobRepository } from './jobs.js';
import type { MessageRepository } from './messages.js';
import type { OrderRepository } from './orders.js';
import type { PetRepository } from './pets.js';
import type { SettingsRepository } from './settings.js';
import type { WebhookRepository } from './webhooks.js';

export type { Account } from './accounts.js';
export type { ApiKeyRecord, ApiKeyWatch } from './api-keys.js';
export type { Job } from './jobs.js';
export type { StoredMessage } from './messages.js';
export type { ListPetsQuery } from './pets.js';

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  /** The database: services open their transactions on it. */
  readonly db: SqlDatabase;
  readonly settings: SettingsRepository;
  readonly accounts: AccountRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly pets: PetRepository;
  readonly categories: CategoryRepository;
  readonly idempotency: IdempotencyRepository;
  readonly orders: OrderRepository;
  readonly messages: MessageRepository;
  readonly jobs: JobRepository;
  readonly events: EventRepository;
  readonly webhooks: WebhookRepository;
  readonly auditLog: AuditLogRepository;
  /** Said at start and on /readyz while webhook signing secrets are stored plain (PostgreSQL without PETSTORE_SECRET_KEY). */
  secretsWarning?: string | undefined;
  /**
   * SQLite: rewrites the file (VACUUM) and empties the WAL, so no replaced or deleted value
   * (a plain-text secret before sealing) stays readable in either. Undefined on PostgreSQL.
   * Resolves false when the WAL could not be emptied (a reader held it): run it again.
   */
  compact?(): Promise<boolean>;
  /** Connection pool usage, for backends that pool connections. */
  poolStats?(): PoolStats;
  /**
   * A number that changes whenever another connection or process commits (SQLite's
   * data_version), so in-process caches can tell they may be stale. Cheap: no disk access.
   */
  externalChangeCounter?(): number;
  /** Tells every process that events were committed (PostgreSQL: NOTIFY; event streams read the log then). */
  announceEvents?(): void;
  /** Hears announceEvents() from every process (PostgreSQL: LISTEN); onEvents also when notices may have been missed. */
  watchEvents?(onEvents: () => void): ApiKeyWatch;
  /** Applies pending migrations; safe to call from several processes at once. */
  migrate(): Promise<number[]>;
  /** Pending migration versions, without applying them. */
  pendingMigrations(): Promise<number[]>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
