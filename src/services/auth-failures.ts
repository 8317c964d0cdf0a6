// Failed authentications, limited per client address: every request whose key this process has
// not seen succeed lately (a wrong, revoked, random or missing key, or a valid key's first use
// here) takes a token from its address's bucket before the key is looked up; an empty bucket
// answers 429 without a lookup. Keys that authenticated lately never touch the bucket, so
// others' failures never slow them, even from the same address (docs/operations.md). Buckets
// are the per-key limiter's (rate-limit.ts): in memory, or shared through Redis.
import type { RateLimitDecision, RateLimiter } from './rate-limit.js';

/** How long a key that authenticated stays exempt, and how many such keys a process remembers. */
const VALID_FOR_MS = 10 * 60_000;
const VALID_MAX = 10_000;

export interface AuthFailureGuard {
  /** The key authenticated lately in this process: it skips the address's bucket. */
  isKnownValid(token: string): boolean;
  /** One attempt with an unknown (or no) key from `address`: undefined or a decision (a promise with Redis). */
  attempt(address: string): RateLimitDecision | Promise<RateLimitDecision>;
  /** The key authenticated (true) or was refused (false). */
  settled(token: string, valid: boolean): void;
}

export function createAuthFailureGuard(limiter: RateLimiter, now: () => number = Date.now): AuthFailureGuard {
  const valid = new Map<string, number>();
  const bucket = (address: string) => `auth-failures:${address}`;
  return {
    isKnownValid(token) {
      const until = valid.get(token);
      if (until === undefined) return false;
      if (until > now()) return true;
      valid.delete(token);
      return false;
    },
    attempt: (address) => (limiter.takeNow ? limiter.takeNow(bucket(address)) : limiter.take(bucket(address))),
    settled(token, ok) {
      if (!ok) {
        valid.delete(token);
        return;
      }
      // Bounded: at the cap, the oldest entries go (a Map iterates in insertion order).
      if (valid.size >= VALID_MAX) for (const key of [...valid.keys()].slice(0, VALID_MAX / 10)) valid.delete(key);
      valid.delete(token);
      valid.set(token, now() + VALID_FOR_MS);
    },
  };
}
