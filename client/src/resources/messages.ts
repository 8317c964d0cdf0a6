// `petstore.messages`: the messaging example API (`/example/v1`, its own OpenAPI document),
// on a Core of its own whose base URL is the client's `exampleApiUrl`.
//
//   send ──202──▶ queued ──(the service delivers, normally within a second)──▶ delivered
//                       └──(5 failed attempts, with backoff)───────────────────▶ failed
import { type Core, type Page, parseRetryAfter, pause, type WriteOptions } from '../core.js';
import { PetstoreError } from '../errors.js';
import type { components, operations } from '../generated/example.js';

/** A message and where it is now: `deliveredAt` once `delivered`, `failureReason` once `failed`. */
export type Message = components['schemas']['Message'];
/** `queued` (accepted, not delivered yet), then `delivered` or `failed`; the last two are final. */
export type MessageStatus = components['schemas']['MessageStatus'];
/** The query of `listMessages`: `limit` (1–100, default 20), `status`, `cursor`. */
export type ListMessagesParams = NonNullable<operations['listMessages']['parameters']['query']>;
/** As {@link ListMessagesParams}, without the cursor: `limit` is the size of each page fetched. */
export type ListAllMessagesParams = Omit<ListMessagesParams, 'cursor'>;

/** Options of {@link Messages.waitUntilDone}. */
export interface WaitOptions {
  /**
   * How long to wait in all, in milliseconds (default 30 000: the service gives up on a message
   * after 5 attempts over about 15 s). Then the call rejects with a `PetstoreError` of code `timeout`.
   */
  timeoutMs?: number;
  /** Time between two polls, in milliseconds (default 250), unless the answer's `Retry-After` asks for another. */
  intervalMs?: number;
}

const MESSAGES = '/messages';
const DEFAULT_WAIT_TIMEOUT_MS = 30_000;
const DEFAULT_POLL_INTERVAL_MS = 250;

/** The messages of the key's account, sent through the example API (`exampleApiUrl`). */
export class Messages {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Sends a message (`sendMessage`): 1 to 2000 characters, not only spaces, no control characters.
   * Resolves with the server's **202 Accepted** answer: the message stored and `queued`, not
   * delivered yet; follow it with {@link Messages.waitUntilDone}. Safe to retry: see
   * {@link WriteOptions.idempotencyKey} (a repeated key replays the first 202, one message).
   */
  async send(text: string, options: WriteOptions = {}): Promise<Message> {
    const body: components['schemas']['NewMessage'] = { message: text };
    return (await this.#core.request<Message>({ method: 'POST', path: MESSAGES, body, idempotencyKey: options.idempotencyKey })).body;
  }

  /** One message by id, as it is now (`getMessage`); another account's id fails with 404 `not_found`. */
  async get(id: string): Promise<Message> {
    return (await this.#core.request<Message>({ method: 'GET', path: messagePath(id) })).body;
  }

  /** One page of messages, oldest first (`listMessages`); pass `nextCursor` back as `cursor` for the next. */
  list(params: ListMessagesParams = {}): Promise<Page<Message>> {
    return this.#core.page<Message>(MESSAGES, { limit: params.limit, status: params.status, cursor: params.cursor });
  }

  /** Every message (optionally only those with `status`), oldest first, fetching page after page as you iterate. */
  listAll(params: ListAllMessagesParams = {}): AsyncIterableIterator<Message> {
    return this.#core.all<Message>(MESSAGES, { limit: params.limit, status: params.status });
  }

  /**
   * Polls `GET /messages/{id}` until the message is `delivered` (with `deliveredAt`) or `failed`
   * (with `failureReason`: the service gave up after its retries) and resolves with it. Polls every
   * `intervalMs`, or after the answer's `Retry-After` when it has one. Rejects with a
   * `PetstoreError` of code `timeout` (status 0) once `timeoutMs` has passed while the message is
   * still `queued`, and with the poll's own `PetstoreError` when a poll fails (404 `not_found`
   * for another account's id), after the client's usual retries.
   */
  async waitUntilDone(id: string, options: WaitOptions = {}): Promise<Message> {
    const { timeoutMs = DEFAULT_WAIT_TIMEOUT_MS, intervalMs = DEFAULT_POLL_INTERVAL_MS } = options;
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw new TypeError('waitUntilDone: timeoutMs must be a positive number of milliseconds.');
    if (!(Number.isFinite(intervalMs) && intervalMs >= 0)) throw new TypeError('waitUntilDone: intervalMs must be a number of milliseconds >= 0.');
    // One deadline for the whole call: it aborts the poll in flight (and its retries, which may
    // wait out a Retry-After) and the pause between polls, and the call rejects with it.
    let last: Message | undefined;
    const deadline = new AbortController();
    const deadlineTimer = setTimeout(() => {
      const where = last === undefined ? 'no answer yet' : `still ${last.status}`;
      deadline.abort(new PetstoreError({ status: 0, code: 'timeout', message: `waitUntilDone: message ${id} is not delivered or failed within ${timeoutMs} ms (${where}).` }));
    }, timeoutMs);
    const { signal } = deadline;
    try {
      for (;;) {
        const answer = await this.#core.request<Message>({ method: 'GET', path: messagePath(id), signal });
        last = answer.body;
        if (last.status !== 'queued') return last;
        const retryAfter = parseRetryAfter(answer.headers.get('retry-after'));
        await pause(retryAfter === undefined ? intervalMs : retryAfter * 1000, signal);
      }
    } finally {
      // Nothing is left behind: no timer keeps a process alive after the call has settled.
      clearTimeout(deadlineTimer);
    }
  }
}

function messagePath(id: string): string {
  return `${MESSAGES}/${encodeURIComponent(id)}`;
}
