// The event log on SQLite. Events are written by the transactions that make the changes (the
// transactional outbox): writeEvents runs inside the caller's transaction and numbers the
// events from the account's counter; a rolled-back change takes its events with it. Webhook
// deliveries are made from the log afterwards, by the worker's fan-out (webhooks.ts).
import { EVENT_COLUMNS, eventId, eventIdSeq, eventIn, eventPage, type EventRow, LEGACY_EVENT_ID, MAX_RUN, randomHex20s, runOf, typesOf } from '../rows.js';
import type { EventRepository, ListEventsStoreQuery } from '../types.js';
import type { EventWrite, SqliteContext, SqliteEventWriter } from './context.js';

export function createSqliteEventWriter({ stmt, nextIds }: Pick<SqliteContext, 'stmt' | 'nextIds'>, enabled: boolean): SqliteEventWriter {
  const insertSqls: string[] = [];
  const insertSql = (rows: number) =>
    (insertSqls[rows] ??= `INSERT INTO events (account_id, seq, span, id, more_ids, type, created_at, data) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`);
  const writeMany = (writes: readonly EventWrite[]): void => {
    if (!enabled || writes.length === 0) return;
    // Most chunks hold one account's events: one counter update for the run of them.
    let start = 0;
    while (start < writes.length) {
      const accountId = writes[start]!.accountId;
      let end = start + 1;
      while (end < writes.length && writes[end]!.accountId === accountId) end++;
      let seq = nextIds('last_event_seq', accountId, end - start);
      // A run of one kind is one row (EventRow: a row per event cost ~3 µs more per event); the
      // account's rows go in by one multi-row INSERT.
      const values: unknown[] = [];
      let rows = 0;
      for (let i = start; i < end; ) {
        const { event, createdAt } = writes[i]!;
        let j = i + 1;
        while (j < end && j - i < MAX_RUN && writes[j]!.event.type === event.type) j++;
        if (j - i === 1) {
          values.push(accountId, seq, 1, eventId(seq), null, event.type, createdAt, event.data);
        } else {
          let data = '[' + event.data;
          for (let k = i + 1; k < j; k++) data += ',' + writes[k]!.event.data;
          values.push(accountId, seq, j - i, eventId(seq), randomHex20s(j - i - 1), event.type, createdAt, data + ']');
        }
        rows++;
        seq += j - i;
        i = j;
      }
      stmt<unknown[], unknown>(insertSql(rows)).run(values);
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
      pruned += stmt<[string, number], { n: number | null }>('SELECT sum(span) AS n FROM events WHERE account_id = ? AND seq <= ?').get(accountId, upto)!.n ?? 0;
      stmt<[string, number], unknown>('DELETE FROM events WHERE account_id = ? AND seq <= ?').run(accountId, upto);
    }
    return pruned;
  });

  return {
    async listEvents({ accountId, limit, typeMask, afterSeq = 0 }: ListEventsStoreQuery) {
      // From the row holding the first event after afterSeq (rows hold runs: EventRow); each
      // row holds at least one event to show, so `limit` rows fill the page. The mask is
      // applied in SQL on the kind's position, so a filtered page reads only matches.
      const from = `account_id = @account AND seq >= COALESCE(${runOf('@account', '@after + 1')}, 0)`;
      const rows =
        typeMask === undefined
          ? stmt<[{ account: string; after: number; limit: number }], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE ${from} ORDER BY seq LIMIT @limit`).all({
              account: accountId, after: afterSeq, limit,
            })
          : stmt<[{ account: string; after: number; limit: number; types: string }], EventRow>(
              `SELECT ${EVENT_COLUMNS} FROM events WHERE ${from} AND type IN (SELECT value FROM json_each(@types)) ORDER BY seq LIMIT @limit`,
            ).all({ account: accountId, after: afterSeq, limit, types: JSON.stringify(typesOf(typeMask)) });
      return eventPage(rows, afterSeq, limit);
    },

    async getEvent(accountId, id) {
      const seq = eventIdSeq(id);
      if (seq === undefined) {
        const row = stmt<[string, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = ? AND account_id = ? AND ${LEGACY_EVENT_ID}`).get(id, accountId);
        return row && eventIn(row, row.seq);
      }
      const row = stmt<[{ account: string; seq: number }], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = @account AND seq = ${runOf('@account', '@seq')}`).get({
        account: accountId, seq,
      });
      const event = row && eventIn(row, seq);
      return event?.id === id ? event : undefined;
    },

    async pruneEvents(before) {
      return prune.immediate(before);
    },
  };
}
