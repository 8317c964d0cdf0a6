// The event log on PostgreSQL. Events are written by the transactions that make the changes
// (the transactional outbox), in one statement: the account's counter (its row lock orders
// the account's events by commit), the events, and a pending delivery and its job for each
// enabled endpoint that wants the kind. A rolled-back change takes all of it with it.
import type { PoolClient } from 'pg';
import { EVENT_TYPES } from '../../schemas/events.js';
import { EVENT_COLUMNS, type EventRow, type NewEvent, toEvent, typesOf } from '../rows.js';
import type { EventRepository, ListEventsStoreQuery } from '../types.js';
import type { PostgresContext } from './orders.js';

/** SQL for a new random id: `prefix` and 32 hex characters, as randomId() makes them. */
export const randomIdSql = (prefix: string) => `'${prefix}' || replace(gen_random_uuid()::text, '-', '')`;

/**
 * CTEs that fan events out to webhook endpoints: `from` is a CTE of inserted events with
 * columns account_id, seq, type, created_at. Adds `dl` (deliveries) and `jb` (their jobs).
 */
export const fanOutSql = (from: string, typesParam: string) => `
  dl AS (
    INSERT INTO webhook_deliveries (account_id, endpoint_id, event_seq, id, status, next_attempt_at, created_at)
    SELECT ev.account_id, w.id, ev.seq, ${randomIdSql('whd_')}, 'pending', (extract(epoch FROM ev.created_at) * 1000)::bigint, ev.created_at
    FROM ${from} ev JOIN webhook_endpoints w ON w.account_id = ev.account_id AND NOT w.disabled
    WHERE (w.event_mask & (1 << (array_position(${typesParam}::text[], ev.type) - 1))) <> 0
    RETURNING account_id, endpoint_id, event_seq, next_attempt_at
  ),
  jb AS (
    INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at)
    SELECT 'webhook.deliver', account_id, event_seq, endpoint_id, next_attempt_at, next_attempt_at FROM dl
  )`;

const writeSql = `
  WITH next AS (UPDATE accounts SET last_event_seq = last_event_seq + $2 WHERE id = $1 RETURNING last_event_seq - $2 AS base),
  ev AS (
    INSERT INTO events (account_id, seq, id, type, created_at, data)
    SELECT $1, next.base + t.ord, ${randomIdSql('evt_')}, t.type, $3, t.data
    FROM next, unnest($4::text[], $5::text[]) WITH ORDINALITY AS t(type, data, ord)
    RETURNING account_id, seq, type, created_at
  ),
  ${fanOutSql('ev', '$6')}
  SELECT count(*)::int AS n FROM ev`;

export type PostgresEventWriter = (client: Pick<PoolClient, 'query'>, accountId: string, events: readonly NewEvent[], createdAt: string) => Promise<void>;

export function createPostgresEventWriter(enabled: boolean): PostgresEventWriter {
  if (!enabled) return async () => {};
  return async (client, accountId, events, createdAt) => {
    if (events.length === 0) return;
    const { rows } = await client.query<{ n: number }>(writeSql, [
      accountId,
      events.length,
      createdAt,
      events.map((e) => e.type),
      events.map((e) => e.data),
      EVENT_TYPES,
    ]);
    if (rows[0]?.n !== events.length) throw new Error(`no account ${accountId}: events not written`);
  };
}

export function createPostgresEvents({ query }: PostgresContext): EventRepository {
  return {
    async listEvents({ accountId, limit, typeMask, afterSeq = 0 }: ListEventsStoreQuery) {
      const rows =
        typeMask === undefined
          ? await query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
              accountId, Math.floor(afterSeq), limit,
            ])
          : await query<EventRow>(
              `SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = $1 AND seq > $2 AND type = ANY($3::text[]) ORDER BY seq LIMIT $4`,
              [accountId, Math.floor(afterSeq), typesOf(typeMask), limit],
            );
      return rows.map(toEvent);
    },

    async getEvent(accountId, id) {
      const [row] = await query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = $1 AND account_id = $2`, [id, accountId]);
      return row && toEvent(row);
    },

    async pruneEvents(before) {
      // Per account, everything up to its last event older than the cutoff goes, by key ranges:
      // deliveries through their endpoints' keys, events through theirs (jobs are few: pending only).
      const [row] = await query<{ n: number }>(
        `WITH old AS (SELECT account_id, max(seq) AS upto FROM events WHERE created_at < $1 GROUP BY account_id),
              deliveries_gone AS (
                DELETE FROM webhook_deliveries d USING old, webhook_endpoints w
                WHERE w.account_id = old.account_id AND d.endpoint_id = w.id AND d.event_seq <= old.upto
              ),
              jobs_gone AS (DELETE FROM jobs j USING old WHERE j.kind = 'webhook.deliver' AND j.account_id = old.account_id AND j.ref <= old.upto),
              gone AS (DELETE FROM events e USING old WHERE e.account_id = old.account_id AND e.seq <= old.upto RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        [before],
      );
      return row!.n;
    },
  };
}
