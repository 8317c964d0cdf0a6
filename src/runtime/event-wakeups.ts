// When the event streams of this process read the log again (src/services/event-stream.ts):
// at this process's commits (and then, on PostgreSQL, NOTIFY for the other processes), at
// other processes' (PostgreSQL LISTEN; SQLite's change check, one pread, every 100 ms), and by
// a slow poll that covers a lost notice or a LISTEN connection being re-established.
import type { EventStreams } from '../services/event-stream.js';
import type { Store } from '../store/types.js';
import type { Wakeups } from './wakeups.js';

const TICK_MS = 100;
/** Without a live LISTEN connection (PostgreSQL): read every second. */
const UNHEARD_POLL_MS = 1_000;
/** In any case: read every 5 s (a NOTIFY that failed to send). */
const SAFETY_POLL_MS = 5_000;

export function startEventWakeups(
  streams: Pick<EventStreams, 'wake' | 'openCount'>,
  store: Pick<Store, 'announceEvents' | 'watchEvents' | 'externalChangeCounter'>,
  wakeups: Pick<Wakeups, 'onEventsCommitted'>,
): { stop(): Promise<void> } {
  const unsubscribe = wakeups.onEventsCommitted(() => {
    streams.wake();
    store.announceEvents?.();
  });
  const watch = store.watchEvents?.(() => streams.wake());
  let seen = store.externalChangeCounter?.();
  let lastWake = Date.now();
  const timer = setInterval(() => {
    if (streams.openCount() === 0) return;
    const now = Date.now();
    const counter = store.externalChangeCounter?.();
    const moved = counter !== seen;
    seen = counter;
    const poll = now - lastWake >= (watch && !watch.live() ? UNHEARD_POLL_MS : SAFETY_POLL_MS);
    if (moved || poll) {
      lastWake = now;
      streams.wake();
    }
  }, TICK_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      unsubscribe();
      await watch?.close();
    },
  };
}
