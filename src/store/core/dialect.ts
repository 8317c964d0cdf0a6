// What SQL must say differently on SQLite and PostgreSQL, named once (Kysely's DialectAdapter
// idea): repositories write the rest of their SQL once, for both.
import { placeholders } from './sql.js';

export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /** `INSERT … ` that does nothing when the row's key exists: `insertIgnore('t (a, b) VALUES (?, ?)', 'a')`. */
  insertIgnore(into: string, conflictTarget: string): string;
  /**
   * Appended to a SELECT whose rows the transaction will change: PostgreSQL locks them; SQLite
   * needs nothing (a write transaction holds the database's write lock from its start).
   */
  readonly forUpdate: string;
  /** As forUpdate, skipping rows another transaction holds (job claims). */
  readonly forUpdateSkipLocked: string;
  /** A table read through a named index: SQLite's planner is told (INDEXED BY); PostgreSQL's is not. */
  indexed(table: string, index: string): string;
  /** An integer aggregate as a JS number (PostgreSQL's count and sum are bigint/numeric). */
  int(expression: string): string;
  /** True when `column` is one of the strings in the parameter (a JSON array on SQLite, a text[] on PostgreSQL). */
  inList(column: string): string;
  /** The parameter value for inList. */
  list(values: readonly string[]): unknown;
  /**
   * True when `column` is one of `ids`, and the parameters that say which: PostgreSQL
   * takes one bigint[] (one statement text, prepared and planned once, whatever the count);
   * SQLite an `IN (?, ?, …)` list, the fastest there (each text is one cached statement).
   */
  anyId(column: string, ids: readonly number[]): { sql: string; params: unknown[] };
  /** A LIMIT parameter that sets no limit. */
  readonly noLimit: number | null;
  /** The driver's error for a row that a unique index refused. */
  isUniqueViolation(error: unknown): boolean;
}

/** Integers as PostgreSQL's array text: pg would quote and escape each number (two regexes each). */
export const intArrayText = (values: readonly number[]): string => `{${values.join(',')}}`;

const codeOf = (error: unknown): unknown => (error as { code?: unknown } | null)?.code;

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  insertIgnore: (into) => `INSERT OR IGNORE INTO ${into}`,
  forUpdate: '',
  forUpdateSkipLocked: '',
  indexed: (table, index) => `${table} INDEXED BY ${index}`,
  int: (expression) => expression,
  inList: (column) => `${column} IN (SELECT value FROM json_each(?))`,
  list: (values) => JSON.stringify(values),
  anyId: (column, ids) => ({ sql: `${column} IN (${placeholders(ids.length)})`, params: [...ids] }),
  noLimit: -1,
  isUniqueViolation: (error) => codeOf(error) === 'SQLITE_CONSTRAINT_UNIQUE' || codeOf(error) === 'SQLITE_CONSTRAINT_PRIMARYKEY',
};

export const postgresDialect: Dialect = {
  name: 'postgres',
  insertIgnore: (into, conflictTarget) => `INSERT INTO ${into} ON CONFLICT (${conflictTarget}) DO NOTHING`,
  forUpdate: ' FOR UPDATE',
  forUpdateSkipLocked: ' FOR UPDATE SKIP LOCKED',
  indexed: (table) => table,
  int: (expression) => `(${expression})::int`,
  inList: (column) => `${column} = ANY(?::text[])`,
  list: (values) => values,
  anyId: (column, ids) => ({ sql: `${column} = ANY(?::bigint[])`, params: [intArrayText(ids)] }),
  noLimit: null,
  isUniqueViolation: (error) => codeOf(error) === '23505',
};
