import http from 'node:http';

// A Server-Sent Events reader for tests: node:http with a streaming body, frames parsed as they
// arrive (id, event, data, comments), next() with a deadline, close() destroying the connection.
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  /** Comment lines (`: …`), joined by newlines; '' for a bare `:` heartbeat. */
  comment?: string;
}

export interface SseStream {
  status: number;
  headers: Headers;
  /** The error body's JSON when the status is not 200. */
  body: unknown;
  /** The next frame; undefined when the stream ended; rejects after timeoutMs. */
  next(timeoutMs?: number): Promise<SseFrame | undefined>;
  /** The next `count` event frames (comments skipped). */
  events(count: number, timeoutMs?: number): Promise<SseFrame[]>;
  /** Whether the server ended the stream. */
  ended(): boolean;
  close(): void;
}

export function parseFrame(block: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of block.split('\n')) {
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === '') frame.comment = frame.comment === undefined ? value : `${frame.comment}\n${value}`;
    else if (field === 'id' || field === 'event') frame[field] = value;
    else if (field === 'data') frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
  }
  return frame;
}

/** Opens a stream with node:http (a fetch aborted mid-body makes undici open a spare connection: see src/http/instance.ts). */
export async function openSse(url: string, key: string | undefined, headers: Record<string, string> = {}): Promise<SseStream> {
  const req = http.get(url, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers }, agent: false });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
  if (res.statusCode !== 200) {
    let text = '';
    for await (const chunk of res) text += String(chunk);
    return { status: res.statusCode!, headers: responseHeaders, body: text ? JSON.parse(text) : undefined, next: async () => undefined, events: async () => [], ended: () => true, close: () => {} };
  }
  const frames: SseFrame[] = [];
  let done = false;
  let wake: (() => void) | undefined;
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          frames.push(parseFrame(buffer.slice(0, end)));
          buffer = buffer.slice(end + 2);
        }
        wake?.();
      }
    } catch {
      // aborted or cut: the stream ended
    }
    done = true;
    wake?.();
  })();
  const next = async (timeoutMs = 5_000): Promise<SseFrame | undefined> => {
    const deadline = Date.now() + timeoutMs;
    while (frames.length === 0 && !done) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no SSE frame within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
    return frames.shift();
  };
  return {
    status: 200,
    headers: responseHeaders,
    body: undefined,
    next,
    async events(count, timeoutMs = 5_000) {
      const out: SseFrame[] = [];
      const deadline = Date.now() + timeoutMs;
      while (out.length < count) {
        const frame = await next(Math.max(1, deadline - Date.now()));
        if (!frame) throw new Error(`the stream ended after ${out.length} of ${count} events`);
        if (frame.id !== undefined) out.push(frame);
      }
      return out;
    },
    ended: () => done && frames.length === 0,
    close: () => req.destroy(),
  };
}

/** Waits until `check()` holds (e.g. a count of open streams), polling every 20 ms; throws after `timeoutMs`. */
export async function waitFor(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
