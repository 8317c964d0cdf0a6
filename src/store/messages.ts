// The example API's messages as the store keeps them: one row per message, numbered per
// account (the seq that cursors and delivery jobs refer to). The rules (a message is stored
// with its delivery job; its status moves once) are the services' (src/services/messages.ts,
// src/services/message-worker.ts); a repository reads and writes rows.
import type { Message, MessageStatus } from '../schemas/messages.js';
import type { Sql } from './core/sql.js';

/** A message with its place in the account's sequence (what cursors and jobs refer to). */
export type StoredMessage = Message & { seq: number };

export interface ListMessagesQuery {
  accountId: string;
  limit: number;
  status?: MessageStatus | undefined;
  /** Keyset position: only messages after this one (the account's sequence number). */
  afterSeq?: number | undefined;
}

export interface MessageQueueStats {
  /** Messages still queued. */
  depth: number;
  /** createdAt of the oldest queued message (ISO), if any. */
  oldestCreatedAt: string | undefined;
}

/** A message by its place: the account and its seq. */
export interface MessageRef {
  accountId: string;
  seq: number;
}

/** How a queued message ends. */
export type MessageOutcome = { status: 'delivered'; deliveredAt: string } | { status: 'failed'; failureReason: string };

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

/** The message with its stored trace context (the worker's read). */
export function toTracedMessage(row: MessageRow & { trace: string | null }): StoredMessage & { trace?: string } {
  const message: StoredMessage & { trace?: string } = toMessage(row);
  if (row.trace !== null) message.trace = row.trace;
  return message;
}

/** NULL columns become absent properties, never `null`. */
export function toMessage(row: MessageRow): StoredMessage {
  const message: StoredMessage = { seq: row.seq, id: row.id, message: row.message, status: row.status, createdAt: row.created_at };
  if (row.delivered_at !== null) message.deliveredAt = row.delivered_at;
  if (row.failure_reason !== null) message.failureReason = row.failure_reason;
  return message;
}

/** Messages (src/store/<backend>/messages.ts). Every call is scoped by account. */
export interface MessageRepository {
  get(accountId: string, id: string): Promise<StoredMessage | undefined>;
  /** With the traceparent of the request that queued it (tracing on then), for the worker's link. */
  getBySeq(accountId: string, seq: number): Promise<(StoredMessage & { trace?: string }) | undefined>;
  /** Messages of one account, oldest first, at most `limit`. */
  list(query: ListMessagesQuery): Promise<readonly StoredMessage[]>;
  /** A new message `queued`, with the account's next seq. */
  insert(tx: Sql, accountId: string, message: { id: string; message: string; createdAt: string }): Promise<StoredMessage>;
  /** The messages still queued end as `outcome` (the others are left as they are); how many moved. */
  finish(tx: Sql, messages: readonly MessageRef[], outcome: MessageOutcome): Promise<number>;
  /** Queued messages of every account. */
  queueStats(): Promise<MessageQueueStats>;
}
