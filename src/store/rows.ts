// Row shapes and mappers shared by both backends: the tables have the same columns, so a
// row reads the same way from SQLite and PostgreSQL.
import type { Order, OrderStatus, Pet, PetStatus } from '../schemas/index.js';
import type { MessageStatus } from '../schemas/messages.js';
import { eventAt, type EventRow, holds, idIn, runData, runOf } from './event-log.js';
import type { NewEvent } from './events.js';
import type { ApiKeyRecord, ClaimedDelivery, Job, StoredDelivery, StoredEvent, StoredMessage, StoredWebhookEndpoint, WebhookStats } from './types.js';

export interface PetRow {
  id: number;
  name: string;
  category_id: number;
  status: PetStatus | null;
}

export interface OrderRow {
  id: number;
  pet_id: number;
  status: OrderStatus;
  created_at: string;
  updated_at: string;
}

export const ORDER_COLUMNS = 'id, pet_id, status, created_at, updated_at';

export function toOrder(row: OrderRow): Order {
  return { id: row.id, petId: row.pet_id, status: row.status, createdAt: row.created_at, updatedAt: row.updated_at };
}

export interface KeyRow {
  id: string;
  account_id: string;
  environment: 'production' | 'staging';
  key_hash: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

/** `status` NULL becomes an absent property, never `null`. */
export function toPet(row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, categoryId: row.category_id };
  if (row.status !== null) pet.status = row.status;
  return pet;
}

export function toKey(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    environment: row.environment,
    keyHash: row.key_hash,
    hint: row.hint,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

/** One versioned schema change; each backend keeps its own append-only list. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** An idempotency key still in flight: completed with nothing yet (SQL, both backends). */
export const KEY_IN_FLIGHT = 'pet_id IS NULL AND order_id IS NULL AND message_seq IS NULL';
/** What a completed idempotency key created: a pet id, an order id or a message seq (the request hash tells which). */
export const KEY_RESULT = 'COALESCE(pet_id, order_id, message_seq)';

export interface MessageRow {
  seq: number;
  id: string;
  message: string;
  status: MessageStatus;
  created_at: string;
  delivered_at: string | null;
  failure_reason: string | null;
}

export const MESSAGE_COLUMNS = 'seq, id, message, status, created_at, delivered_at, failure_reason';

/** NULL columns become absent properties, never `null`. */
export function toMessage(row: MessageRow): StoredMessage {
  const message: StoredMessage = { seq: row.seq, id: row.id, message: row.message, status: row.status, createdAt: row.created_at };
  if (row.delivered_at !== null) message.deliveredAt = row.delivered_at;
  if (row.failure_reason !== null) message.failureReason = row.failure_reason;
  return message;
}

export interface JobRow {
  id: number;
  kind: Job['kind'];
  account_id: string;
  ref: number;
  attempts: number;
}

export const toJob = (row: JobRow): Job => ({ id: row.id, kind: row.kind, accountId: row.account_id, ref: row.ref, attempts: row.attempts });

export interface EndpointRow {
  seq: number;
  id: string;
  url: string;
  event_mask: number;
  description: string | null;
  disabled: number | boolean;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  created_at: string;
}

export const ENDPOINT_COLUMNS =
  'seq, id, url, event_mask, description, disabled, disabled_reason, secret, previous_secret, previous_secret_expires_at, created_at';

export const toEndpoint = (row: EndpointRow): StoredWebhookEndpoint => ({
  seq: row.seq,
  id: row.id,
  url: row.url,
  eventMask: row.event_mask,
  description: row.description ?? undefined,
  disabled: Boolean(row.disabled),
  disabledReason: row.disabled_reason ?? undefined,
  secret: row.secret,
  previousSecret: row.previous_secret ?? undefined,
  previousSecretExpiresAt: row.previous_secret_expires_at ?? undefined,
  createdAt: row.created_at,
});

export interface DeliveryRow {
  id: string;
  event_seq: number;
  run_seq: number;
  run_id: string;
  run_more_ids: string | null;
  event_type: StoredEvent['type'];
  status: StoredDelivery['status'];
  attempts: number;
  last_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
}

/** Columns of webhook_deliveries d joined with the log's row e holding its event (DELIVERY_EVENT_JOIN). */
export const DELIVERY_COLUMNS =
  'd.id, d.event_seq, e.seq AS run_seq, e.id AS run_id, e.more_ids AS run_more_ids, e.type AS event_type, d.status, d.attempts, d.last_attempt_at, d.last_response_status, d.last_error, d.next_attempt_at';

/** SQL: the join of a delivery d to the event-log row e holding its event. */
export const DELIVERY_EVENT_JOIN = `JOIN events e ON e.account_id = d.account_id AND e.seq = ${runOf('d.account_id', 'd.event_seq')}`;

export const toDelivery = (row: DeliveryRow): StoredDelivery => ({
  id: row.id,
  eventSeq: row.event_seq,
  eventId: idIn({ seq: row.run_seq, id: row.run_id, more_ids: row.run_more_ids }, row.event_seq),
  eventType: row.event_type,
  status: row.status,
  attempts: row.attempts,
  lastAttemptAt: row.last_attempt_at ?? undefined,
  lastResponseStatus: row.last_response_status ?? undefined,
  lastError: row.last_error ?? undefined,
  nextAttemptAt: row.status === 'pending' && row.next_attempt_at !== null ? new Date(row.next_attempt_at).toISOString() : undefined,
});

export interface ClaimedRow {
  job_id: number;
  account_id: string;
  endpoint_id: string;
  event_seq: number;
  attempts: number;
  single_attempt: number | boolean;
  url: string;
  disabled: number | boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  run_seq: number | null;
  run_span: number | null;
  run_id: string | null;
  run_more_ids: string | null;
  event_type: StoredEvent['type'];
  event_created_at: string;
  event_data: string;
}

/** What a claim joins: the delivery d, its endpoint w, the log's row e holding its event, for job j. */
export const CLAIMED_COLUMNS =
  'j.id AS job_id, d.account_id, d.endpoint_id, d.event_seq, d.attempts, d.single_attempt, w.url, w.disabled, w.secret, ' +
  'w.previous_secret, w.previous_secret_expires_at, e.seq AS run_seq, e.span AS run_span, e.id AS run_id, e.more_ids AS run_more_ids, ' +
  'e.type AS event_type, e.created_at AS event_created_at, e.data AS event_data';

/**
 * Claimed rows to deliveries; a row whose delivery or event is gone (finished meanwhile, or
 * pruned) is left out and its job id returned in `orphans`. A run's data is parsed once.
 */
export function toClaimedDeliveries(rows: readonly ClaimedRow[]): { claimed: ClaimedDelivery[]; orphans: number[] } {
  const claimed: ClaimedDelivery[] = [];
  const orphans: number[] = [];
  const runs = new Map<string, string[]>();
  for (const row of rows) {
    const run: EventRow | undefined =
      row.run_seq === null
        ? undefined
        : { seq: row.run_seq, span: row.run_span!, id: row.run_id!, more_ids: row.run_more_ids, type: row.event_type, created_at: row.event_created_at, data: row.event_data };
    if (row.endpoint_id === null || !run || !holds(run, row.event_seq)) {
      orphans.push(row.job_id);
      continue;
    }
    const key = `${row.account_id}\n${run.seq}`;
    let data = runs.get(key);
    if (!data) runs.set(key, (data = runData(run)));
    claimed.push(toClaimed(row, eventAt(run, row.event_seq, data)));
  }
  return { claimed, orphans };
}

const toClaimed = (row: ClaimedRow, event: StoredEvent): ClaimedDelivery => ({
  jobId: row.job_id,
  accountId: row.account_id,
  endpointId: row.endpoint_id,
  eventSeq: row.event_seq,
  attempts: row.attempts,
  singleAttempt: Boolean(row.single_attempt),
  url: row.url,
  disabled: Boolean(row.disabled),
  secret: row.secret,
  previousSecret: row.previous_secret ?? undefined,
  previousSecretExpiresAt: row.previous_secret_expires_at ?? undefined,
  event,
});

export const petCreatedEvent = (pet: Pet): NewEvent => ({ type: 'pet.created', data: JSON.stringify({ object: pet }) });
export const petStatusChangedEvent = (pet: Pet, previousStatus: PetStatus): NewEvent => ({
  type: 'pet.status_changed',
  data: JSON.stringify({ object: pet, previousStatus }),
});
export const orderEvent = (order: Order): NewEvent => ({
  type: order.status === 'placed' ? 'order.placed' : order.status === 'delivered' ? 'order.delivered' : 'order.cancelled',
  data: JSON.stringify({ object: order }),
});

/** The webhook backlog from its two parts: jobs (count, oldest event time in ms) and events not fanned out yet (count, oldest ISO time). */
export function webhookStatsOf(jobs: number, oldestJobMs: number | null, unfanned: number | null, oldestUnfanned: string | null): WebhookStats {
  const oldest = [oldestJobMs === null ? undefined : new Date(oldestJobMs).toISOString(), oldestUnfanned ?? undefined]
    .filter((t): t is string => t !== undefined)
    .sort()[0];
  return { pending: jobs + (unfanned ?? 0), oldestCreatedAt: oldest };
}
