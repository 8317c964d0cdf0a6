// The event log on SQLite. Events are written by the transactions that make the changes (the
// transactional outbox): writeEvents runs inside the caller's transaction, numbers the events
// from the account's counter and, for each enabled endpoint that wants the kind, adds a
// pending delivery and its job. A rolled-back change takes its events and deliveries with it.
import { EVENT_COLUMNS, type EventRow, eventBit, type NewEvent, randomId, toEvent, typesOf } from '../rows.js';
import type { EventRepository, ListEventsStoreQuery } from '../types.js';
import type { SqliteContext } from './orders.js';

/** Writes `events` for the account in the caller's transaction; their deliveries are due at `createdAt`. */
export type SqliteEventWriter = (accountId: string, events: readonly NewEvent[], createdAt: string) => void;

export function createSqliteEventWriter({ stmt, nextIds }: Pick<SqliteContext, 'stmt' | 'nextIds'>, enabled: boolean): SqliteEventWriter {
  if (!enabled) return () => {};
  return (accountId, events, createdAt) => {
    if (events.length === 0) return;
    const now = Date.parse(createdAt);
    let seq = nextIds('last_event_seq', accountId, events.length);
    const endpoints = stmt<[string], { id: string; event_mask: number }>(
      'SELECT id, event_mask FROM webhook_endpoints WHERE account_id = ? AND disabled = 0',
    ).all(accountId);
    for (const event of events) {
      stmt<unknown[], unknown>('INSERT INTO events (account_id, seq, id, type, created_at, data) VALUES (?, ?, ?, ?, ?, ?)').run(
        accountId, seq, randomId('evt_'), event.type, createdAt, event.data,
      );
      const bit = eventBit(event.type);
      for (const endpoint of endpoints) {
        if ((endpoint.event_mask & bit) === 0) continue;
        stmt<unknown[], unknown>(
          "INSERT INTO webhook_deliveries (account_id, endpoint_id, event_seq, id, status, next_attempt_at, created_at) VALUES (?, ?, ?, ?, 'pending', ?, ?)",
        ).run(accountId, endpoint.id, seq, randomId('whd_'), now, createdAt);
        stmt<unknown[], unknown>("INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at) VALUES ('webhook.deliver', ?, ?, ?, ?, ?)").run(
          accountId, seq, endpoint.id, now, now,
        );
      }
      seq++;
    }
  };
}

export function createSqliteEvents({ db, stmt }: SqliteContext): EventRepository {
  const prune = db.transaction((before: string): number => {
    // Jobs of pruned deliveries go first (jobs have no foreign key); deliveries cascade.
    stmt<[string], unknown>(
      `DELETE FROM jobs WHERE kind = 'webhook.deliver' AND EXISTS (
         SELECT 1 FROM events e WHERE e.account_id = jobs.account_id AND e.seq = jobs.ref AND e.created_at < ?)`,
    ).run(before);
    return stmt<[string], unknown>('DELETE FROM events WHERE created_at < ?').run(before).changes;
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
      const row = stmt<[string, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = ? AND account_id = ?`).get(id, accountId);
      return row && toEvent(row);
    },

    async pruneEvents(before) {
      return prune.immediate(before);
    },
  };
}
