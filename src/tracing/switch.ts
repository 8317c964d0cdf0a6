// Tracing's on/off switch: the one module the hot paths import. It loads nothing of
// OpenTelemetry; when the standard OTEL_* environment asks for traces, startTracing() loads the
// SDK (sdk.ts) and fills in `hooks`. Every instrumented place reads `hooks` once, when it is
// built (a store, a group commit, the fast path), so with tracing off a request pays nothing.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Sql, SqlDatabase } from '../store/core/sql.js';

/** A request's server span, as the raw HTTP layer sees it (the fast path and Fastify both answer under it). */
export interface ServerSpan {
  /** Runs `fn` with this span as the active one (so Fastify, the store and the logs see it). */
  run<T>(fn: () => T): T;
  setRoute(route: string): void;
  setAccount(accountId: string): void;
  end(status: number): void;
  /** For the request's log line (trace_id, span_id) and the latency exemplar. */
  readonly ids: { trace_id: string; span_id: string };
  /** False when the sampler dropped it (no exemplar points at a trace nobody has). */
  readonly sampled: boolean;
}

/** A stored W3C traceparent to link to (a webhook event's, a message's request). */
export type StoredTrace = string | null | undefined;

export interface TracingHooks {
  /** The database with a child span per statement (db.* attributes, never values). */
  database<D extends SqlDatabase>(db: D, system: 'sqlite' | 'postgresql'): D;
  /** A transaction's statements, traced like the database's. */
  sql(sql: Sql, system: 'sqlite' | 'postgresql'): Sql;
  /** The server span of a request (continuing an incoming traceparent). */
  serverSpan(req: IncomingMessage, res: ServerResponse): ServerSpan;
  /** The active span's traceparent, to store with what a request queues (events, messages). */
  traceparent(): string | undefined;
  /** The active span, marked with the account (never a key). */
  setAccount(accountId: string): void;
  /** Captures the active span's context for a later link (the group commit's submitters); undefined unless sampled. */
  capture(): unknown;
  /** The traceparent of a context capture() returned. */
  traceparentOf(captured: unknown): string | undefined;
  /** Runs `work` in a span named `name` linked to `links` (captured contexts), with attributes; `client`: a call to another service (Redis). */
  inSpan<T>(name: string, links: readonly unknown[], attributes: Record<string, string | number>, work: () => Promise<T>, kind?: 'client'): Promise<T>;
  /**
   * A client span for an outgoing HTTP call, linked to `linked`; `headers` gets its traceparent.
   * `outcome` turns the result into attributes, and says whether it is an error.
   */
  clientSpan<T>(
    name: string,
    linked: StoredTrace,
    attributes: Record<string, string | number>,
    headers: Record<string, string>,
    work: () => Promise<T>,
    outcome: (result: T) => { attributes: Record<string, string | number>; error: boolean },
  ): Promise<T>;
  /** A consumer-side span (a worker's job) linked to the request that queued it. */
  linkedSpan<T>(name: string, linked: StoredTrace, attributes: Record<string, string | number>, work: () => Promise<T>): Promise<T>;
  /** The active trace id and span id, for log lines and exemplars. */
  ids(): { trace_id: string; span_id: string } | undefined;
  /** Spans dropped so far: refused by the full export queue, or lost by a failed export. */
  dropped(): { queueFull: number; exportFailed: number };
  /** Exports what is pending; resolves by `timeoutMs` at the latest. */
  shutdown(timeoutMs: number): Promise<void>;
}

/** Set when tracing is on (after startTracing). */
export let hooks: TracingHooks | undefined;

/** True when the standard OpenTelemetry environment asks for trace export. */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter !== undefined && exporter !== '') return exporter.split(',').some((name) => name.trim() === 'otlp');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Starts tracing when the environment asks for it (once per process); loads nothing otherwise. */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<TracingHooks | undefined> {
  if (hooks || !tracingRequested(env)) return hooks;
  const { createTracing } = await import('./sdk.js');
  hooks = createTracing(env);
  return hooks;
}

const SERVER_SPAN = Symbol('petstore.serverSpan');
type Traced = IncomingMessage & { [SERVER_SPAN]?: ServerSpan };

/**
 * Starts the request's server span and returns `handler` to run under it. The span's context is
 * entered only there: a request the fast path answers from memory needs none, and on Node 20
 * and 22 entering one turns on the storage's promise hook for every request meanwhile.
 */
export function traceRequest<H extends (req: IncomingMessage, res: ServerResponse) => void>(tracing: TracingHooks, req: IncomingMessage, res: ServerResponse, handler: H): H {
  const span = tracing.serverSpan(req, res);
  (req as Traced)[SERVER_SPAN] = span;
  if (!span.sampled) return handler;
  return ((rq: IncomingMessage, rs: ServerResponse) => span.run(() => handler(rq, rs))) as H;
}

/** The request's server span (tracing on). */
export const serverSpanOf = (req: IncomingMessage): ServerSpan | undefined => (req as Traced)[SERVER_SPAN];

/**
 * Exports the spans still pending (SIGTERM), within what is left of `timeoutMs` since `since`
 * (the shutdown's start): an unreachable collector never holds the exit past the deadline.
 */
export async function flushTracing(timeoutMs: number, since: number): Promise<void> {
  if (hooks) await hooks.shutdown(Math.max(100, timeoutMs - (Date.now() - since) - 250));
}

/** The active span's traceparent when tracing is on. */
export const activeTraceparent = (): string | undefined => hooks?.traceparent();
