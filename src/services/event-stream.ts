// The event log, live (GET /v1/events/stream): who may open a stream, and when each open stream
// reads the log again. The log is the truth: a stream reads its account's events after the last
// sequence it sent, so a missed wake-up delays an event but never loses or repeats one. Wake-ups
// are this process's commits, other processes' (PostgreSQL NOTIFY, SQLite's change check), and a
// slow poll while those cannot be heard. A stream lives no longer than its key: it ends at the
// key's expiry, and when the key cache hears the key changed (revoked, or its expiry brought
// forward by a roll) the key is read again, once per key. No HTTP here: the route writes what it reads.
import type { Clock } from '../clock.js';
import { RateLimitedError } from '../errors.js';
import type { AccountRepository } from '../store/accounts.js';
import type { ApiKeyRepository } from '../store/api-keys.js';
import type { EventRepository, StoredEvent } from '../store/events.js';
import type { KeyChangeListener } from './api-keys.js';
import { parseTypeFilter } from './events.js';

/** At most this many streams per API key at once (in one process). */
export const STREAMS_PER_KEY = 5;
/** Events read from the log at a time. */
const PAGE = 100;
/** setTimeout's longest delay; a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface StreamOptions {
  accountId: string;
  keyId: string;
  /** When the key expires (epoch ms; Infinity: never): its streams end then. */
  keyExpiresAtMs: number;
  type?: string | undefined;
  /** Start after this sequence; undefined: after the last event committed now (only new ones). */
  afterSeq?: number | undefined;
}

/** Why a stream ends: shutdown, its key may no longer read (revoked; expired at `at`, epoch ms), or its reader released it. */
export type StreamEnd = { reason: 'shutdown' } | { reason: 'key_revoked' } | { reason: 'key_expired'; at: number } | { reason: 'released' };

/** One open stream: reads its events in order, and waits for the next. */
export interface EventSubscription {
  /** The events after the last ones returned (at most a page), or [] when there are none yet. */
  read(): Promise<readonly StoredEvent[]>;
  /** Resolves with 'wake' when new events may be there, 'idle' after `ms`, 'closed' when the stream must end. */
  wait(ms: number): Promise<'wake' | 'idle' | 'closed'>;
  /** The sequence of the last event returned (or the start). */
  readonly lastSeq: number;
  /** Why the stream must end, once wait answers 'closed'. */
  readonly ended: StreamEnd | undefined;
  release(): void;
}

interface Waiter {
  dirty: boolean;
  ended: StreamEnd | undefined;
  notify: (() => void) | undefined;
}

/** One key's open streams: they end together when the key is revoked or expires. */
interface KeyStreams {
  waiters: Set<Waiter>;
  expiresAtMs: number;
  timer: NodeJS.Timeout | undefined;
  /** A read of the key is running; `again`: a change was heard meanwhile, read once more. */
  checking: boolean;
  again: boolean;
}

export interface EventStreamDeps {
  events: Pick<EventRepository, 'list'>;
  accounts: Pick<AccountRepository, 'lastEventSeq'>;
  /** The key of each stream, read again whenever it may have changed. */
  apiKeys: Pick<ApiKeyRepository, 'find'>;
  /** Key changes as the key cache hears them (ApiKeyService.onKeyChange), subscribed while streams are open. */
  onKeyChange: (listener: KeyChangeListener) => () => void;
  clock: Clock;
}

/** Ends each stream of `group` (its next wait answers 'closed'), keeping the first reason given. */
function end(group: Iterable<Waiter>, why: StreamEnd): void {
  for (const waiter of group) {
    waiter.ended ??= why;
    waiter.notify?.();
  }
}

/**
 * The open streams of each key, ended together when the key expires (a timer) or is revoked
 * (read again when the key cache hears it changed: subscribed while any stream is open).
 */
function keyLifetimes(deps: Pick<EventStreamDeps, 'apiKeys' | 'onKeyChange' | 'clock'>) {
  const keys = new Map<string, KeyStreams>();
  let unsubscribe: (() => void) | undefined;

  function armExpiry(group: KeyStreams): void {
    clearTimeout(group.timer);
    group.timer = undefined;
    if (group.expiresAtMs === Number.POSITIVE_INFINITY) return;
    const left = group.expiresAtMs - deps.clock.now();
    if (left <= 0) {
      end(group.waiters, { reason: 'key_expired', at: group.expiresAtMs });
      return;
    }
    group.timer = setTimeout(() => armExpiry(group), Math.min(left, MAX_TIMER_MS));
    group.timer.unref();
  }

  /** Reads the key again (one read per key however many streams it has): revoked ends them, a new expiry re-arms. */
  async function checkKey(keyId: string, group: KeyStreams): Promise<void> {
    if (group.checking) {
      group.again = true;
      return;
    }
    group.checking = true;
    try {
      do {
        group.again = false;
        const key = await deps.apiKeys.find(keyId);
        if (!key || key.revokedAt !== null) {
          end(group.waiters, { reason: 'key_revoked' });
          return;
        }
        const expiresAtMs = key.expiresAt === null ? Number.POSITIVE_INFINITY : Date.parse(key.expiresAt);
        if (expiresAtMs !== group.expiresAtMs) {
          group.expiresAtMs = expiresAtMs;
          armExpiry(group);
        }
      } while (group.again && keys.get(keyId) === group);
    } catch {
      // The store failed: the streams' own reads fail too and end them; a later change reads again.
    } finally {
      group.checking = false;
    }
  }

  const keyChanged: KeyChangeListener = (keyId) => {
    if (keyId === undefined) for (const [id, group] of keys) void checkKey(id, group);
    else {
      const group = keys.get(keyId);
      if (group) void checkKey(keyId, group);
    }
  };

  return {
    /** The key's open streams. */
    count: (keyId: string) => keys.get(keyId)?.waiters.size ?? 0,

    /** Adds a stream to its key's; returns what removes it. */
    join(keyId: string, keyExpiresAtMs: number, waiter: Waiter): () => void {
      let group = keys.get(keyId);
      if (!group) {
        group = { waiters: new Set(), expiresAtMs: keyExpiresAtMs, timer: undefined, checking: false, again: false };
        keys.set(keyId, group);
        armExpiry(group);
        unsubscribe ??= deps.onKeyChange(keyChanged);
      }
      group.waiters.add(waiter);
      // A revocation heard between the request's authentication and now: read the key once.
      void checkKey(keyId, group);
      const joined = group;
      return () => {
        joined.waiters.delete(waiter);
        if (joined.waiters.size > 0) return;
        clearTimeout(joined.timer);
        keys.delete(keyId);
        if (keys.size > 0) return;
        unsubscribe?.();
        unsubscribe = undefined;
      };
    },
  };
}

export function createEventStreams(deps: EventStreamDeps) {
  /** closeAll was called: a stream opened from now on ends at once. */
  let shuttingDown = false;
  const lifetimes = keyLifetimes(deps);
  const waiters = new Set<Waiter>();

  const wakeAll = () => {
    for (const waiter of waiters) {
      waiter.dirty = true;
      waiter.notify?.();
    }
  };

  /** 429 when the key has STREAMS_PER_KEY open already. */
  function admit(keyId: string): void {
    if (lifetimes.count(keyId) >= STREAMS_PER_KEY) {
      throw new RateLimitedError(
        5,
        {},
        `This API key has ${STREAMS_PER_KEY} event streams open already, the most it may. Close one (or use another key).`,
      );
    }
  }

  return {
    /** How many streams are open in this process. */
    openCount: () => waiters.size,

    /** Whether open would be refused (400 or 429, thrown as open throws them), without opening: HEAD. */
    check({ keyId, type }: Pick<StreamOptions, 'keyId' | 'type'>): void {
      parseTypeFilter(type);
      admit(keyId);
    },

    /** Opens a stream; 429 when the key has STREAMS_PER_KEY open already, 400 on an unknown type. */
    async open({ accountId, keyId, keyExpiresAtMs, type, afterSeq }: StreamOptions): Promise<EventSubscription> {
      const typeMask = parseTypeFilter(type);
      let lastSeq = afterSeq ?? (await deps.accounts.lastEventSeq(accountId));
      admit(keyId);
      // Dirty from the start: the first wait reads at once.
      // Opened after shutdown began (its request was admitted before): it ends at once.
      const waiter: Waiter = { dirty: true, ended: shuttingDown ? { reason: 'shutdown' } : undefined, notify: undefined };
      const leave = lifetimes.join(keyId, keyExpiresAtMs, waiter);
      waiters.add(waiter);
      let released = false;
      return {
        get lastSeq() {
          return lastSeq;
        },
        get ended() {
          return waiter.ended;
        },
        async read() {
          // Cleared before the read: a commit during it sets it again, so the next wait does not sleep.
          waiter.dirty = false;
          const events = await deps.events.list({ accountId, typeMask, afterSeq: lastSeq, limit: PAGE });
          if (events.length > 0) lastSeq = events[events.length - 1]!.seq;
          if (events.length === PAGE) waiter.dirty = true;
          return events;
        },
        wait: (ms) => waitFor(waiter, ms),
        release() {
          if (released) return;
          released = true;
          waiter.ended ??= { reason: 'released' };
          waiter.notify?.();
          waiters.delete(waiter);
          leave();
        },
      };
    },

    /** New events may have been committed (by anyone): every stream reads again. */
    wake: wakeAll,

    /** Shutdown: every stream's wait answers 'closed' (the route ends it after what it has sent). */
    closeAll() {
      shuttingDown = true;
      end(waiters, { reason: 'shutdown' });
    },
  };
}

function waitFor(waiter: Waiter, ms: number): Promise<'wake' | 'idle' | 'closed'> {
  if (waiter.ended) return Promise.resolve('closed');
  if (waiter.dirty) return Promise.resolve('wake');
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiter.notify = undefined;
      resolve('idle');
    }, ms);
    waiter.notify = () => {
      clearTimeout(timer);
      waiter.notify = undefined;
      resolve(waiter.ended ? 'closed' : 'wake');
    };
  });
}

export type EventStreams = ReturnType<typeof createEventStreams>;
