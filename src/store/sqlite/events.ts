// The event log on SQLite. Events are written by the transactions that make the changes (the
// transactional outbox): writeEvents runs inside the caller's transaction, numbers the events
// from the account's counter and, for each enabled endpoint that wants the kind, adds a
// pending delivery and its job. A rolled-back change takes its events and deliveries with it.
import { EVENT_COLUMNS, type EventRow, eventBit, type NewEvent, randomId, toEvent, typesOf } from '../rows.js';
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
  /** Each account's counter is taken and its endpoints read once for all of its events here. */
  writeMany(writes: readonly EventWrite[]): void;
}

export function createSqliteEventWriter({ stmt, nextIds }: Pick<SqliteContext, 'stmt' | 'nextIds'>, enabled: boolean): SqliteEventWriter {
  const writeMany = (writes: readonly EventWrite[]): void => {
    if (!enabled || writes.length === 0) return;
    const byAccount = new Map<string, EventWrite[]>();
    for (const w of writes) {
      const list = byAccount.get(w.accountId);
      if (list) list.push(w);
      else byAccount.set(w.accountId, [w]);
    }
    for (const [accountId, list] of byAccount) {
      let seq = nextIds('last_event_seq', accountId, list.length);
      const endpoints = stmt<[string], { id: string; event_mask: number }>(
        'SELECT id, event_mask FROM webhook_endpoints WHERE account_id = ? AND disabled = 0',
      ).all(accountId);
      for (const { event, createdAt } of list) {
        stmt<unknown[], unknown>('INSERT INTO events (account_id, seq, id, type, created_at, data) VALUES (?, ?, ?, ?, ?, ?)').run(
          accountId, seq, randomId('evt_'), event.type, createdAt, event.data,
        );
        const bit = eventBit(event.type);
        const now = Date.parse(createdAt);
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
    }
  };
  return {
    write: (accountId, events, createdAt) => writeMany(events.map((event) => ({ accountId, event, createdAt }))),
    writeMany,
  };
}

export function createSqliteEvents({ db, stmt }: SqliteContext): EventRepository {
  // Per account, everything up to its last event older than the cutoff goes, by key ranges:
  // deliveries through their endpoints' keys, events through theirs (jobs are few: pending only).
  const prune = db.transaction((before: string): number => {
    const old = stmt<[string], { account_id: string; upto: number }>(
      'SELECT account_id, max(seq) AS upto FROM events WHERE created_at < ? GROUP BY account_id',
    ).all(before);
    let pruned = 0;
    for (const { account_id: accountId, upto } of old) {
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
      const row = stmt<[string, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = ? AND account_id = ?`).get(id, accountId);
      return row && toEvent(row);
    },

    async pruneEvents(before) {
      return prune.immediate(before);
    },
  };
}
