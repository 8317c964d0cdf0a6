// Idempotency-Key handling shared by every create (createPet, placeOrder, sendMessage): claim the key,
// replay what a completed request created, refuse a different request (422) or one still
// running (409), and otherwise run the create, which completes the key in its own transaction.
import type { Clock } from '../clock.js';
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError } from '../errors.js';
import type { SqlDatabase } from '../store/core/sql.js';
import { StoreConflictError } from '../store/errors.js';
import type { IdempotencyRecord, IdempotencyRepository, IdempotencyResult } from '../store/idempotency.js';
import type { Sql } from '../store/core/sql.js';

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

/** What a request with an Idempotency-Key finds when it claims the key. */
export type IdempotencyClaim =
  /** The caller owns the key now and must create (or release the key on failure). */
  | { outcome: 'claimed' }
  /** A request with this key completed: replay what it created (the request hash tells which kind). */
  | { outcome: 'completed'; requestHash: string; resourceId: number }
  /** A request with this key is still running. */
  | { outcome: 'in_flight'; requestHash: string };

export interface IdempotencyDeps {
  db: Pick<SqlDatabase, 'transaction'>;
  idempotency: IdempotencyRepository;
  clock: Clock;
}

/** What to do with a key that has a row: the one decision tree, for every store. */
export function decideClaim(row: IdempotencyRecord, requestHash: string, now: number): 'restart' | 'completed' | 'take_over' | 'in_flight' {
  // Past its retention, a key is forgotten and may be reused for anything.
  if (row.createdAt <= now - IDEMPOTENCY_TTL_MS) return 'restart';
  if (row.resourceId !== null) return 'completed';
  // The owner stopped renewing its claim: presumed dead; the same request may take over.
  if (row.lockedAt <= now - IDEMPOTENCY_LEASE_MS && row.requestHash === requestHash) return 'take_over';
  return 'in_flight';
}

/** Claims the key in one transaction (concurrent claimers decide one after another), or says who holds it. */
export function claimKey(deps: IdempotencyDeps, accountId: string, key: string, requestHash: string, now: number): Promise<IdempotencyClaim> {
  const { db, idempotency } = deps;
  return db.transaction(async (tx): Promise<IdempotencyClaim> => {
    if (await idempotency.insertClaim(tx, accountId, key, requestHash, now)) return { outcome: 'claimed' };
    const row = await idempotency.lock(tx, accountId, key);
    // Released between our insert and our lock: someone is retrying it right now.
    if (!row) return { outcome: 'in_flight', requestHash };
    switch (decideClaim(row, requestHash, now)) {
      case 'restart':
        await idempotency.reclaim(tx, accountId, key, requestHash, now);
        return { outcome: 'claimed' };
      case 'take_over':
        await idempotency.takeOver(tx, accountId, key, now);
        return { outcome: 'claimed' };
      case 'completed':
        return { outcome: 'completed', requestHash: row.requestHash, resourceId: row.resourceId! };
      case 'in_flight':
        return { outcome: 'in_flight', requestHash: row.requestHash };
    }
  });
}

/**
 * Completes the claimed key with what its request created, in the create's transaction. When
 * another request completed it meanwhile, throws StoreConflictError: the transaction rolls
 * back (never a duplicate) and runIdempotent replays the other request's result.
 */
export async function completeKey(
  idempotency: Pick<IdempotencyRepository, 'complete'>,
  tx: Sql,
  accountId: string,
  key: string | undefined,
  result: IdempotencyResult,
): Promise<void> {
  // A create without a key has nothing to complete.
  if (key === undefined) return;
  if (!(await idempotency.complete(tx, accountId, key, result))) {
    throw new StoreConflictError(`idempotency key ${key} was completed by another request`);
  }
}

export interface IdempotentSteps<T> {
  /** What the completed request with this key created, by id. */
  replay(resourceId: number): Promise<T>;
  /**
   * Creates and completes the key in one transaction (completeKey); undefined, or a
   * StoreConflictError, when another request completed it first.
   */
  create(now: number): Promise<T | undefined>;
}

export async function runIdempotent<T>(
  deps: IdempotencyDeps,
  accountId: string,
  key: string,
  requestHash: string,
  steps: IdempotentSteps<T>,
): Promise<{ value: T; replayed: boolean }> {
  const { idempotency, clock } = deps;
  for (;;) {
    const now = clock.now();
    const claim = await claimKey(deps, accountId, key, requestHash, now);
    if (claim.outcome !== 'claimed' && claim.requestHash !== requestHash) throw new IdempotencyKeyReusedError();
    if (claim.outcome === 'in_flight') throw new IdempotencyKeyInUseError();
    if (claim.outcome === 'completed') return { value: await steps.replay(claim.resourceId), replayed: true };
    let created: T | undefined;
    const renewal = renewWhileRunning(deps, accountId, key);
    try {
      created = await steps.create(now);
    } catch (err) {
      renewal.stop();
      if (err instanceof StoreConflictError) continue;
      // Only successes are remembered: let the client retry with the same key. Unless the key
      // is no longer in flight: an owner we took it over from (or that took it from us) completed
      // it meanwhile, and our refusal (say, the pet its order just took) is not the answer: replay.
      if (!(await idempotency.release(accountId, key).catch(() => true))) continue;
      throw err;
    }
    renewal.stop();
    if (created !== undefined) return { value: created, replayed: false };
    // A takeover race: another request completed the key first. Loop to replay its result.
  }
}

/** Renews the claim every IDEMPOTENCY_RENEW_MS until stopped (one renewal at a time; failures are ignored). */
function renewWhileRunning(deps: IdempotencyDeps, accountId: string, key: string): { stop(): void } {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    deps.idempotency.renew(accountId, key, deps.clock.now()).then(
      () => (busy = false),
      () => (busy = false),
    );
  }, IDEMPOTENCY_RENEW_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
