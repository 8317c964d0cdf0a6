// Per-account counters on SQLite (accounts.last_pet_id, last_order_id, last_message_seq,
// last_event_seq, last_endpoint_seq): ids are numbered per account, taken inside the caller's
// transaction (under the write lock), so an id is never handed out twice.
import type { Sql } from '../core/sql.js';

export type IdCounter = 'last_pet_id' | 'last_order_id' | 'last_message_seq' | 'last_event_seq' | 'last_endpoint_seq';

/**
 * The first of `count` new ids from the account's counter, in `tx`. The counter never goes
 * back, so an id whose row then fails leaves a gap. An unknown account has no counter: its ids
 * start at 1 and its rows fail on the foreign key.
 */
export async function nextIds(tx: Sql, counter: IdCounter, accountId: string, count: number): Promise<number> {
  const row = await tx.get<{ last: number }>(`UPDATE accounts SET ${counter} = ${counter} + ? WHERE id = ? RETURNING ${counter} AS last`, [count, accountId]);
  return row ? row.last - count + 1 : 1;
}
