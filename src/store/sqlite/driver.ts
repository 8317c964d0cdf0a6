// SQLite through better-sqlite3: one connection per process, synchronous calls. WAL lets the
// CLI and servers share one file; synchronous=FULL makes every commit durable before we answer.
// A transaction spans awaits (its statements are the repositories'), so while one is open
// every other statement of this process waits for it: a statement run in between would join
// it (and be rolled back with it, or read what is not committed yet).
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../errors.js';
import { type Params, type SqlDatabase, sealedWork, type Transaction } from '../core/sql.js';
import { hooks as tracing } from '../../tracing/switch.js';

// Failures that mean "the database cannot serve now" (locked past the busy timeout, disk full or
// failing, file gone or read-only, connection closed), not "this query is wrong".
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|READONLY|NOMEM|PROTOCOL)/;

export function isUnavailable(error: unknown): boolean {
  if (error instanceof TypeError) return /database connection is not open/i.test(error.message);
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNAVAILABLE_CODES.test(code);
}

/** The error as the store reports it: StoreUnavailableError when SQLite cannot serve. */
export function storeError(error: unknown): unknown {
  return isUnavailable(error) ? new StoreUnavailableError(`SQLite is unavailable: ${(error as Error).message}`, { cause: error }) : error;
}

/** Accepts a plain path or a file: URL. */
export function sqlitePath(url: string): string {
  if (url.startsWith('file:')) {
    return url.startsWith('file://') ? new URL(url).pathname : url.slice('file:'.length);
  }
  return url;
}

export interface SqliteDatabase extends SqlDatabase {
  readonly dialect: 'sqlite';
  readonly file: string;
  /** The connection, for what only SQLite has (the change check, synchronous cache fills). */
  readonly connection: Database.Database;
  /** A cached prepared statement, run synchronously (only where no transaction can be open). */
  statement<P extends unknown[], R>(sql: string): Database.Statement<P, R>;
  /** Forgets prepared statements (after the schema changed). */
  forgetStatements(): void;
}

export function openSqlite(url: string): SqliteDatabase {
  const file = sqlitePath(url);
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');

  const statements = new Map<string, Database.Statement>();
  const statement = <P extends unknown[], R>(sql: string) => {
    let s = statements.get(sql);
    if (!s) {
      s = db.prepare(sql);
      statements.set(sql, s);
    }
    return s as Database.Statement<P, R>;
  };
  // Array rows need a statement of their own: raw mode sticks to the statement.
  const arrays = new Map<string, Database.Statement<unknown[], unknown[]>>();
  const arrayStatement = (sql: string) => {
    let s = arrays.get(sql);
    if (!s) {
      s = db.prepare<unknown[], unknown[]>(sql).raw(true);
      arrays.set(sql, s);
    }
    return s;
  };
  const bind = (params: Params | undefined): unknown[] => (params === undefined ? [] : Array.isArray(params) ? params : [params]);

  // Each statement has run by the time it is issued: nothing to send with the COMMIT.
  const transactional: Transaction = {
    all: async <R>(sql: string, params?: Params) => statement<unknown[], R>(sql).all(...bind(params)),
    get: async <R>(sql: string, params?: Params) => statement<unknown[], R>(sql).get(...bind(params)),
    run: async (sql: string, params?: Params) => statement<unknown[], never>(sql).run(...bind(params)).changes,
    lastStatementsIssued: () => {},
  };

  // The open transaction, if any: other statements wait for it to end. Whoever waited checks
  // again in the same step it goes on in (`while`, not `if`): a transaction begun by another
  // waiter meanwhile would otherwise be joined.
  let busy: Promise<void> | undefined;
  /** Waits for an open transaction, then runs `call`; SQLite's "cannot serve" errors become StoreUnavailableError. */
  const guarded = async <T>(call: () => T): Promise<T> => {
    while (busy) await busy;
    try {
      return call();
    } catch (error) {
      throw storeError(error);
    }
  };

  const transaction = async <T>(work: (tx: Transaction) => Promise<T>): Promise<T> => {
    while (busy) await busy;
    let release!: () => void;
    busy = new Promise((resolve) => (release = resolve));
    try {
      statement('BEGIN IMMEDIATE').run();
      try {
        const result = await sealedWork(transactional, work);
        statement('COMMIT').run();
        return result;
      } catch (error) {
        // Some errors (SQLITE_FULL, SQLITE_IOERR…) have rolled the transaction back already.
        if (db.inTransaction) statement('ROLLBACK').run();
        throw error;
      }
    } catch (error) {
      throw storeError(error);
    } finally {
      busy = undefined;
      release();
    }
  };

  const database: SqliteDatabase = {
    dialect: 'sqlite',
    remote: false,
    file,
    connection: db,
    statement,
    forgetStatements: () => {
      statements.clear();
      arrays.clear();
    },
    all: <R>(sql: string, params?: Params) => guarded(() => statement<unknown[], R>(sql).all(...bind(params))),
    get: <R>(sql: string, params?: Params) => guarded(() => statement<unknown[], R>(sql).get(...bind(params))),
    run: (sql: string, params?: Params) => guarded(() => statement<unknown[], never>(sql).run(...bind(params)).changes),
    read: <R>(_name: string, sql: string, params: readonly unknown[]) => guarded(() => statement<unknown[], R>(sql).all(...params)),
    readArrays: (_name: string, sql: string, params: readonly unknown[]) =>
      guarded(() => arrayStatement(sql).all(...params)),
    transaction,
    ping: () => guarded(() => void statement('SELECT 1').get()),
    close: async () => {
      while (busy) await busy;
      statements.clear();
      arrays.clear();
      if (db.open) db.close();
    },
  };
  // Tracing on: a span per statement, added here once (the one check; nothing per statement when off).
  return tracing ? tracing.database(database, 'sqlite') : database;
}
