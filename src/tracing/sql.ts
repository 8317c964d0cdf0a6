// A child span per database statement, added once around the store's SQL executors (the
// database, a transaction's statements, the hot reads). Attributes per the database semantic
// conventions: the system, the operation and the table, taken from the statement's text
// (once per text); never the parameters' values.
import { SpanKind, type Tracer } from '@opentelemetry/api';
import { activeSampled, within } from './spans.js';
import type { Params, Sql, SqlDatabase, Transaction } from '../store/core/sql.js';

interface Described {
  name: string;
  attributes: Record<string, string>;
}

const OPERATION = /^\s*(?:\(\s*)?([A-Za-z]+)/;
const MAIN = /\b(INSERT|UPDATE|DELETE|SELECT)\b/i;
const TABLE: Record<string, RegExp> = {
  SELECT: /\bFROM\s+"?([A-Za-z_][A-Za-z0-9_]*)/i,
  INSERT: /\bINTO\s+"?([A-Za-z_][A-Za-z0-9_]*)/i,
  UPDATE: /\bUPDATE\s+"?([A-Za-z_][A-Za-z0-9_]*)/i,
  DELETE: /\bFROM\s+"?([A-Za-z_][A-Za-z0-9_]*)/i,
};

/** The operation and table of a statement: a WITH's main statement is the first write after it (a read otherwise). */
export function describeStatement(sql: string): { operation: string; collection: string | undefined } {
  let operation = (OPERATION.exec(sql)?.[1] ?? 'SQL').toUpperCase();
  let body = sql;
  if (operation === 'WITH') {
    const write = /\b(INSERT|UPDATE|DELETE)\b/i.exec(sql);
    operation = write ? write[1]!.toUpperCase() : 'SELECT';
    body = write ? sql.slice(write.index) : sql.slice((MAIN.exec(sql.slice(4))?.index ?? 0) + 4);
  }
  const table = TABLE[operation]?.exec(body)?.[1];
  return { operation, collection: table === undefined ? undefined : table.toLowerCase() };
}

/** Runs a call in a CLIENT span described by a statement's text; descriptions cached per text. */
type Spanner = <T>(text: string, call: () => Promise<T>) => Promise<T>;

function spanner(tracer: Tracer, system: 'sqlite' | 'postgresql'): Spanner {
  const described = new Map<string, Described>();
  const describe = (text: string): Described => {
    let d = described.get(text);
    if (!d) {
      const attributes: Record<string, string> = { 'db.system.name': system };
      const { operation, collection } = describeStatement(text);
      attributes['db.operation.name'] = operation;
      if (collection !== undefined) attributes['db.collection.name'] = collection;
      d = { name: collection === undefined ? operation : `${operation} ${collection}`, attributes };
      // Statement texts are a fixed set (values are never spliced in); bounded anyway.
      if (described.size < 2000) described.set(text, d);
    }
    return d;
  };
  return <T>(text: string, call: () => Promise<T>): Promise<T> => {
    // Outside a trace (the workers' polls) or in one the sampler dropped: no span per statement.
    if (activeSampled() !== true) return call();
    const { name, attributes } = describe(text);
    return within(tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }), call);
  };
}

const statements = (span: Spanner, sql: Sql): Sql => ({
  all: <R>(text: string, params?: Params) => span(text, () => sql.all<R>(text, params)),
  get: <R>(text: string, params?: Params) => span(text, () => sql.get<R>(text, params)),
  run: (text: string, params?: Params) => span(text, () => sql.run(text, params)),
});

// Not `{ ...statements(span, tx), lastStatementsIssued }`: V8 (Node 20) gives a spread plus a
// property a new hidden class per object, and every `tx.run` in the store turned megamorphic
// (docs/performance.md, "Tracing on, sixteenth round"). A property added to the literal keeps one.
const transactionStatements = (span: Spanner, tx: Transaction): Transaction =>
  Object.assign(statements(span, tx), { lastStatementsIssued: () => tx.lastStatementsIssued() });

export function tracedSql(tracer: Tracer, sql: Sql, system: 'sqlite' | 'postgresql'): Sql {
  return statements(spanner(tracer, system), sql);
}

/** The database with every statement traced: its own, its hot reads, its named writes, and its transactions'. */
export function tracedDatabase<D extends SqlDatabase>(tracer: Tracer, db: D, system: 'sqlite' | 'postgresql'): D {
  const span = spanner(tracer, system);
  const traced: Pick<SqlDatabase, keyof Sql | 'read' | 'readArrays' | 'transaction'> & { preparedWrite?: unknown } = {
    ...statements(span, db),
    read: <R>(name: string, text: string, params: readonly unknown[]) => span(text, () => db.read<R>(name, text, params)),
    readArrays: (name: string, text: string, params: readonly unknown[]) => span(text, () => db.readArrays(name, text, params)),
    // No span of its own: its statements are the caller's children (a group commit's span
    // already times its batch's transaction; a sampled create would pay one more span for it).
    transaction: <T>(work: (tx: Transaction) => Promise<T>) => db.transaction((tx) => work(transactionStatements(span, tx))),
  };
  // PostgreSQL's named writes: the driver's own member, not SqlDatabase's.
  const preparedWrite = (db as { preparedWrite?: (name: string, text: string, values: readonly unknown[]) => Promise<unknown[]> }).preparedWrite;
  if (preparedWrite) traced.preparedWrite = (name: string, text: string, values: readonly unknown[]) => span(text, () => preparedWrite.call(db, name, text, values));
  // The driver's other members (its connection or pool, the statement cache) as they are.
  return Object.assign(Object.create(Object.getPrototypeOf(db) as object) as object, db, traced) as D;
}
