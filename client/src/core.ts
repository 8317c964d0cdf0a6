// The request core every resource shares: bearer auth, JSON, per-attempt timeouts, retries
// (writes always carry an Idempotency-Key, the same on every attempt), Link paging and the
// mapping of every failure to a PetstoreError. Resources stay thin: a path and their types.
import { PetstoreError, type PetstoreErrorCode } from './errors.js';

export type Fetch = typeof fetch;

export interface CoreOptions {
  apiKey: string;
  /** Absolute, without a trailing slash; request paths are appended to it. */
  baseUrl: string;
  maxRetries: number;
  timeoutMs: number | undefined;
  fetch: Fetch;
}

export type Query = Record<string, string | number | undefined>;

export interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Relative to the base URL, starting with `/`. */
  path: string;
  query?: Query | undefined;
  /** Sent as JSON when given. */
  body?: unknown;
  /** Extra request headers (conditional requests: `if-match`). */
  headers?: Record<string, string> | undefined;
  /** Writes only; generated when absent. */
  idempotencyKey?: string | undefined;
  /** Aborts the attempt in flight and any retry: the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * `false` for a write the server does not make idempotent (no Idempotency-Key support, and a
   * repeat is not harmless: a second endpoint, a second rotation). It is then retried only on
   * 429, which the server answers before doing any work, and sends no Idempotency-Key.
   */
  repeatable?: boolean | undefined;
}

export interface Answer<T> {
  status: number;
  headers: Headers;
  requestId: string | undefined;
  body: T;
}

/** One page of a list: `nextCursor` is absent on the last page. */
export interface Page<T> {
  data: T[];
  nextCursor?: string;
}

/** Options of every write. */
export interface WriteOptions {
  /**
   * Makes retries safe: the server replays the first answer for a repeated key instead of doing
   * the work twice. Generated (a random UUID) when absent; the same key is sent on every retry.
   * Pass your own to make a retry of the whole call (say after a crash) safe too.
   */
  idempotencyKey?: string;
}

/** A Retry-After longer than this is not waited out inside a call: the error goes to the caller. */
const MAX_RETRY_AFTER_MS = 60_000;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 8_000;

export class Core {
  // An ES private field: console.log and util.inspect never show it.
  readonly #apiKey: string;
  readonly #baseUrl: string;
  readonly #maxRetries: number;
  readonly #timeoutMs: number | undefined;
  readonly #fetch: Fetch;

  constructor(options: CoreOptions) {
    this.#apiKey = options.apiKey;
    this.#baseUrl = options.baseUrl;
    this.#maxRetries = options.maxRetries;
    this.#timeoutMs = options.timeoutMs;
    this.#fetch = options.fetch;
  }

  async request<T>(call: Call): Promise<Answer<T>> {
    const url = this.#url(call.path, call.query);
    const headers: Record<string, string> = { ...call.headers, accept: 'application/json', authorization: `Bearer ${this.#apiKey}` };
    let body: string | undefined;
    if (call.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(call.body);
    }
    const repeatable = call.repeatable ?? true;
    if (call.method !== 'GET' && repeatable) headers['idempotency-key'] = call.idempotencyKey ?? newIdempotencyKey();
    const { signal } = call;
    for (let retries = 0; ; retries += 1) {
      signal?.throwIfAborted();
      try {
        return await this.#attempt<T>(call.method, url, headers, body, signal);
      } catch (error) {
        signal?.throwIfAborted();
        if (!(error instanceof PetstoreError)) throw error;
        if (!repeatable && error.status !== 429) throw error;
        const delay = this.#retryDelayMs(error, retries);
        if (delay === undefined) throw error;
        await pause(delay, signal);
      }
    }
  }

  /** One page of a list endpoint; the next cursor comes from the `Link: <…>; rel="next"` header. */
  async page<T>(path: string, query: Query): Promise<Page<T>> {
    const { body, headers, status, requestId } = await this.request<T[]>({ method: 'GET', path, query });
    const unexpected = (message: string) => new PetstoreError({ status, code: 'unexpected_response', message, requestId });
    if (!Array.isArray(body)) throw unexpected(`GET ${path} answered ${status} without a JSON array.`);
    const next = linkTarget(headers.get('link'), 'next');
    if (next === undefined) return { data: body };
    const cursor = new URL(next, this.#baseUrl).searchParams.get('cursor');
    // Stopping here would silently drop the rest of the list.
    if (!cursor) throw unexpected(`GET ${path}: the rel="next" link has no cursor: ${next}`);
    return { data: body, nextCursor: cursor };
  }

  /** Every item of a list endpoint, page after page, until a page has no `rel="next"` link. */
  async *all<T>(path: string, query: Query): AsyncGenerator<T, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.page<T>(path, { ...query, cursor });
      yield* page.data;
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }

  /**
   * Opens a streaming GET (text/event-stream): the 200 Response with its body unread, or the
   * PetstoreError of its answer (`network_error` when none came). Not retried: the caller reconnects.
   */
  async openStream(path: string, query: Query, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<Response> {
    const url = this.#url(path, query);
    let response: Response;
    try {
      response = await this.#fetch(url, { headers: { ...headers, accept: 'text/event-stream', authorization: `Bearer ${this.#apiKey}` }, signal: signal ?? null });
    } catch (cause) {
      signal?.throwIfAborted();
      throw new PetstoreError({ status: 0, code: 'network_error', message: `GET ${url}: ${describe(cause)}`, cause });
    }
    if (response.status === 200 && response.body) return response;
    const requestId = response.headers.get('x-request-id') ?? undefined;
    throw errorFromAnswer(response, parseJson(await response.text()), requestId);
  }

  #url(path: string, query: Query | undefined): string {
    const url = new URL(this.#baseUrl + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  async #attempt<T>(method: string, url: string, headers: Record<string, string>, body: string | undefined, callSignal: AbortSignal | undefined): Promise<Answer<T>> {
    const timeoutMs = this.#timeoutMs;
    const controller = timeoutMs === undefined ? undefined : new AbortController();
    const timer = controller && setTimeout(() => controller.abort(), timeoutMs);
    const signal = controller && callSignal ? AbortSignal.any([controller.signal, callSignal]) : (controller?.signal ?? callSignal ?? null);
    try {
      let response: Response;
      let text: string;
      try {
        response = await this.#fetch(url, { method, headers, body: body ?? null, signal });
        text = await response.text(); // inside the timeout too: a stalled body is a timeout
      } catch (cause) {
        if (controller?.signal.aborted) {
          throw new PetstoreError({ status: 0, code: 'timeout', message: `${method} ${url}: no complete answer within ${timeoutMs} ms.`, cause });
        }
        throw new PetstoreError({ status: 0, code: 'network_error', message: `${method} ${url}: ${describe(cause)}`, cause });
      }
      const requestId = response.headers.get('x-request-id') ?? undefined;
      const parsed = parseJson(text);
      // Any 2xx is a success: 200, 201, and 202 Accepted (the example API's sendMessage).
      if (!response.ok) throw errorFromAnswer(response, parsed, requestId);
      if (parsed === INVALID) {
        throw new PetstoreError({ status: response.status, code: 'unexpected_response', message: `${method} ${url} answered ${response.status} with a body that is not JSON.`, requestId });
      }
      return { status: response.status, headers: response.headers, requestId, body: parsed as T };
    } finally {
      clearTimeout(timer);
    }
  }

  /** How long to wait before the next attempt, or undefined to give up. */
  #retryDelayMs(error: PetstoreError, retriesSoFar: number): number | undefined {
    if (retriesSoFar >= this.#maxRetries || !isRetryable(error)) return undefined;
    // Exponential, with "equal jitter": half fixed, half random, so clients that failed together spread out.
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** retriesSoFar);
    const backoff = ceiling / 2 + (Math.random() * ceiling) / 2;
    if (error.retryAfter === undefined) return backoff;
    const retryAfterMs = error.retryAfter * 1000;
    return retryAfterMs > MAX_RETRY_AFTER_MS ? undefined : Math.max(retryAfterMs, backoff);
  }
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Safe to retry: every write carries its Idempotency-Key, so a repeat cannot do the work twice. */
export function isRetryable(error: PetstoreError): boolean {
  return (
    error.code === 'network_error' ||
    error.code === 'timeout' ||
    error.code === 'idempotency_key_in_use' ||
    error.status === 429 ||
    error.status === 503
  );
}

const INVALID = Symbol('invalid JSON');

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return INVALID;
  }
}

function errorFromAnswer(response: Response, body: unknown, requestId: string | undefined): PetstoreError {
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  const { status } = response;
  if (typeof body === 'object' && body !== null && 'code' in body && 'message' in body) {
    const { code, message } = body;
    if (typeof code === 'string' && typeof message === 'string') {
      // Trusted as documented; a code added by a newer server still arrives as its string.
      const scope = code === 'insufficient_scope' ? challengeScope(response.headers.get('www-authenticate')) : undefined;
      return new PetstoreError({ status, code: code as PetstoreErrorCode, message, requestId, retryAfter, scope });
    }
  }
  const message = `HTTP ${status}${response.statusText ? ` ${response.statusText}` : ''} without an Error body.`;
  return new PetstoreError({ status, code: 'unexpected_response', message, requestId, retryAfter });
}

/** The `scope` attribute of an RFC 6750 challenge (`Bearer realm="…", error="insufficient_scope", scope="pets:write"`). */
export function challengeScope(value: string | null): string | undefined {
  return value === null ? undefined : /\bscope="([^"]*)"/.exec(value)?.[1];
}

/** Retry-After in seconds: delay-seconds or an HTTP-date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The target of the first link with this relation type in a `Link` header (RFC 8288). */
function linkTarget(header: string | null, rel: string): string | undefined {
  if (header === null) return undefined;
  for (const [, target, params = ''] of header.matchAll(/<([^>]*)>([^<]*)/g)) {
    const match = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))/i.exec(params);
    const rels = (match?.[1] ?? match?.[2] ?? '').toLowerCase().split(/\s+/);
    if (target !== undefined && rels.includes(rel)) return target;
  }
  return undefined;
}

/** Node's fetch rejects with "fetch failed" and puts the reason (ECONNREFUSED, "other side closed") in `cause`. */
function describe(cause: unknown): string {
  const parts: string[] = [];
  for (let c = cause, depth = 0; c instanceof Error && depth < 4; c = c.cause, depth += 1) parts.push(c.message);
  return parts.join(': ') || String(cause);
}

/** A random (v4) UUID; crypto.randomUUID needs a secure context in browsers, getRandomValues does not. */
function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
