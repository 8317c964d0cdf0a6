// A message delivery that fails on cue, for the suites that need a message retried, failed or
// kept queued: it counts the attempts per text and comes with a clock the test moves (the worker
// takes a retry only once the clock reaches it: 1 s, 2 s, 4 s, 8 s after the failed attempt).
import type { Clock } from '../../src/clock.js';
import type { Deliver } from '../../src/services/message-worker.js';

export interface ScriptedDelivery {
  /** Pass both to startApp / sharedApp. */
  deliver: Deliver;
  clock: Clock;
  /** Delivery attempts so far, by message text. */
  attempts: Map<string, number>;
  /** Moves the server's clock on. */
  advance(ms: number): void;
}

/** `fails(text, attempt)` says whether attempt n (from 1) of the message with this text throws "recipient unreachable (attempt n)". */
export function scriptedDelivery(fails: (text: string, attempt: number) => boolean): ScriptedDelivery {
  let now = Date.UTC(2026, 10, 23, 12);
  const attempts = new Map<string, number>();
  return {
    attempts,
    clock: { now: () => now },
    advance: (ms) => {
      now += ms;
    },
    deliver: async (message) => {
      const n = (attempts.get(message.message) ?? 0) + 1;
      attempts.set(message.message, n);
      if (fails(message.message, n)) throw new Error(`recipient unreachable (attempt ${n})`);
    },
  };
}
