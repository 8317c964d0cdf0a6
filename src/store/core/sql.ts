// The one interface every repository runs SQL through: on the database, or in a transaction
// that a service opens and passes to each repository it touches. Parameters are `?` on both
// backends (the PostgreSQL driver numbers them); what the SQL itself must say differently is
// named in dialect.ts, and what only one backend can do lives in that backend's files.
import { TransactionEndedError } from '../errors.js';

/** Positional (`?`) or, on SQLite, named (`@name`) parameters. */
export type Params = readonly unknown[] | Readonly<Record<string, unknown>>;

/** A database or a transaction on it. */
export interface Sql {
  all<R>(sql: string, params?: Params): Promise<R[]>;
  get<R>(sql: string, params?: Params): Promise<R | undefined>;
  /** Runs a statement; resolves with the number of rows it changed. */
  run(sql: string, params?: Params): Promise<number>;
}

/** A transaction's statements. */
export interface Transaction extends Sql {
  /**
   * Says the work issues no statement after those it has issued: PostgreSQL sends COMMIT with
   * them (one round trip fewer), and a failed one among them makes it a rollback. The work's
   * outcome is then its statements': it must not throw for any other reason. PostgreSQL refuses
   * a statement issued after it. SQLite, whose statements have run when issued, ignores it.
   */
  lastStatementsIssued(): void;
}

const ended = <R>(): Promise<R> => Promise.reject(new TransactionEndedError());

/**
 * Runs `work` on `tx`, whose statements are refused once the work has settled: a part of it still
 * running after a sibling statement failed (a loop, say) would otherwise write after the
 * ROLLBACK: alone on SQLite, on a pooled connection in someone else's hands on PostgreSQL.
 */
export async function sealedWork<T>(tx: Transaction, work: (tx: Transaction) => Promise<T>): Promise<T> {
  let open = true;
  const sealed: Transaction = {
    all: <R>(sql: string, params?: Params) => (open ? tx.all<R>(sql, params) : ended<R[]>()),
    get: <R>(sql: string, params?: Params) => (open ? tx.get<R>(sql, params) : ended<R | undefined>()),
    run: (sql: string, params?: Params) => (open ? tx.run(sql, params) : ended<number>()),
    lastStatementsIssued: () => tx.lastStatementsIssued(),
  };
  try {
    return await work(sealed);
  } finally {
    open = false;
  }
}

export interface SqlDatabase extends Sql {
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * True when the database is another process (PostgreSQL): a statement's answer is a round trip
   * away, and the event loop is free meanwhile. SQLite runs a statement when it is issued.
   */
  readonly remote: boolean;
  /**
   * A hot read, by a stable name: PostgreSQL prepares it once per connection and pipelines
   * it with the other reads of the event-loop turn; SQLite runs its cached statement.
   */
  read<R>(name: string, sql: string, params: readonly unknown[]): Promise<R[]>;
  /** The same, rows as arrays of column values (no object with named fields per row). */
  readArrays(name: string, sql: string, params: readonly unknown[]): Promise<unknown[][]>;
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
   * SQLite takes the write lock first (BEGIN IMMEDIATE); PostgreSQL runs it on one pooled
   * connection (rows it reads and means to change, it locks with FOR UPDATE).
   */
  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** `?, ?, …` for a list of `count` parameters (both drivers take `?`). */
export const placeholders = (count: number): string => Array(count).fill('?').join(', ');
