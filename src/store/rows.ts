// Row shapes and mappers shared by both backends: the tables have the same columns, so a
// row reads the same way from SQLite and PostgreSQL.
import type { Order, OrderStatus, Pet, PetStatus } from '../schemas/index.js';
import type { MessageStatus } from '../schemas/messages.js';
import type { NewEvent } from './events.js';
import type { ApiKeyRecord, Job, StoredMessage } from './types.js';

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

export const petCreatedEvent = (pet: Pet): NewEvent => ({ type: 'pet.created', data: JSON.stringify({ object: pet }) });
export const petStatusChangedEvent = (pet: Pet, previousStatus: PetStatus): NewEvent => ({
  type: 'pet.status_changed',
  data: JSON.stringify({ object: pet, previousStatus }),
});
export const orderEvent = (order: Order): NewEvent => ({
  type: order.status === 'placed' ? 'order.placed' : order.status === 'delivered' ? 'order.delivered' : 'order.cancelled',
  data: JSON.stringify({ object: order }),
});
