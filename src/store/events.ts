// The account's event log as the store keeps it. Services build the events (domain-events.ts)
// and append them in the transaction of the change they record; a rolled-back change takes
// its events with it (the transactional outbox). Webhook deliveries are made from the log by
// the worker's fan-out.
import type { EventType } from '../schemas/events.js';
import type { Sql } from './core/sql.js';

/** An event to record; `data` is its JSON text. */
export interface NewEvent {
  type: EventType;
  data: string;
}

/** An event as stored. */
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
  /** Bit i set: EVENT_KIND_BITS[i] wanted; undefined: every kind. */
  typeMask?: number | undefined;
  afterSeq?: number | undefined;
}

export interface EventRepository {
  /**
   * Appends events to the account's log in `tx`, numbered from the account's counter, all
   * stamped `createdAt` (their deliveries are due then). Nothing when events are off.
   * `traces`: each event's request traceparent (undefined: none), for a write made outside its
   * request's context (a batch of several requests); without it, the active context's.
   */
  append(tx: Sql, accountId: string, events: readonly NewEvent[], createdAt: string, traces?: ReadonlyArray<string | undefined>): Promise<void>;
  list(query: ListEventsStoreQuery): Promise<readonly StoredEvent[]>;
  get(accountId: string, id: string): Promise<StoredEvent | undefined>;
  /** Deletes events created before `before` (ISO), with their deliveries; how many events. */
  prune(before: string): Promise<number>;
}
