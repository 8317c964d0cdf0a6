// Idempotency-Key handling shared by every create (createPet, placeOrder): claim the key,
// replay what a completed request created, refuse a different request (422) or one still
// running (409), and otherwise run the create, which completes the key in its own transaction.
import type { Clock } from '../clock.js';
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError } from '../errors.js';
import type { Store } from '../store/types.js';

/** Idempotency keys are kept this long (and at least this long), then may be reused. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** An unfinished request holding a key this long is presumed crashed; a retry may take over. */
export const IDEMPOTENCY_LEASE_MS = 60 * 1000;

export interface IdempotentSteps<T> {
  /** What the completed request with this key created, by id. */
  replay(resourceId: number): Promise<T>;
  /** Creates and completes the key in one transaction; undefined when another request completed it first. */
  create(now: number): Promise<T | undefined>;
}

export async function runIdempotent<T>(
  deps: { store: Store; clock: Clock },
  accountId: string,
  key: string,
  requestHash: string,
  steps: IdempotentSteps<T>,
): Promise<{ value: T; replayed: boolean }> {
  const { store, clock } = deps;
  for (;;) {
    const now = clock.now();
    const claim = await store.claimIdempotencyKey({
      accountId, key, requestHash, now, ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS,
    });
    if (claim.outcome !== 'claimed' && claim.requestHash !== requestHash) throw new IdempotencyKeyReusedError();
    if (claim.outcome === 'in_flight') throw new IdempotencyKeyInUseError();
    if (claim.outcome === 'completed') return { value: await steps.replay(claim.resourceId), replayed: true };
    let created: T | undefined;
    try {
      created = await steps.create(now);
    } catch (err) {
      // Only successes are remembered: let the client retry with the same key.
      await store.releaseIdempotencyKey(accountId, key).catch(() => undefined);
      throw err;
    }
    if (created !== undefined) return { value: created, replayed: false };
    // A takeover race: another request completed the key first. Loop to replay its result.
  }
}
