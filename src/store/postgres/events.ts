// The event log on PostgreSQL. Events are written by the transactions that make the changes
// (the transactional outbox), in one statement: the account's counter (its row lock orders
// the account's events by commit) and the events. A rolled-back change takes them with it.
// Webhook deliveries are made from the log afterwards, by the worker's fan-out (webhooks.ts).
import { EVENT_COLUMNS, eventIn, eventPage, type EventRow, eventIdSeq, LEGACY_EVENT_ID, randomHex20, runOf, typesOf } from '../rows.js';
import type { EventRepository, ListEventsStoreQuery } from '../types.js';
import type { PostgresContext, PostgresEventWriter } from './context.js';

/**
 * SQL for the id of the event with sequence `seq`, as eventId() (rows.ts) makes it, its random
 * digits (`random`) drawn by randomHex20() in the service: gen_random_uuid() and the string
 * work to trim it cost PostgreSQL ~3 µs per event, inside the batch that holds the account's lock.
 */
export const eventIdSql = (seq: string, random: string) => `'evt_' || lpad(to_hex(${seq}), 12, '0') || ${random}`;

const writeSql = `
  WITH next AS (UPDATE accounts SET last_event_seq = last_event_seq + $2 WHERE id = $1 RETURNING last_event_seq - $2 AS base)
  INSERT INTO events (account_id, seq, id, type, created_at, data)
  SELECT $1, next.base + t.ord, ${eventIdSql('next.base + t.ord', 't.random')}, t.type, $3, t.data
  FROM next, unnest($4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS t(type, data, random, ord)`;

export function createPostgresEventWriter(enabled: boolean): PostgresEventWriter {
  if (!enabled) return async () => {};
  return async (client, accountId, events, createdAt) => {
    if (events.length === 0) return;
    const { rowCount } = await client.query(writeSql, [accountId, events.length, createdAt, events.map((e) => e.type), events.map((e) => e.data), events.map(randomHex20)]);
    if (rowCount !== events.length) throw new Error(`no account ${accountId}: events not written`);
  };
}

export function createPostgresEvents({ query }: PostgresContext): EventRepository {
  return {
    async listEvents({ accountId, limit, typeMask, afterSeq = 0 }: ListEventsStoreQuery) {
      // From the row holding the first event after afterSeq (rows hold runs: EventRow); each
      // row holds at least one event to show, so `limit` rows fill the page.
      const after = Math.floor(afterSeq);
      const from = `seq >= COALESCE(${runOf('$1', '$2::bigint + 1')}, 0)`;
      const rows =
        typeMask === undefined
          ? await query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = $1 AND ${from} ORDER BY seq LIMIT $3`, [accountId, after, limit])
          : await query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = $1 AND ${from} AND type = ANY($3::text[]) ORDER BY seq LIMIT $4`, [
              accountId, after, typesOf(typeMask), limit,
            ]);
      return eventPage(rows, after, limit);
    },

    async getEvent(accountId, id) {
      const seq = eventIdSeq(id);
      if (seq === undefined) {
        const [row] = await query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = $1 AND account_id = $2 AND ${LEGACY_EVENT_ID}`, [id, accountId]);
        return row && eventIn(row, row.seq);
      }
      const [row] = await query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = $1 AND seq = ${runOf('$1', '$2::bigint')}`, [accountId, seq]);
      const event = row && eventIn(row, seq);
      return event?.id === id ? event : undefined;
    },

    async pruneEvents(before) {
      // Deliveries go through their endpoints' keys, events through theirs (jobs are few: pending only).
      const [row] = await query<{ n: number }>(
        // Per account, its events before the first one young enough to keep (found by walking the key from the oldest).
        `WITH old AS (
           SELECT a.id AS account_id,
                  COALESCE((SELECT e.seq FROM events e WHERE e.account_id = a.id AND e.created_at >= $1 ORDER BY e.seq LIMIT 1) - 1, a.last_event_seq) AS upto
           FROM accounts a
           WHERE a.last_event_seq > 0 AND (SELECT e.created_at FROM events e WHERE e.account_id = a.id ORDER BY e.seq LIMIT 1) < $1
         ),
              deliveries_gone AS (
                DELETE FROM webhook_deliveries d USING old, webhook_endpoints w
                WHERE w.account_id = old.account_id AND d.endpoint_id = w.id AND d.event_seq <= old.upto
              ),
              jobs_gone AS (DELETE FROM jobs j USING old WHERE j.kind = 'webhook.deliver' AND j.account_id = old.account_id AND j.ref <= old.upto),
              gone AS (DELETE FROM events e USING old WHERE e.account_id = old.account_id AND e.seq <= old.upto RETURNING e.span)
         SELECT COALESCE(sum(span), 0)::int AS n FROM gone`,
        [before],
      );
      return row!.n;
    },
  };
}
