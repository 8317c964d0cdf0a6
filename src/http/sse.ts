// Writing one event stream (text/event-stream) to a response: frames from the subscription,
// a comment when nothing was written for the heartbeat interval, the slow-consumer cut-off,
// and the end (on shutdown, or when the key is revoked or expires) with a comment saying why.
// What to send is the subscription's (src/services/event-stream.ts).
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { EventSubscription, StreamEnd } from '../services/event-stream.js';
import { eventJson } from '../services/events.js';
import type { StoredEvent } from '../store/events.js';

/** How long a stream over its buffer limit may take to drain before it is cut off. */
export const DRAIN_GRACE_MS = 5_000;

export interface SseOptions {
  heartbeatMs: number;
  bufferBytes: number;
  log: FastifyBaseLogger;
}

/** One SSE frame: id is the sequence, event the type, data the event's JSON (one line). */
export const sseFrame = (e: StoredEvent) => `id: ${e.seq}\nevent: ${e.type}\ndata: ${eventJson(e)}\n\n`;

/**
 * The last comment of a stream the server ends: why, and what to do. A browser's EventSource
 * reconnects by itself; with a revoked or expired key that answers 401, which stops it.
 */
export function endComment(end: StreamEnd | undefined, lastSeq: number): string {
  switch (end?.reason) {
    case 'key_revoked':
      return `: unauthorized: the API key was revoked, so this stream ends (the key is refused with 401 from now on). Open a new stream with another key, with Last-Event-ID: ${lastSeq}\n\n`;
    case 'key_expired':
      return `: unauthorized: the API key expired at ${new Date(end.at).toISOString()}, so this stream ends. Open a new stream with another key, with Last-Event-ID: ${lastSeq}\n\n`;
    default:
      // Shutdown: the last id sent is where the client resumes (on another instance).
      return `: server shutting down; reconnect with Last-Event-ID: ${lastSeq}\n\n`;
  }
}

/** Whether `res` drained within `ms` (false also when it closed). */
function drained(res: ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => finish(true);
    const onClose = () => finish(false);
    const timer = setTimeout(() => finish(false), ms);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/** Streams until the client goes, the consumer is cut off, the store fails, the key may no longer read, or shutdown. */
export async function pumpEvents(res: ServerResponse, sub: EventSubscription, { heartbeatMs, bufferBytes, log }: SseOptions): Promise<void> {
  let open = true;
  const gone = () => {
    open = false;
    sub.release();
  };
  res.on('close', gone);
  // The client may have gone while the stream was opening: 'close' fired before anyone listened.
  if (res.destroyed) gone();
  let lastWrite = Date.now();
  try {
    while (open) {
      const outcome = await sub.wait(Math.max(0, heartbeatMs - (Date.now() - lastWrite)));
      if (!open) return;
      if (outcome === 'closed') {
        res.end(endComment(sub.ended, sub.lastSeq));
        return;
      }
      const events = outcome === 'wake' ? await sub.read() : [];
      if (!open) return;
      if (events.length === 0) {
        if (Date.now() - lastWrite < heartbeatMs) continue;
        res.write(':\n\n');
      } else res.write(events.map(sseFrame).join(''));
      lastWrite = Date.now();
      if (res.writableLength >= bufferBytes && !(await drained(res, DRAIN_GRACE_MS))) {
        if (open) log.warn({ unsentBytes: res.writableLength, lastSeq: sub.lastSeq }, 'event stream cut off: the consumer is not reading');
        res.destroy();
        return;
      }
    }
  } catch (err) {
    // The store failed: end the stream; the client resumes from the last id it got.
    log.warn({ err }, 'event stream ended: reading the log failed');
    res.end(': error reading events; reconnect with Last-Event-ID\n\n');
  } finally {
    sub.release();
    // A client that went away half-closed (FIN) leaves the socket open for our answer: end it.
    if (!res.writableEnded) res.destroy();
  }
}
