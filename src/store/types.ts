// The persistence contract. Services depend on this interface only; each backend
// (sqlite/, postgres/) implements it and must pass the same contract test suite.
import type { DeliveryStatus, EventType } from '../schemas/events.js';
import type { SqlDatabase } from './core/sql.js';
import type { EventRepository as EventLog } from './events.js';
import type { IdempotencyRepository } from './idempotency.js';
import type { JobRepository } from './jobs.js';
import type { MessageRepository } from './messages.js';
import type { OrderRepository } from './orders.js';
import type { PetRepository } from './pets.js';
import type { AccountRepository } from './accounts.js';
import type { ApiKeyRepository } from './api-keys.js';
import type { SettingsRepository } from './settings.js';

export type { Job } from './jobs.js';
export type { StoredMessage } from './messages.js';

export type { Account } from './accounts.js';
export type { ApiKeyRecord, ApiKeyWatch } from './api-keys.js';
export type { ListPetsQuery } from './pets.js';

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

export interface StoredEvent {
  seq: number;
  id: string;
  type: EventType;
  createdAt: string;
  data: string;
}

export interface ListEventsStoreQuery {
  accountId: string;
  limit: number;
  /** Bit i set: EVENT_TYPES[i] wanted; undefined: every kind. */
  typeMask?: number | undefined;
  afterSeq?: number | undefined;
}

/** The account's event log (src/store/<backend>/events.ts); events are written by the changes themselves. */
export interface EventRepository {
  listEvents(query: ListEventsStoreQuery): Promise<readonly StoredEvent[]>;
  getEvent(accountId: string, id: string): Promise<StoredEvent | undefined>;
  /** Deletes events created before `before` (ISO), with their deliveries; returns how many events. */
  pruneEvents(before: string): Promise<number>;
}

export interface StoredWebhookEndpoint {
  /** Position in the account's list (cursors). */
  seq: number;
  id: string;
  url: string;
  /** Bit i: EVENT_TYPES[i] is delivered; -1: every kind, including later ones. */
  eventMask: number;
  description: string | undefined;
  disabled: boolean;
  disabledReason: string | undefined;
  secret: string;
  previousSecret: string | undefined;
  /** Epoch ms until which the previous secret still signs. */
  previousSecretExpiresAt: number | undefined;
  createdAt: string;
}

export interface NewWebhookEndpointRecord {
  id: string;
  url: string;
  eventMask: number;
  description: string | undefined;
  secret: string;
  createdAt: string;
}

export interface WebhookEndpointPatch {
  url?: string;
  eventMask?: number;
  description?: string | null;
  disabled?: boolean;
}

export interface StoredDelivery {
  id: string;
  eventSeq: number;
  eventId: string;
  eventType: EventType;
  status: DeliveryStatus;
  attempts: number;
  lastAttemptAt: string | undefined;
  lastResponseStatus: number | undefined;
  lastError: string | undefined;
  nextAttemptAt: string | undefined;
}

/** A due delivery leased to a worker, with what it needs to make the attempt. */
export interface ClaimedDelivery {
  jobId: number;
  accountId: string;
  endpointId: string;
  eventSeq: number;
  /** Attempts made before this one. */
  attempts: number;
  /** A manual retry of a finished delivery: one attempt, no schedule. */
  singleAttempt: boolean;
  url: string;
  disabled: boolean;
  secret: string;
  previousSecret: string | undefined;
  previousSecretExpiresAt: number | undefined;
  event: StoredEvent;
}

/** What an attempt came to; recorded with its job's removal or rescheduling in one transaction. */
export interface AttemptRecord {
  jobId: number;
  accountId: string;
  endpointId: string;
  eventSeq: number;
  /** `succeeded`, `failed` (for good), `retry` (due again at nextAttemptAt), `gone` (410: failed and the endpoint disabled), `skipped` (the endpoint is disabled: failed without an attempt). */
  outcome: 'succeeded' | 'failed' | 'retry' | 'gone' | 'skipped';
  /** ISO time of the attempt. */
  at: string;
  responseStatus?: number | undefined;
  error?: string | undefined;
  /** Epoch ms, with `retry`. */
  nextAttemptAt?: number | undefined;
}

export interface WebhookStats {
  pending: number;
  oldestCreatedAt: string | undefined;
}

/** Webhook endpoints and their deliveries (src/store/<backend>/webhooks.ts). Every call is scoped by account. */
export interface WebhookRepository {
  /** Undefined when the account already has `max` endpoints (checked under the account's lock). */
  createWebhookEndpoint(accountId: string, endpoint: NewWebhookEndpointRecord, max: number): Promise<StoredWebhookEndpoint | undefined>;
  getWebhookEndpoint(accountId: string, id: string): Promise<StoredWebhookEndpoint | undefined>;
  listWebhookEndpoints(query: { accountId: string; limit: number; afterSeq?: number | undefined }): Promise<readonly StoredWebhookEndpoint[]>;
  updateWebhookEndpoint(accountId: string, id: string, patch: WebhookEndpointPatch): Promise<StoredWebhookEndpoint | undefined>;
  /** Deletes the endpoint, its deliveries and their jobs; false when there was none. */
  deleteWebhookEndpoint(accountId: string, id: string): Promise<boolean>;
  /** The new secret signs from now; the current one keeps signing beside it until `previousExpiresAt` (epoch ms). */
  rotateWebhookSecret(accountId: string, id: string, secret: string, previousExpiresAt: number): Promise<StoredWebhookEndpoint | undefined>;
  listWebhookDeliveries(query: { accountId: string; endpointId: string; limit: number; status?: DeliveryStatus | undefined; afterSeq?: number | undefined }): Promise<readonly StoredDelivery[]>;
  /** Due now: a pending delivery's next attempt, or one more attempt of a finished one. Undefined when not found. */
  retryWebhookDelivery(accountId: string, endpointId: string, deliveryId: string, now: number): Promise<StoredDelivery | undefined>;
  /**
   * Leases up to `max` due deliveries (jobs of kind webhook.deliver) until `now + leaseMs`,
   * skipping those of `busyEndpoints` (at their concurrency limit in this process).
   */
  claimWebhookDeliveries(now: number, leaseMs: number, max: number, busyEndpoints: readonly string[]): Promise<ClaimedDelivery[]>;
  /**
   * Fans the event log out to endpoints: for each enabled endpoint, the events after its
   * cursor (at most `max` of them) become pending deliveries with their jobs, and the cursor
   * moves past them, in one transaction. Changes write only their events; this runs in the
   * worker. Returns how many events were passed over (delivered or filtered out by kind).
   */
  fanOutWebhookEvents(max: number): Promise<number>;
  /** Records the attempts and settles their jobs, all in one transaction. */
  recordWebhookAttempts(records: readonly AttemptRecord[]): Promise<void>;
  webhookStats(): Promise<WebhookStats>;
}

export interface Store extends EventRepository, WebhookRepository {
  readonly kind: 'sqlite' | 'postgres';
  /** The database: services open their transactions on it. */
  readonly db: SqlDatabase;
  readonly settings: SettingsRepository;
  readonly accounts: AccountRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly pets: PetRepository;
  readonly idempotency: IdempotencyRepository;
  readonly orders: OrderRepository;
  readonly messages: MessageRepository;
  readonly jobs: JobRepository;
  /** Appending to the log in a service's transaction (the reads are still flat, below). */
  readonly events: Pick<EventLog, 'append'>;
  /** Connection pool usage, for backends that pool connections. */
  poolStats?(): PoolStats;
  /**
   * A number that changes whenever another connection or process commits (SQLite's
   * data_version), so in-process caches can tell they may be stale. Cheap: no disk access.
   */
  externalChangeCounter?(): number;
  /** Applies pending migrations; safe to call from several processes at once. */
  migrate(): Promise<number[]>;
  /** Pending migration versions, without applying them. */
  pendingMigrations(): Promise<number[]>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
