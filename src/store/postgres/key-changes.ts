// Hears API key changes from every process through LISTEN on the channel migration 7's trigger
// notifies. One dedicated connection per process (a pooled one would be handed to queries).
// While it is not listening, changes can be missed: the watcher reports itself not live (the
// key service then checks the store on every request) and, once listening again, tells its
// subscriber to forget everything it remembered.
import pg from 'pg';
import type { ApiKeyWatch } from '../types.js';

export const KEY_CHANGES_CHANNEL = 'petstore_api_keys';
const RECONNECT_MIN_MS = 100;
// At most 1 s between attempts: once a new primary is up (a failover), revocations are heard
// again within a second.
const RECONNECT_MAX_MS = 1_000;

export function watchKeyChanges(url: string, options: { connectionTimeoutMillis: number }, onChange: (keyId: string | undefined) => void): ApiKeyWatch {
  return watchChannel(url, options, KEY_CHANGES_CHANNEL, onChange);
}

/** LISTENs on `channel` (reconnecting): onChange(payload) per notice, onChange(undefined) when notices may have been missed. */
export function watchChannel(
  url: string,
  options: { connectionTimeoutMillis: number },
  channel: string,
  onChange: (payload: string | undefined) => void,
): ApiKeyWatch {
  let client: pg.Client | undefined;
  let live = false;
  let closed = false;
  let retryIn = RECONNECT_MIN_MS;
  let timer: NodeJS.Timeout | undefined;

  const lost = (which: pg.Client) => {
    if (which !== client) return;
    client = undefined;
    live = false;
    // Whatever was remembered may miss a change made from now until we listen again.
    onChange(undefined);
    which.end().catch(() => {});
    schedule();
  };

  const schedule = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void connect();
    }, retryIn);
    timer.unref();
    retryIn = Math.min(retryIn * 2, RECONNECT_MAX_MS);
  };

  const connect = async () => {
    if (closed) return;
    const next = new pg.Client({ connectionString: url, keepAlive: true, connectionTimeoutMillis: options.connectionTimeoutMillis });
    client = next;
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    next.on('notification', (message) => {
      if (message.channel === channel) onChange(message.payload || undefined);
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${channel}`);
    } catch {
      lost(next);
      return;
    }
    if (next !== client || closed) return;
    // Changes committed before LISTEN took effect were not heard: start from nothing.
    onChange(undefined);
    live = true;
    retryIn = RECONNECT_MIN_MS;
    // The connection must not keep a finished process (the CLI, a test) alive.
    (next as unknown as { unref(): void }).unref();
  };

  void connect();

  return {
    live: () => live,
    async close() {
      closed = true;
      live = false;
      if (timer) clearTimeout(timer);
      const last = client;
      client = undefined;
      await last?.end().catch(() => {});
    },
  };
}
