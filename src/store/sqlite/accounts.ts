// Per-account counters on SQLite (ids of pets, orders, messages, events, endpoints).
import type { Sql } from '../core/sql.js';

export type IdCounter = 'last_pet_id' | 'last_order_id' | 'last_message_seq' | 'last_event_seq' | 'last_endpoint_seq';

/**
 * The first of `count` new ids from the account's counter, taken in `tx` (under the write
 * lock, so ids are never handed out twice). An unknown account has no counter: ids from 1,
 * and the insert that uses them fails on the foreign key.
 */
export async function nextIds(tx: Sql, counter: IdCounter, accountId: string, count: number): Promise<number> {
  const row = await tx.get<{ last: number }>(`UPDATE accounts SET ${counter} = ${counter} + ? WHERE id = ? RETURNING ${counter} AS last`, [count, accountId]);
  return row ? row.last - count + 1 : 1;
}
