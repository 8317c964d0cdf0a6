// Idempotency-Key handling shared by every create (createPet, placeOrder, sendMessage): claim the key,
// replay what a completed request created, refuse a different request (422) or one still
// running (409), and otherwise run the create, which completes the key in its own transaction.
import type { Clock } from '../clock.js';
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError } from '../errors.js';
import type { Sql } from '../store/core/sql.js';
import { StoreConflictError } from '../store/errors.js';
import type { IdempotencyRepository, IdempotencyResult } from '../store/idempotency.js';
import type { Store } from '../store/types.js';

/** What runIdempotent needs of the store: the key's claim and its upkeep. */
export type IdempotencyKeys = Pick<Store, 'claimIdempotencyKey' | 'renewIdempotencyKey' | 'releaseIdempotencyKey'>;

/** Idempotency keys are kept this long (and at least this long), then may be reused. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * An unfinished request whose claim has not been renewed for this long is presumed dead (its
 * process crashed or was killed); a retry with the same request may take the key over. The
 * owner renews its claim every IDEMPOTENCY_RENEW_MS while its create runs, so a live request
 * keeps the key however long it takes, and a dead one lets go of it within this lease. A
 * takeover from an owner that was alive after all (stalled past the lease) cannot create twice:
 * each create completes the key only if it is still unfinished, in its own transaction, and
 * the one that finds it completed rolls back and replays.
 */
export const IDEMPOTENCY_LEASE_MS = 2000;
/** How often a running create renews its claim (well inside the lease). */
export const IDEMPOTENCY_RENEW_MS = 500;

export interface IdempotentSteps<T> {
  /** What the completed request with this key created, by id. */
  replay(resourceId: number): Promise<T>;
  /**
   * Creates and completes the key in one transaction (completeKey). Another request completed
   * it first: StoreConflictError (or undefined), and the create wrote nothing.
   */
  create(now: number): Promise<T | undefined>;
}

export async function runIdempotent<T>(
  deps: { store: IdempotencyKeys; clock: Clock },
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
    const renewal = renewWhileRunning(deps, accountId, key);
    try {
      created = await steps.create(now);
    } catch (err) {
      renewal.stop();
      // A takeover race, lost: loop to replay what the other request created.
      if (err instanceof StoreConflictError) continue;
      // Only successes are remembered: let the client retry with the same key.
      await store.releaseIdempotencyKey(accountId, key).catch(() => undefined);
      throw err;
    }
    renewal.stop();
    if (created !== undefined) return { value: created, replayed: false };
    // A takeover race: another request completed the key first. Loop to replay its result.
  }
}

/** Renews the claim every IDEMPOTENCY_RENEW_MS until stopped (one renewal at a time; failures are ignored). */
function renewWhileRunning(deps: { store: IdempotencyKeys; clock: Clock }, accountId: string, key: string): { stop(): void } {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    deps.store.renewIdempotencyKey(accountId, key, deps.clock.now()).then(
      () => (busy = false),
      () => (busy = false),
    );
  }, IDEMPOTENCY_RENEW_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * Completes the claimed key (if any) in the create's transaction with what it created. When
 * another request completed the key meanwhile, throws StoreConflictError: the transaction
 * rolls back, and runIdempotent replays the other request's result.
 */
export async function completeKey(
  idempotency: Pick<IdempotencyRepository, 'complete'>,
  tx: Sql,
  accountId: string,
  key: string | undefined,
  result: IdempotencyResult,
): Promise<void> {
  if (key !== undefined && !(await idempotency.complete(tx, accountId, key, result))) {
    throw new StoreConflictError('the idempotency key was completed by another request');
  }
}
