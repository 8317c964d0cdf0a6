// The event log on PostgreSQL: its SQL. Events are appended by the transactions that make the
// changes (the transactional outbox), in one statement: the account's counter (its row lock
// orders the account's events by commit) and the events. A rolled-back change takes them with
// it. Rows and runs are encoded and decoded in ../event-log.ts.
import type { Sql, SqlDatabase } from '../core/sql.js';
import { appendWrites, EVENT_COLUMNS, eventRepository, type EventRow, LEGACY_EVENT_ID, runOf, runRows } from '../event-log.js';
import { intArrayText } from '../core/dialect.js';
import type { EventRepository, NewEvent } from '../events.js';

/**
 * SQL for the id of the event with sequence `seq`, as eventId() (event-log.ts) makes it, its
 * random digits (`random`) drawn in the process: gen_random_uuid() and the string work to trim
 * it would cost PostgreSQL time per event inside the batch that holds the account's lock.
 */
export const eventIdSql = (seq: string, random: string) => `'evt_' || lpad(to_hex(${seq}), 12, '0') || ${random}`;

/**
 * SQL of a group commit's CTE that inserts each account's pet.created run as one row. `next`
 * names a relation with, per account: account_id, event_base (its last event seq before),
 * n (its pets) and base (its last pet id before); `$p`…`$p+4` are petRunParams' arrays (event-log.ts).
 */
export const petRunsInsertSql = (next: string, p: number) => `
      INSERT INTO events (account_id, seq, span, id, more_ids, type, created_at, data, trace)
      SELECT n.account_id, n.event_base + 1, n.n, ${eventIdSql('n.event_base + 1', 'r.first_random')}, NULLIF(r.more_ids, ''), 'pet.created', r.created_at,
        '{"firstPetId":' || (n.base + 1) || r.data, r.trace
      FROM ${next} n JOIN unnest($${p}::text[], $${p + 1}::text[], $${p + 2}::text[], $${p + 3}::timestamptz[], $${p + 4}::text[], $${p + 5}::text[])
        AS r(account_id, first_random, more_ids, created_at, data, trace)
        ON r.account_id = n.account_id`;

// The account's counter and its events as rows (runRows: a run of consecutive events of one kind
// is one row), numbered from the counter: a PATCH batch's pet.updated events are one row, not
// one each (each row costs a heap and a key insert inside the batch that holds the lock).
const APPEND_SQL = `
  WITH next AS (UPDATE accounts SET last_event_seq = last_event_seq + $2 WHERE id = $1 RETURNING last_event_seq - $2 AS base)
  INSERT INTO events (account_id, seq, span, id, more_ids, type, created_at, data, trace)
  SELECT $1, next.base + t.seq, t.span, ${eventIdSql('next.base + t.seq', 't.random')}, t.more_ids, t.type, $3, t.data, t.trace
  FROM next, unnest($4::bigint[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
    AS t(seq, span, random, more_ids, type, data, trace)`;

/** The rows' columns as APPEND_SQL's arrays; seq relative to the counter (runRows from 1). */
const appendParams = (accountId: string, events: readonly NewEvent[], createdAt: string, rows: readonly EventRow[]) => [
  accountId, events.length, createdAt, intArrayText(rows.map((row) => row.seq)), intArrayText(rows.map((row) => row.span)),
  // eventId()'s 20 random digits end the id runRows made; the statement writes the real sequence before them.
  rows.map((row) => row.id.slice(-20)), rows.map((row) => row.more_ids), rows.map((row) => row.type), rows.map((row) => row.data), rows.map((row) => row.trace ?? null),
];

const appended = (accountId: string, inserted: number | null, rows: readonly EventRow[]) => {
  if (inserted !== rows.length) throw new Error(`no account ${accountId}: events not written`);
};

// Per account, its events before the first one young enough to keep (found by walking the key
// from the oldest) go; deliveries through their endpoints' keys, events through theirs (jobs are
// few: pending only).
const PRUNE_SQL = `
  WITH old AS (
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
  SELECT COALESCE(sum(span), 0)::int AS n FROM gone`;

/** `enabled` false: nothing is appended (events are off). */
export function createPostgresEvents(db: SqlDatabase, enabled: boolean): EventRepository {
  return eventRepository({
    async append(tx: Sql, accountId, events, createdAt, traces) {
      if (!enabled || events.length === 0) return;
      const rows = runRows(1, appendWrites(accountId, events, createdAt, traces));
      appended(accountId, await tx.run(APPEND_SQL, appendParams(accountId, events, createdAt, rows)), rows);
    },
    rowsFrom: (accountId, after, limit, types) => {
      const from = `seq >= COALESCE(${runOf('$1', '$2::bigint + 1')}, 0)`;
      return types === undefined
        ? db.all<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = $1 AND ${from} ORDER BY seq LIMIT $3`, [accountId, after, limit])
        : db.all<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = $1 AND ${from} AND type = ANY($3::text[]) ORDER BY seq LIMIT $4`, [accountId, after, types, limit]);
    },
    rowHolding: (accountId, seq) => db.get<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = $1 AND seq = ${runOf('$1', '$2::bigint')}`, [accountId, seq]),
    legacyRow: (accountId, id) => db.get<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = $1 AND account_id = $2 AND ${LEGACY_EVENT_ID}`, [id, accountId]),
    prune: async (before) => (await db.get<{ n: number }>(PRUNE_SQL, [before]))!.n,
  });
}
