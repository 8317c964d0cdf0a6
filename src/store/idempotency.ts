// Idempotency keys as stored: one row per (account, key). The decisions (claim, replay,
// refuse, take over) are made once, in src/services/idempotency.ts; a repository only reads
// and writes rows, inside the transaction the service opens.
import type { Sql } from './core/sql.js';
import type { Dialect } from './core/dialect.js';

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
  /** Forgets an in-flight claim (its request failed: the client may retry); false when it was not in flight. */
  release(accountId: string, key: string): Promise<boolean>;
  /** Deletes keys created before `before` (epoch ms); how many. */
  purge(before: number): Promise<number>;
}

interface KeyRow {
  request_hash: string;
  resource_id: number | null;
  created_at: number;
  locked_at: number;
}

export function createIdempotencyRepository(db: Sql, dialect: Dialect): IdempotencyRepository {
  return {
    async insertClaim(tx, accountId, key, requestHash, now) {
      const into = 'idempotency_keys (account_id, key, request_hash, created_at, locked_at) VALUES (?, ?, ?, ?, ?)';
      return (await tx.run(dialect.insertIgnore(into, 'account_id, key'), [accountId, key, requestHash, now, now])) === 1;
    },
    async lock(tx, accountId, key) {
      const row = await tx.get<KeyRow>(
        `SELECT request_hash, ${KEY_RESULT} AS resource_id, created_at, locked_at FROM idempotency_keys WHERE account_id = ? AND key = ?${dialect.forUpdate}`,
        [accountId, key],
      );
      return row && { requestHash: row.request_hash, resourceId: row.resource_id, createdAt: row.created_at, lockedAt: row.locked_at };
    },
    async reclaim(tx, accountId, key, requestHash, now) {
      await tx.run(
        'UPDATE idempotency_keys SET request_hash = ?, pet_id = NULL, order_id = NULL, message_seq = NULL, created_at = ?, locked_at = ? WHERE account_id = ? AND key = ?',
        [requestHash, now, now, accountId, key],
      );
    },
    async takeOver(tx, accountId, key, now) {
      await tx.run('UPDATE idempotency_keys SET locked_at = ? WHERE account_id = ? AND key = ?', [now, accountId, key]);
    },
    async complete(tx, accountId, key, result) {
      const sql = `UPDATE idempotency_keys SET ${resultColumn(result)} = ? WHERE account_id = ? AND key = ? AND ${KEY_IN_FLIGHT}`;
      return (await tx.run(sql, [resultValue(result), accountId, key])) === 1;
    },
    async renew(accountId, key, now) {
      await db.run(`UPDATE idempotency_keys SET locked_at = ? WHERE account_id = ? AND key = ? AND locked_at < ? AND ${KEY_IN_FLIGHT}`, [now, accountId, key, now]);
    },
    async release(accountId, key) {
      return (await db.run(`DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND ${KEY_IN_FLIGHT}`, [accountId, key])) > 0;
    },
    async purge(before) {
      return db.run('DELETE FROM idempotency_keys WHERE created_at < ?', [before]);
    },
  };
}
