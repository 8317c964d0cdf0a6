// Idempotency keys as stored: one row per (account, key). The decisions (claim, replay,
// refuse, take over) are made once, in src/services/idempotency.ts; a repository only reads
// and writes rows, inside the transaction the service opens.
import type { Sql } from './core/sql.js';

/** A key's row as the claim decision reads it (times in epoch ms). */
export interface IdempotencyRecord {
  requestHash: string;
  /** What the completed request created (a pet id, an order id or a message seq); null while in flight. */
  resourceId: number | null;
  createdAt: number;
  lockedAt: number;
}

/** What a completed request created; the request hash tells which kind of create it was. */
export type IdempotencyResult = { petId: number } | { orderId: number } | { messageSeq: number };

/** SQL (both backends): the key is still in flight (completed with nothing yet). */
export const KEY_IN_FLIGHT = 'pet_id IS NULL AND order_id IS NULL AND message_seq IS NULL';
/** SQL (both backends): what a completed key created. */
export const KEY_RESULT = 'COALESCE(pet_id, order_id, message_seq)';
/** The column a result is kept in. */
export const resultColumn = (result: IdempotencyResult): string =>
  'petId' in result ? 'pet_id' : 'orderId' in result ? 'order_id' : 'message_seq';
export const resultValue = (result: IdempotencyResult): number =>
  'petId' in result ? result.petId : 'orderId' in result ? result.orderId : result.messageSeq;

export interface IdempotencyRepository {
  /** Inserts an in-flight claim unless the key has a row; true when inserted. */
  insertClaim(tx: Sql, accountId: string, key: string, requestHash: string, now: number): Promise<boolean>;
  /** The key's row, locked until `tx` ends (concurrent claimers decide one after another). */
  lock(tx: Sql, accountId: string, key: string): Promise<IdempotencyRecord | undefined>;
  /** The key starts over as a new in-flight claim (its old result forgotten). */
  reclaim(tx: Sql, accountId: string, key: string, requestHash: string, now: number): Promise<void>;
  /** An in-flight claim changes hands: its lease starts again at `now`. */
  takeOver(tx: Sql, accountId: string, key: string, now: number): Promise<void>;
  /** Completes an in-flight key with what its request created; false when it was not in flight. */
  complete(tx: Sql, accountId: string, key: string, result: IdempotencyResult): Promise<boolean>;
  /** Marks an in-flight claim alive at `now` (never moves it back). */
  renew(accountId: string, key: string, now: number): Promise<void>;
  /** Forgets an in-flight claim (its request failed: the client may retry). */
  release(accountId: string, key: string): Promise<void>;
  /** Deletes keys created before `before` (epoch ms); how many. */
  purge(before: number): Promise<number>;
}
