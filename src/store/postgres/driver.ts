// PostgreSQL through pg: one bounded pool per process, plus a few pipelined connections for
// the hot reads (pipeline.ts). Connection failures surface as StoreUnavailableError (the HTTP
// layer answers 503), and the pool replaces dead connections by itself once the server is back.
import pg, { type CustomTypesConfig, type PoolClient, type QueryResultRow } from 'pg';
import { CommitOutcomeUnknownError, StoreUnavailableError } from '../errors.js';
import { type Params, type Sql, type SqlDatabase, sealedWork, type Transaction } from '../core/sql.js';
import { createPipeline, type Pipeline } from './pipeline.js';
import { hooks as tracing } from '../../tracing/switch.js';

/** Fail fast during an outage instead of queueing requests behind a dead server (PETSTORE_PG_CONNECT_TIMEOUT_MS). */
export const CONNECTION_TIMEOUT_MS = 2000;

const { types } = pg;
const parseTimestamptz = types.getTypeParser(types.builtins.TIMESTAMPTZ, 'text') as (value: string) => Date;

// Per-pool parsers (pg's global ones stay untouched): ids and category ids are bigint but the
// interface uses JS numbers, and timestamps go in and come out as toISOString() strings.
const typeParsers: CustomTypesConfig = {
  getTypeParser: (id, format) => {
    if (format !== 'binary' && id === types.builtins.INT8) return (value: string) => Number(value);
    if (format !== 'binary' && id === types.builtins.TIMESTAMPTZ) {
      return (value: string) => parseTimestamptz(value).toISOString();
    }
    return types.getTypeParser(id, format);
  },
};

// SQLSTATEs meaning the session is gone or cannot be had: admin/crash shutdown, server
// starting up, idle session timeout, too many connections; and 25006 read_only_sql_transaction,
// which a write gets from a primary being demoted (a failover): the session will never write
// again, so it is dropped like a broken one. Class 08 is checked by prefix.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57P04', '57P05', '53300', '25006']);
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT',
  'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN', 'ENOTFOUND', 'EAI_AGAIN',
  // Writing to a socket the server already closed.
  'ERR_STREAM_WRITE_AFTER_END', 'ERR_STREAM_DESTROYED',
]);
const NOT_QUERYABLE = 'Client has encountered a connection error and is not queryable';
// pg and pg-pool raise these without a code.
const UNAVAILABLE_MESSAGES = [
  'timeout exceeded when trying to connect', // pool: no connection within connectionTimeoutMillis
  'timeout expired', // client: connect timeout
  'Connection terminated', // "... unexpectedly", "... due to connection timeout"
  NOT_QUERYABLE,
];

/** True when the error says the database cannot be reached, as opposed to a bad query. */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (UNAVAILABLE_ERRNOS.has(code) || UNAVAILABLE_SQLSTATES.has(code)) return true;
    if (/^08[0-9A-Z]{3}$/.test(code)) return true;
    // 55000 is a generic state error; only this message means "no connections allowed now".
    if (code === '55000' && /is not currently accepting connections/.test(error.message)) return true;
  }
  if (UNAVAILABLE_MESSAGES.some((message) => error.message.startsWith(message))) return true;
  // Node reports a failed multi-address connect as an AggregateError.
  if (error instanceof AggregateError && error.errors.some(isConnectionError)) return true;
  return error.cause !== undefined && error.cause !== error && isConnectionError(error.cause);
}

/** Runs `work`; a connection failure becomes StoreUnavailableError. */
export async function guard<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    if (isConnectionError(error)) {
      throw new StoreUnavailableError(`PostgreSQL is unavailable: ${(error as Error).message}`, { cause: error });
    }
    throw error;
  }
}

export interface PostgresOptions {
  poolMax: number;
  /** Opening a connection, or waiting for a free one, in ms (default CONNECTION_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** Connections in pipeline mode for the hot reads; 0 sends them through the pool. */
  pipelineConnections?: number;
}

export interface PostgresDatabase extends SqlDatabase {
  readonly dialect: 'postgres';
  readonly url: string;
  readonly pool: pg.Pool;
  /**
   * A hot write that is a transaction of its own (autocommit), as a named prepared statement: a
   * connection lost once it has left leaves its outcome unknown (CommitOutcomeUnknownError).
   */
  preparedWrite<R extends QueryResultRow>(name: string, text: string, values: readonly unknown[]): Promise<R[]>;
}

const numbered = new Map<string, string>();
/**
 * The statement with its `?` parameters numbered `$1`, `$2`… (outside quotes), as PostgreSQL
 * takes them; remembered per text. Text that already uses `$n` is left as it is.
 */
export function dollars(sql: string): string {
  let text = numbered.get(sql);
  if (text !== undefined) return text;
  let n = 0;
  text = sql.replace(/'(?:[^']|'')*'|"(?:[^"])*"|\?/g, (match) => (match === '?' ? `$${++n}` : match));
  numbered.set(sql, text);
  return text;
}

const positional = (params: Params | undefined): unknown[] => {
  if (params === undefined) return [];
  if (Array.isArray(params)) return params as unknown[];
  throw new TypeError('PostgreSQL statements take positional parameters');
};

const statementNames = new Map<string, string>();
/**
 * A transaction's statement as a named prepared statement: each connection parses and plans
 * a text once (a batch's statement with 200 parameters costs more to plan than to run).
 */
const named = (sql: string, params: Params | undefined) => {
  // Without parameters: the simple protocol (a migration's script is several statements).
  if (params === undefined || (Array.isArray(params) && params.length === 0)) return { text: dollars(sql), values: [] };
  let name = statementNames.get(sql);
  if (name === undefined) statementNames.set(sql, (name = `tx${statementNames.size}`));
  return { name, text: dollars(sql), values: positional(params) };
};

/** Statements on one checked-out client (a transaction's). */
const onClient = (client: Pick<PoolClient, 'query'>): Sql => ({
  all: async <R>(sql: string, params?: Params) => (await client.query(named(sql, params))).rows as R[],
  get: async <R>(sql: string, params?: Params) => (await client.query(named(sql, params))).rows[0] as R | undefined,
  run: async (sql: string, params?: Params) => (await client.query(named(sql, params))).rowCount ?? 0,
});

export function openPostgres(url: string, options: PostgresOptions): PostgresDatabase {
  const connection = {
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECTION_TIMEOUT_MS,
    // Detects a silently dead server on idle connections.
    keepAlive: true,
    types: typeParsers,
    // A 201 promises the pet is on disk: never inherit synchronous_commit=off from the server or role.
    options: '-c synchronous_commit=on',
  };
  // Pipeline mode: a statement goes out as soon as it is issued, not after the answer to the one
  // before. A transaction's BEGIN leaves with its first statement, and statements it issues
  // together (Promise.all) leave together; code that awaits each statement is unchanged.
  const pool = new pg.Pool({ ...connection, max: options.poolMax, pipeline: true } as pg.PoolConfig);
  const lanes = options.pipelineConnections ?? 1;
  const pipeline: Pipeline | undefined = lanes > 0 ? createPipeline(connection, lanes) : undefined;
  // An idle client whose connection dies is already removed by the pool; without a listener
  // the 'error' event would crash the process.
  pool.on('error', () => {});
  const direct = onClient(pool);
  let ended: Promise<void> | undefined;

  const prepared = <R extends QueryResultRow>(name: string, text: string, values: readonly unknown[]) =>
    guard(async () => (await pool.query<R>({ name, text: dollars(text), values: values as unknown[] })).rows);
  const preparedWrite = <R extends QueryResultRow>(name: string, text: string, values: readonly unknown[]) =>
    guard(() => autocommitWrite<R>(pool, { name, text: dollars(text), values: values as unknown[] }));

  const database: PostgresDatabase = {
    dialect: 'postgres',
    remote: true,
    url,
    pool,
    all: (sql, params) => guard(() => direct.all(sql, params)),
    get: (sql, params) => guard(() => direct.get(sql, params)),
    run: (sql, params) => guard(() => direct.run(sql, params)),
    transaction: (work) => guard(() => inTransaction(pool, work)),
    preparedWrite,
    read: async <R>(name: string, text: string, values: readonly unknown[]) =>
      (pipeline ? await guard(() => pipeline.query(name, dollars(text), values as unknown[])) : await prepared(name, text, values)) as R[],
    readArrays: (name, text, values) =>
      pipeline
        ? guard(() => pipeline.queryArrays(name, dollars(text), values as unknown[]))
        : guard(async () => (await pool.query({ name, text: dollars(text), values: values as unknown[], rowMode: 'array' })).rows as unknown[][]),
    ping: async () => void (await guard(() => direct.get('SELECT 1'))),
    close: async () => {
      ended ??= Promise.all([pool.end(), pipeline?.close()]).then(() => undefined);
      await ended;
    },
  };
  // Tracing on: a span per statement, added here once (the one check; nothing per statement when off).
  return tracing ? tracing.database(database, 'postgresql') : database;
}

/**
 * A client from the pool with `onError` listening from the moment the pool hands it over: a
 * checked-out client has no pool listener, and a server that dies (a failover) may send its
 * FATAL right behind the handshake, in the same read, before an awaited connect() returns:
 * unheard, that 'error' event would crash the process. Remove the listener before release.
 */
export function checkOut(pool: pg.Pool, onError: (error: Error) => void): Promise<PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((error, client) => {
      if (error || !client) return reject(error ?? new Error('pool gave no client'));
      client.on('error', onError);
      resolve(client);
    });
  });
}

type Corkable = { connection: { stream: { cork(): void; uncork(): void } } };
const corked = new WeakSet<PoolClient>();

/**
 * Holds the client's writes until the end of this tick: the statements a transaction issues
 * together (the client is in pipeline mode: none waits for the answer to the one before) leave
 * in one write, and PostgreSQL wakes once for them.
 */
function corkTick(client: PoolClient): void {
  if (corked.has(client)) return;
  const stream = (client as unknown as Corkable).connection.stream;
  corked.add(client);
  stream.cork();
  process.nextTick(() => {
    corked.delete(client);
    stream.uncork();
  });
}

/** Sends `sql` with the statements issued after it in this tick; its failure is the caller's to await. */
function sendEarly(client: PoolClient, sql: string): Promise<pg.QueryResult> {
  corkTick(client);
  const sent = client.query(sql);
  sent.catch(() => {});
  return sent;
}

/**
 * A transaction's statements on its client, each held to leave with those of the same tick.
 * `sendCommit` runs once, on lastStatementsIssued(); a statement issued after it is refused:
 * it would leave after the COMMIT, outside the transaction.
 */
function inTransactionOn(client: PoolClient, sendCommit: () => void): Transaction {
  const sql = onClient(client);
  let last = false;
  const send = <T>(statement: () => Promise<T>): Promise<T> => {
    if (last) return Promise.reject(new Error('a statement was issued after lastStatementsIssued()'));
    corkTick(client);
    return statement();
  };
  return {
    all: (text, params) => send(() => sql.all(text, params)),
    get: (text, params) => send(() => sql.get(text, params)),
    run: (text, params) => send(() => sql.run(text, params)),
    lastStatementsIssued: () => {
      if (!last) sendCommit();
      last = true;
    },
  };
}

/** COMMIT's answer: on a transaction a failed statement aborted, PostgreSQL answers ROLLBACK, not an error. */
function committed(result: pg.QueryResult): void {
  if (result.command !== 'COMMIT') throw new Error(`PostgreSQL rolled the transaction back (COMMIT answered ${result.command})`);
}

/** A COMMIT that failed on a lost connection may have committed, unless pg never sent it. */
const outcomeUnknown = (error: unknown): boolean => isConnectionError(error) && !(error as Error).message.startsWith(NOT_QUERYABLE);

/** One statement in a transaction of its own; a connection lost once it left: CommitOutcomeUnknownError. */
async function autocommitWrite<R extends QueryResultRow>(pool: pg.Pool, query: pg.QueryConfig): Promise<R[]> {
  // Connecting fails before anything is sent: that is only unavailable.
  const client = await pool.connect();
  const ignore = () => {};
  client.on('error', ignore);
  let broken = false;
  try {
    return (await client.query<R>(query)).rows;
  } catch (error) {
    broken = isConnectionError(error);
    if (outcomeUnknown(error)) throw new CommitOutcomeUnknownError(`PostgreSQL connection lost during a write: ${(error as Error).message}`, { cause: error });
    throw error;
  } finally {
    client.off('error', ignore);
    client.release(broken);
  }
}

/**
 * BEGIN … COMMIT on one pooled client; ROLLBACK when `work` throws. A client whose connection
 * failed (or that a demoted primary refuses writes on) is destroyed, not returned to the pool.
 * A connection lost once COMMIT has left leaves the outcome unknown: CommitOutcomeUnknownError.
 */
async function inTransaction<T>(pool: pg.Pool, work: (tx: Transaction) => Promise<T>): Promise<T> {
  const ignore = () => {};
  const client = await checkOut(pool, ignore);
  let broken = false;
  // Sent early by lastStatementsIssued(), with the work's last statements.
  let commit: Promise<pg.QueryResult> | undefined;
  try {
    let result: T;
    try {
      const begun = sendEarly(client, 'BEGIN');
      result = await sealedWork(inTransactionOn(client, () => (commit = sendEarly(client, 'COMMIT'))), work);
      await begun;
    } catch (error) {
      broken = isConnectionError(error);
      if (commit) await earlyCommitFailed(commit, error);
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw error;
    }
    try {
      committed(await (commit ?? client.query('COMMIT')));
    } catch (error) {
      broken = isConnectionError(error);
      if (outcomeUnknown(error)) throw new CommitOutcomeUnknownError(`PostgreSQL connection lost during COMMIT: ${(error as Error).message}`, { cause: error });
      throw error;
    }
    return result;
  } finally {
    client.off('error', ignore);
    client.release(broken);
  }
}

/**
 * The work failed after its COMMIT left. A failed statement made the COMMIT a rollback: the
 * work's error stands. A lost connection leaves the outcome unknown; a COMMIT that went through
 * means the work threw after its last statement, which it must not.
 */
async function earlyCommitFailed(commit: Promise<pg.QueryResult>, error: unknown): Promise<void> {
  const answer = await commit.then((result) => result.command, (failure: unknown) => failure);
  if (answer === 'COMMIT') throw new Error('the transaction committed, then its work failed', { cause: error });
  if (outcomeUnknown(error) || outcomeUnknown(answer)) {
    throw new CommitOutcomeUnknownError(`PostgreSQL connection lost during COMMIT: ${(error as Error).message}`, { cause: error });
  }
}
