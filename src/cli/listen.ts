// `petstore listen`: follows GET /v1/events/stream of a server over HTTP (no database) and POSTs
// each event to a local URL, signed exactly as a real delivery (the service's own signing and
// headers), printing one line per event. A lost connection is reopened after the last event
// forwarded, so nothing is skipped; an event is forwarded once, whatever the receiver answers.
// As a real delivery, a redirect is not followed: it is the receiver's answer (a failure).
import { setTimeout as sleep } from 'node:timers/promises';
import { sseParser } from '../http/sse-frames.js';
import { EVENT_TYPES } from '../schemas/events.js';
import { CommandError } from './usage.js';
import { parseRetryAfter, USER_AGENT } from '../webhooks/sender.js';
import { deliveryHeaders, newWebhookSecret } from '../webhooks/signing.js';

export interface ListenOptions {
  apiKey: string;
  baseUrl: string;
  forwardTo: string;
  events: string | undefined;
  secret: string | undefined;
  after: number | undefined;
  /** Where lines go (stdout). */
  out: (line: string) => void;
  signal?: AbortSignal;
}

export class ListenError extends CommandError {}

/** A refusal worth retrying (429, 5xx), after the server's Retry-After when it gave one. */
class RetryLater extends Error {
  constructor(
    status: number,
    readonly waitMs: number,
  ) {
    super(`HTTP ${status}`);
  }
}

/** The refusal's Retry-After in ms, capped at a minute; 0 without one. */
const retryAfterMs = (res: Response): number => Math.min(parseRetryAfter(res.headers.get('retry-after') ?? undefined, Date.now()) ?? 0, 60_000);

const RECONNECT_MAX_MS = 5_000;
const FORWARD_TIMEOUT_MS = 15_000;

export function checkListenOptions(options: Pick<ListenOptions, 'baseUrl' | 'forwardTo' | 'events'>): void {
  for (const [flag, value] of [['--base-url', options.baseUrl], ['--forward-to', options.forwardTo]] as const) {
    if (!/^https?:\/\/[^/]/.test(value)) throw new ListenError(`${flag} must be an http:// or https:// URL, got "${value}".`);
  }
  for (const type of options.events?.split(',') ?? []) {
    if (!(EVENT_TYPES as readonly string[]).includes(type.trim())) throw new ListenError(`--events: unknown event type "${type}". Use ${EVENT_TYPES.join(', ')}.`);
  }
}

/** POSTs one event to the receiver, signed; the line to print. */
async function forward(url: string, secret: string, body: string, signal: AbortSignal | undefined): Promise<string> {
  const event = JSON.parse(body) as { id: string; type: string; sequence: number };
  const started = performance.now();
  const headers = { ...deliveryHeaders([secret], event.id, Math.floor(Date.now() / 1000), body), 'content-type': 'application/json', 'user-agent': USER_AGENT };
  const timeout = AbortSignal.timeout(FORWARD_TIMEOUT_MS);
  let outcome: string;
  try {
    const res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    await res.arrayBuffer().catch(() => undefined);
    outcome = res.status >= 300 && res.status < 400 ? `${res.status} (a redirect: not followed, a failure as in a real delivery)` : `${res.status}`;
  } catch (err) {
    if (signal?.aborted) throw err;
    outcome = `failed (${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name})`;
  }
  const ms = Math.round(performance.now() - started);
  return `${new Date().toISOString()}  ${String(event.sequence).padStart(6)}  ${event.type.padEnd(18)}  ${event.id}  --> ${outcome} [${ms} ms]`;
}

/** Runs until `signal` aborts (resolves) or the server refuses the key or the query (rejects). */
export async function listen(options: ListenOptions): Promise<void> {
  const { out, signal } = options;
  checkListenOptions(options);
  const secret = options.secret ?? newWebhookSecret();
  out(`Forwarding events to ${options.forwardTo}. Signing secret: ${secret}${options.secret ? ' (given)' : ' (new; pass it to your receiver)'}`);
  let after = options.after;
  let failures = 0;
  while (!signal?.aborted) {
    let waitMs = 0;
    try {
      const url = new URL(`${options.baseUrl.replace(/\/$/, '')}/events/stream`);
      if (options.events) url.searchParams.set('type', options.events);
      if (after !== undefined) url.searchParams.set('after', String(after));
      const res = await fetch(url, { headers: { authorization: `Bearer ${options.apiKey}`, accept: 'text/event-stream' }, ...(signal ? { signal } : {}) });
      if (res.status !== 200 || !res.body) {
        const text = await res.text();
        // A refused key or query will not change by retrying; a limit or an outage will.
        if (res.status !== 429 && res.status < 500) throw new ListenError(`The server refused the stream (${res.status}): ${text}`);
        throw new RetryLater(res.status, retryAfterMs(res));
      }
      if (failures > 0) out(`${new Date().toISOString()}  reconnected after event ${after ?? 'none'}`);
      failures = 0;
      const parse = sseParser();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        for (const frame of parse(chunk)) {
          const start = /^after (\d+)$/.exec(frame.comment ?? '');
          if (start && after === undefined) {
            after = Number(start[1]);
            out(`Ready: listening for events after ${after}.`);
          }
          if (frame.id === undefined || frame.data === undefined) continue;
          out(await forward(options.forwardTo, secret, frame.data, signal));
          after = Number(frame.id);
        }
      }
    } catch (err) {
      if (signal?.aborted) return;
      if (err instanceof ListenError) throw err;
      if (err instanceof RetryLater) waitMs = err.waitMs;
    }
    if (signal?.aborted) return;
    out(`${new Date().toISOString()}  connection lost; reconnecting after event ${after ?? 'none'}`);
    const backoff = Math.min(RECONNECT_MAX_MS, 250 * 2 ** failures++);
    await sleep(Math.max(backoff, waitMs), undefined, signal ? { signal } : {}).catch(() => undefined);
  }
}
