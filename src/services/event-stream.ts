// The event log, live (GET /v1/events/stream): who may open a stream, and when each open stream
// reads the log again. The log is the truth: a stream reads its account's events after the last
// sequence it sent, so a missed wake-up delays an event but never loses or repeats one. Wake-ups
// are this process's commits, other processes' (PostgreSQL NOTIFY, SQLite's change check), and a
// slow poll while those cannot be heard. No HTTP here: the route writes what it reads.
import { RateLimitedError } from '../errors.js';
import type { AccountRepository } from '../store/accounts.js';
import type { EventRepository, StoredEvent } from '../store/events.js';
import { parseTypeFilter } from './events.js';

/** At most this many streams per API key at once (in one process). */
export const STREAMS_PER_KEY = 5;
/** Events read from the log at a time. */
const PAGE = 100;

export interface StreamOptions {
  accountId: string;
  keyId: string;
  type?: string | undefined;
  /** Start after this sequence; undefined: after the last event committed now (only new ones). */
  afterSeq?: number | undefined;
}

/** One open stream: reads its events in order, and waits for the next. */
export interface EventSubscription {
  /** The events after the last ones returned (at most a page), or [] when there are none yet. */
  read(): Promise<readonly StoredEvent[]>;
  /** Resolves with 'wake' when new events may be there, 'idle' after `ms`, 'closed' when the stream must end. */
  wait(ms: number): Promise<'wake' | 'idle' | 'closed'>;
  /** The sequence of the last event returned (or the start). */
  readonly lastSeq: number;
  release(): void;
}

interface Waiter {
  dirty: boolean;
  closed: boolean;
  notify: (() => void) | undefined;
}

export function createEventStreams(deps: { events: Pick<EventRepository, 'list'>; accounts: Pick<AccountRepository, 'lastEventSeq'> }) {
  const perKey = new Map<string, number>();
  const waiters = new Set<Waiter>();

  const wakeAll = () => {
    for (const waiter of waiters) {
      waiter.dirty = true;
      waiter.notify?.();
    }
  };

  return {
    /** How many streams are open in this process. */
    openCount: () => waiters.size,

    /** Opens a stream; 429 when the key has STREAMS_PER_KEY open already, 400 on an unknown type. */
    async open({ accountId, keyId, type, afterSeq }: StreamOptions): Promise<EventSubscription> {
      const typeMask = parseTypeFilter(type);
      let lastSeq = afterSeq ?? (await deps.accounts.lastEventSeq(accountId));
      const count = perKey.get(keyId) ?? 0;
      if (count >= STREAMS_PER_KEY) {
        throw new RateLimitedError(
          5,
          {},
          `This API key has ${STREAMS_PER_KEY} event streams open already, the most it may. Close one (or use another key).`,
        );
      }
      perKey.set(keyId, count + 1);
      // Dirty from the start: the first wait reads at once.
      const waiter: Waiter = { dirty: true, closed: false, notify: undefined };
      waiters.add(waiter);
      let released = false;
      return {
        get lastSeq() {
          return lastSeq;
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
          waiters.delete(waiter);
          waiter.closed = true;
          waiter.notify?.();
          const left = (perKey.get(keyId) ?? 1) - 1;
          if (left === 0) perKey.delete(keyId);
          else perKey.set(keyId, left);
        },
      };
    },

    /** New events may have been committed (by anyone): every stream reads again. */
    wake: wakeAll,

    /** Shutdown: every stream's wait answers 'closed' (the route ends it after what it has sent). */
    closeAll() {
      for (const waiter of waiters) {
        waiter.closed = true;
        waiter.notify?.();
      }
    },
  };
}

function waitFor(waiter: Waiter, ms: number): Promise<'wake' | 'idle' | 'closed'> {
  if (waiter.closed) return Promise.resolve('closed');
  if (waiter.dirty) return Promise.resolve('wake');
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiter.notify = undefined;
      resolve('idle');
    }, ms);
    waiter.notify = () => {
      clearTimeout(timer);
      waiter.notify = undefined;
      resolve(waiter.closed ? 'closed' : 'wake');
    };
  });
}

export type EventStreams = ReturnType<typeof createEventStreams>;
