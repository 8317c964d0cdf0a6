// Per-account counters on PostgreSQL (accounts.last_pet_id, last_order_id, last_message_seq,
// last_event_seq, last_endpoint_seq): the counter's row lock orders the account's writers, and
// a transaction that rolls back takes its ids back with it (nobody saw them).
import type { Sql } from '../core/sql.js';

export type IdCounter = 'last_pet_id' | 'last_order_id' | 'last_message_seq' | 'last_event_seq' | 'last_endpoint_seq';

/**
 * The first of `count` new ids from the account's counter, in `tx` (the account's row stays
 * locked until `tx` ends). An unknown account has no counter: its ids start at 1 and its rows
 * fail on the foreign key.
 */
export async function nextIds(tx: Sql, counter: IdCounter, accountId: string, count: number): Promise<number> {
  const row = await tx.get<{ last: number }>(`UPDATE accounts SET ${counter} = ${counter} + $1 WHERE id = $2 RETURNING ${counter} AS last`, [count, accountId]);
  return row ? row.last - count + 1 : 1;
}
