// Webhook endpoints and their deliveries as the store keeps them. Changes append only their
// events (events.ts); the worker's fan-out turns the log into deliveries, each endpoint from
// its cursor (fanned_seq) on, and delivers them through the jobs table (kind webhook.deliver).
// The rules are written once in webhook-repository.ts; the backends hold only the SQL
// (src/store/<backend>/webhooks.ts).
import type { DeliveryStatus, EventType } from '../schemas/events.js';
import type { Sql } from './core/sql.js';
import type { StoredEvent } from './events.js';

/** More work for the transaction of a change, run once the change is made (the audit entry that records it). */
export type AlsoInTransaction = (tx: Sql) => Promise<void>;

export interface StoredWebhookEndpoint {
  /** Position in the account's list (cursors). */
  seq: number;
  id: string;
  url: string;
  /** Bit i: EVENT_KIND_BITS[i] is delivered; -1: every kind, including later ones. */
  eventMask: number;
  description: string | undefined;
  disabled: boolean;
  disabledReason: string | undefined;
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

export interface ListDeliveriesQuery {
  accountId: string;
  endpointId: string;
  limit: number;
  status?: DeliveryStatus | undefined;
  /** Keyset position: only deliveries of later events. */
  afterSeq?: number | undefined;
}

/** A due delivery leased to a worker, with what it needs to make the attempt. */
export interface ClaimedDelivery {
  jobId: number;
  /** The delivery's id (`whd_…`), for the server's log. */
  deliveryId: string;
  /** Epoch ms the lease ends: the job is this worker's until then (renewLease moves it). */
  leasedUntil: number;
  accountId: string;
  endpointId: string;
  eventSeq: number;
  /** Attempts made before this one. */
  attempts: number;
  /** A manual retry of a finished delivery: one attempt, no schedule. */
  singleAttempt: boolean;
  url: string;
  disabled: boolean;
  /** Opened for signing; undefined when it could not be (secretProblem says why): the attempt fails unsent. */
  secret: string | undefined;
  previousSecret: string | undefined;
  previousSecretExpiresAt: number | undefined;
  secretProblem?: string | undefined;
  event: StoredEvent;
  /** The traceparent of the request whose change made the event (tracing on then). */
  trace?: string | undefined;
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
  /** What the owner is shown: a DeliveryError category (the detail goes to the server's log). */
  error?: string | undefined;
  /** Epoch ms, with `retry`. */
  nextAttemptAt?: number | undefined;
}

export interface WebhookStats {
  pending: number;
  oldestCreatedAt: string | undefined;
}

/** Webhook endpoints and their deliveries. Every call is scoped by account but the worker's. */
export interface WebhookRepository {
  /** Undefined when the account already has `max` endpoints (checked under the account's lock), or is unknown. */
  createEndpoint(accountId: string, endpoint: NewWebhookEndpointRecord, max: number, also?: AlsoInTransaction): Promise<StoredWebhookEndpoint | undefined>;
  getEndpoint(accountId: string, id: string): Promise<StoredWebhookEndpoint | undefined>;
  /** The account's endpoints in creation order, after `afterSeq`, at most `limit`. */
  listEndpoints(query: { accountId: string; limit: number; afterSeq?: number | undefined }): Promise<readonly StoredWebhookEndpoint[]>;
  updateEndpoint(accountId: string, id: string, patch: WebhookEndpointPatch, also?: AlsoInTransaction): Promise<StoredWebhookEndpoint | undefined>;
  /** Deletes the endpoint, its deliveries and their jobs; false when there was none. */
  deleteEndpoint(accountId: string, id: string, also?: AlsoInTransaction): Promise<boolean>;
  /** The new secret signs from now; the current one keeps signing beside it until `previousExpiresAt` (epoch ms). */
  rotateSecret(accountId: string, id: string, secret: string, previousExpiresAt: number, also?: AlsoInTransaction): Promise<StoredWebhookEndpoint | undefined>;
  /** The endpoint's deliveries in event order. */
  listDeliveries(query: ListDeliveriesQuery): Promise<readonly StoredDelivery[]>;
  /** Due now: a pending delivery's next attempt, or one more attempt of a finished one. Undefined when not found. */
  retryDelivery(accountId: string, endpointId: string, deliveryId: string, now: number): Promise<StoredDelivery | undefined>;
  /**
   * Fans the event log out to endpoints: for each enabled endpoint behind its account's last
   * event, the events after its cursor (at most `max` of them) become pending deliveries with
   * their jobs (those of its kinds), and the cursor moves past them, in one transaction. Returns
   * how many events were passed over (delivered or filtered out by kind).
   */
  fanOut(max: number): Promise<number>;
  /**
   * Leases up to `max` due deliveries (jobs of kind webhook.deliver) until `now + leaseMs`,
   * skipping those of `busyEndpoints` and `busyAccounts` (at their limit in this process).
   */
  claim(now: number, leaseMs: number, max: number, busyEndpoints: readonly string[], busyAccounts?: readonly string[]): Promise<ClaimedDelivery[]>;
  /** Moves a lease still held (it ends at `heldUntil`) to `until`; false when it was lost (it ended and another worker may hold it). */
  renewLease(jobId: number, heldUntil: number, until: number): Promise<boolean>;
  /** Gives back leases still held, unattempted: their jobs are due again at once. */
  release(leases: ReadonlyArray<{ jobId: number; leasedUntil: number }>): Promise<void>;
  /** Records the attempts and settles their jobs, all in one transaction. */
  record(records: readonly AttemptRecord[]): Promise<void>;
  /** The backlog: deliveries with a job, and events past an enabled endpoint's cursor. */
  stats(): Promise<WebhookStats>;
  /**
   * Seals secrets under the current key, online: `plain` those stored plain, `other-keys` every
   * one not under the current key (a key rotation). Rows whose secrets cannot be opened are counted, not changed.
   */
  resealSecrets(scope: 'plain' | 'other-keys'): Promise<ResealReport>;
}

export interface ResealReport {
  resealed: number;
  /** Endpoint ids whose secrets no key of this process opens (left as they are). */
  unopenable: string[];
}
