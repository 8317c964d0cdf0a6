// What the SQLite repositories not yet on the store core (events, webhooks) share: the
// connection, its cached statements, the read cache, the id counters and the event writer.
import type Database from 'better-sqlite3';
import type { NewEvent } from '../rows.js';
import type { IdCounter } from '../accounts.js';
import type { ReadCache } from './read-cache.js';

export type { IdCounter };

/** An event to write for an account, stamped with its change's time (its deliveries are due then). */
export interface EventWrite {
  accountId: string;
  event: NewEvent;
  createdAt: string;
}

/** Writes events in the caller's transaction: `write` for one change, `writeMany` for a group-commit chunk. */
export interface SqliteEventWriter {
  write(accountId: string, events: readonly NewEvent[], createdAt: string): void;
  /** Each run of one account's events takes its counter once. */
  writeMany(writes: readonly EventWrite[]): void;
}

export interface SqliteContext {
  db: Database.Database;
  /** A cached prepared statement. */
  stmt<P extends unknown[], R>(sql: string): Database.Statement<P, R>;
  cache: ReadCache | undefined;
  /** The first of `count` new ids from the account's counter (inside the caller's transaction). */
  nextIds(counter: IdCounter, accountId: string, count: number): number;
  /** Writes events in the caller's transaction (the outbox; see events.ts). */
  writeEvents: SqliteEventWriter;
}
