// The event log on SQLite. Events are written by the transactions that make the changes (the
// transactional outbox): writeEvents runs inside the caller's transaction and numbers the
// events from the account's counter; a rolled-back change takes its events with it. Webhook
// deliveries are made from the log afterwards, by the worker's fan-out (webhooks.ts).
import { EVENT_COLUMNS, type EventRow, eventId, eventIdSeq, LEGACY_EVENT_ID, type NewEvent, toEvent, typesOf } from '../rows.js';
import type { EventRepository, ListEventsStoreQuery } from '../types.js';
import type { SqliteContext } from './orders.js';

/** An event to write for an account, stamped with its change's time (its deliveries are due then). */
export interface EventWrite {
  accountId: string;
  event: NewEvent;
  createdAt: string;
}

/** Writes events in the caller's transaction: `write` for one change, `writeMany` for a group-commit chunk. */
export interface SqliteEventWriter {
  write(accountId: string, events: readonly NewEvent[], createdAt: string): void;
  /** Each run of one account's events takes its counter once. */
  writeMany(writes: readonly EventWrite[]): void;
}

export function createSqliteEventWriter({ stmt, nextIds }: Pick<SqliteContext, 'stmt' | 'nextIds'>, enabled: boolean): SqliteEventWriter {
  const insertSqls: string[] = [];
  const insertSql = (rows: number) =>
    (insertSqls[rows] ??= `INSERT INTO events (account_id, seq, id, type, created_at, data) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`);
  const writeMany = (writes: readonly EventWrite[]): void => {
    if (!enabled || writes.length === 0) return;
    // Most chunks hold one account's events: one counter update for the run of them.
    let start = 0;
    while (start < writes.length) {
      const accountId = writes[start]!.accountId;
      let end = start + 1;
      while (end < writes.length && writes[end]!.accountId === accountId) end++;
      let seq = nextIds('last_event_seq', accountId, end - start);
      // One multi-row INSERT for the run (a statement per row cost ~1.5 µs more per event).
      const values: unknown[] = [];
      for (let i = start; i < end; i++, seq++) {
        const { event, createdAt } = writes[i]!;
        values.push(accountId, seq, eventId(seq), event.type, createdAt, event.data);
      }
      stmt<unknown[], unknown>(insertSql(end - start)).run(values);
      start = end;
    }
  };
  return {
    write: (accountId, events, createdAt) => writeMany(events.map((event) => ({ accountId, event, createdAt }))),
    writeMany,
  };
}

export function createSqliteEvents({ db, stmt }: SqliteContext): EventRepository {
  // Per account, its events before the first one young enough to keep go, by key ranges:
  // deliveries through their endpoints' keys, events through theirs (jobs are few: pending
  // only). The walk to that first young event reads only what is about to go.
  const prune = db.transaction((before: string): number => {
    const accounts = stmt<[], { id: string }>('SELECT id FROM accounts WHERE last_event_seq > 0').all();
    let pruned = 0;
    for (const { id: accountId } of accounts) {
      const oldest = stmt<[string], { seq: number; created_at: string }>('SELECT seq, created_at FROM events WHERE account_id = ? ORDER BY seq LIMIT 1').get(accountId);
      if (!oldest || oldest.created_at >= before) continue;
      const young = stmt<[string, string], { seq: number }>('SELECT seq FROM events WHERE account_id = ? AND created_at >= ? ORDER BY seq LIMIT 1').get(accountId, before);
      const upto = young ? young.seq - 1 : Number.MAX_SAFE_INTEGER;
      stmt<[string, number], unknown>(
        'DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE account_id = ?) AND event_seq <= ?',
      ).run(accountId, upto);
      stmt<[string, number], unknown>("DELETE FROM jobs WHERE kind = 'webhook.deliver' AND account_id = ? AND ref <= ?").run(accountId, upto);
      pruned += stmt<[string, number], unknown>('DELETE FROM events WHERE account_id = ? AND seq <= ?').run(accountId, upto).changes;
    }
    return pruned;
  });

  return {
    async listEvents({ accountId, limit, typeMask, afterSeq = 0 }: ListEventsStoreQuery) {
      // The mask is applied in SQL on the kind's position, so a filtered page reads only matches.
      const rows =
        typeMask === undefined
          ? stmt<[string, number, number], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`).all(
              accountId, afterSeq, limit,
            )
          : stmt<[string, number, string, number], EventRow>(
              `SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = ? AND seq > ? AND type IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT ?`,
            ).all(accountId, afterSeq, JSON.stringify(typesOf(typeMask)), limit);
      return rows.map(toEvent);
    },

    async getEvent(accountId, id) {
      const seq = eventIdSeq(id);
      const row =
        seq === undefined
          ? stmt<[string, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = ? AND account_id = ? AND ${LEGACY_EVENT_ID}`).get(id, accountId)
          : stmt<[string, number, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = ? AND seq = ? AND id = ?`).get(accountId, seq, id);
      return row && toEvent(row);
    },

    async pruneEvents(before) {
      return prune.immediate(before);
    },
  };
}
