// What the PostgreSQL repositories not yet on the store core (events, webhooks) share.
import type { PoolClient, QueryResultRow } from 'pg';
import type { NewEvent } from '../rows.js';

/** What the event writer needs of a connection: a statement, and how many rows it wrote. */
export interface EventWriterClient {
  query(text: string, values: unknown[]): Promise<{ rowCount: number | null }>;
}

export type PostgresEventWriter = (client: EventWriterClient, accountId: string, events: readonly NewEvent[], createdAt: string) => Promise<void>;

export interface PostgresContext {
  query<R extends QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  /** Runs `work` in one transaction; `rollback(value)` ends it with ROLLBACK and resolves with value. */
  transaction<T>(work: (client: PoolClient, rollback: (value: T) => never) => Promise<T>): Promise<T>;
  /** Writes events in the caller's transaction (the outbox; see events.ts). */
  writeEvents: PostgresEventWriter;
}
