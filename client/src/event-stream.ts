// `petstore.events.stream()`: GET /events/stream read as Server-Sent Events, reconnecting after
// a lost connection (or a server's shutdown) from the last sequence received, so the events
// come in order with nothing skipped or repeated. Parsing is the WHATWG event-stream format,
// reduced to what the server sends (id, event, data, comments); runs in browsers too.
import { type Core, isRetryable, pause } from './core.js';
import { PetstoreError } from './errors.js';
import type { Event, EventType } from './webhooks.js';

export interface StreamEventsParams {
  /** Only these kinds (one, or a list). */
  type?: EventType | readonly EventType[] | undefined;
  /** Start after this `sequence` (0: every event kept). Default: with the next event committed. */
  after?: number | undefined;
  /** Ends the iteration (it returns; it does not throw). */
  signal?: AbortSignal | undefined;
}

interface Frame {
  id?: string;
  data?: string;
  comment?: string;
}

const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 8_000;

/** Frames of an event stream body as they arrive. */
async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const frame: Frame = {};
        for (const line of buffer.slice(0, end).split('\n')) {
          const colon = line.indexOf(':');
          const field = colon === -1 ? line : line.slice(0, colon);
          const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === '') frame.comment = value;
          else if (field === 'id') frame.id = value;
          else if (field === 'data') frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
        }
        buffer = buffer.slice(end + 2);
        yield frame;
      }
    }
  } finally {
    // The iteration stopped (break, abort, an error): close the connection too.
    await reader.cancel().catch(() => {});
  }
}

/** The events of the stream, reconnecting and resuming by itself until `signal` aborts. */
export async function* streamEvents(core: Core, path: string, params: StreamEventsParams): AsyncGenerator<Event, void, undefined> {
  const { signal } = params;
  const type = typeof params.type === 'string' || params.type === undefined ? params.type : params.type.join(',');
  let after = params.after;
  let failures = 0;
  let retryAfterMs: number | undefined;
  while (!signal?.aborted) {
    try {
      const response = await core.openStream(path, { type, after }, {}, signal);
      for await (const frame of frames(response.body!)) {
        // The server's first line says where a stream "from now" starts: resume from there.
        const start = /^after (\d+)$/.exec(frame.comment ?? '');
        if (start && after === undefined) after = Number(start[1]);
        if (frame.id === undefined || frame.data === undefined) continue;
        const event = JSON.parse(frame.data) as Event;
        after = event.sequence;
        failures = 0;
        yield event;
      }
    } catch (error) {
      if (signal?.aborted) return;
      // A refusal (a bad key, a missing scope, a bad type) will not change by reconnecting.
      if (error instanceof PetstoreError && error.status !== 0 && !isRetryable(error)) throw error;
      retryAfterMs = error instanceof PetstoreError && error.retryAfter !== undefined ? error.retryAfter * 1000 : undefined;
    }
    const backoff = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** failures++);
    try {
      await pause(Math.max(backoff, retryAfterMs ?? 0), signal);
    } catch {
      return;
    }
    retryAfterMs = undefined;
  }
}
