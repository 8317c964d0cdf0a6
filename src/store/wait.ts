// At start the database may not take connections yet (a compose or Kubernetes start, PostgreSQL
// restarting, a busy host): `serve`, `worker` and `migrate` wait for it, retrying with backoff
// for up to PETSTORE_DATABASE_WAIT_MS, instead of exiting on the first refused connection and
// leaving recovery to a restart loop. Only "cannot connect" is retried: a wrong password or a
// missing database fails at once.
import { setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseConfig, EventsConfig } from '../config.js';
import type { SecretsConfig } from '../webhooks/secret-keys.js';
import { DatabaseWaitError, StoreUnavailableError } from './errors.js';
import { createStore, isPostgresUrl, type Store, type StoreRole } from './index.js';

export interface WaitRetry {
  attempt: number;
  retryInMs: number;
  waitedMs: number;
  /** What the last attempt got, without credentials. */
  reason: string;
}

export interface WaitHooks {
  onRetry(retry: WaitRetry): void;
  /** Reached after at least one retry. */
  onReachable?(attempts: number, waitedMs: number): void;
}

const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 5000;

/** 250 ms, doubling, at most 5 s: quick when the database is seconds away, gentle when minutes. */
export const retryDelay = (attempt: number): number => Math.min(FIRST_DELAY_MS * 2 ** (attempt - 1), MAX_DELAY_MS);

/** "PostgreSQL at host:port/db" (no user, no password) or "SQLite", for messages. */
export function describeDatabase(url: string): string {
  if (!isPostgresUrl(url)) return 'SQLite';
  try {
    const parsed = new URL(url);
    return `PostgreSQL at ${parsed.host || 'localhost'}${parsed.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}

/** The error's message with the URL's password (as written and decoded) blanked out. */
function reasonOf(error: Error, url: string): string {
  const cause = error.cause instanceof Error ? error.cause : error;
  const code = (cause as { code?: unknown }).code;
  let text = typeof code === 'string' && !cause.message.includes(code) ? `${code}: ${cause.message}` : cause.message;
  let password = '';
  try {
    password = new URL(url).password;
  } catch {
    // not a URL: nothing to hide
  }
  for (const secret of [url, password, password && decodeURIComponent(password)]) {
    if (secret) text = text.split(secret).join('***');
  }
  return text;
}

/** Pings the store until it answers; DatabaseWaitError once `waitMs` has passed without. */
export async function waitForStore(store: Pick<Store, 'ping'>, url: string, waitMs: number, hooks: WaitHooks): Promise<void> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      await store.ping();
      if (attempt > 1) hooks.onReachable?.(attempt, Date.now() - started);
      return;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      const waitedMs = Date.now() - started;
      const reason = reasonOf(error, url);
      if (waitedMs >= waitMs) {
        throw new DatabaseWaitError(
          `${describeDatabase(url)} took no connection within ${waitMs} ms (PETSTORE_DATABASE_WAIT_MS; ${attempt} attempt${attempt === 1 ? '' : 's'}): ${reason}`,
          { cause: error },
        );
      }
      const retryInMs = Math.min(retryDelay(attempt), waitMs - waitedMs);
      hooks.onRetry({ attempt, retryInMs, waitedMs, reason });
      await sleep(retryInMs);
    }
  }
}

/** createStore, then waitForStore (PETSTORE_DATABASE_WAIT_MS); the store is closed when the wait fails. */
export async function openStoreWhenReachable(
  config: { database: DatabaseConfig; events: Pick<EventsConfig, 'enabled'>; secrets?: SecretsConfig },
  role: StoreRole,
  hooks: WaitHooks,
): Promise<Store> {
  const store = await createStore(config, role);
  try {
    await waitForStore(store, config.database.url, config.database.waitMs, hooks);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

const retryText = (where: string, { reason, retryInMs }: WaitRetry) => `${where} takes no connection yet (${reason}); retrying in ${retryInMs} ms`;
const reachableText = (where: string, waitedMs: number) => `${where} reachable after ${waitedMs} ms`;

/** The hooks for a pino logger (`serve`, `worker`): a warning per retry, a line once reachable. */
export function loggedWait(logger: { warn(fields: object, msg: string): void; info(fields: object, msg: string): void }, url: string, waitMs: number): WaitHooks {
  const where = describeDatabase(url);
  return {
    onRetry: (retry) => logger.warn({ ...retry, waitMs }, retryText(where, retry)),
    onReachable: (attempts, waitedMs) => logger.info({ attempts, waitedMs }, reachableText(where, waitedMs)),
  };
}

/** The hooks for a command without a log (`migrate`: stdout is its result): plain lines. */
export function printedWait(write: (line: string) => void, url: string): WaitHooks {
  const where = describeDatabase(url);
  return {
    onRetry: (retry) => write(`petstore: ${retryText(where, retry)}\n`),
    onReachable: (_attempts, waitedMs) => write(`petstore: ${reachableText(where, waitedMs)}\n`),
  };
}
