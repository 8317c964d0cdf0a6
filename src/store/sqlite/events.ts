// The event log on SQLite: its SQL. Events are appended by the transactions that make the
// changes (the transactional outbox), numbered from the account's counter; a rolled-back change
// takes its events with it. Rows and runs are encoded and decoded in ../event-log.ts.
import type { Sql, SqlDatabase } from '../core/sql.js';
import { appendWrites, byAccount, EVENT_COLUMNS, eventRepository, type EventRow, type EventWrite, LEGACY_EVENT_ID, runOf, runRows } from '../event-log.js';
import type { EventRepository } from '../events.js';
import { nextIds } from '../accounts.js';

export interface SqliteEventRepository extends EventRepository {
  /**
   * Appends events of several accounts in `tx` (a group commit's chunk): each run of one
   * account's consecutive writes takes its counter once, and its consecutive events of one kind
   * are one row (EventRow), stamped with the first one's time.
   */
  appendMany(tx: Sql, writes: readonly EventWrite[]): Promise<void>;
}

const insertSqls: string[] = [];
const tracedSqls: string[] = [];
/** One multi-row INSERT for an account's rows; the trace column only when one of them has a trace (tracing on). */
const insertSql = (rows: number, traced: boolean) =>
  traced
    ? (tracedSqls[rows] ??= `INSERT INTO events (account_id, seq, span, id, more_ids, type, created_at, data, trace) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`)
    : (insertSqls[rows] ??= `INSERT INTO events (account_id, seq, span, id, more_ids, type, created_at, data) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`);
/** An account's rows as insertSql's values. */
const insertValues = (accountId: string, rows: readonly EventRow[], traced: boolean): unknown[] =>
  traced
    ? rows.flatMap((row) => [accountId, row.seq, row.span, row.id, row.more_ids, row.type, row.created_at, row.data, row.trace ?? null])
    : rows.flatMap((row) => [accountId, row.seq, row.span, row.id, row.more_ids, row.type, row.created_at, row.data]);

async function appendMany(tx: Sql, writes: readonly EventWrite[]): Promise<void> {
  for (const group of byAccount(writes)) {
    const rows = runRows(await nextIds(tx, 'last_event_seq', group.accountId, group.writes.length), group.writes);
    const traced = rows.some((row) => row.trace != null);
    await tx.run(insertSql(rows.length, traced), insertValues(group.accountId, rows, traced));
  }
}

/** The account's rows from the one holding event after + 1 on (rows hold runs: EventRow); kinds filtered in SQL, so a filtered page reads only matches. */
const FROM = `account_id = @account AND seq >= COALESCE(${runOf('@account', '@after + 1')}, 0)`;

// Per account, its events before the first one young enough to keep go, by key ranges:
// deliveries through their endpoints' keys, events through theirs (jobs are few: pending
// only). The walk to that first young event reads only what is about to go.
async function pruneAccount(tx: Sql, accountId: string, before: string): Promise<number> {
  const oldest = await tx.get<{ seq: number; created_at: string }>('SELECT seq, created_at FROM events WHERE account_id = ? ORDER BY seq LIMIT 1', [accountId]);
  if (!oldest || oldest.created_at >= before) return 0;
  const young = await tx.get<{ seq: number }>('SELECT seq FROM events WHERE account_id = ? AND created_at >= ? ORDER BY seq LIMIT 1', [accountId, before]);
  const upto = young ? young.seq - 1 : Number.MAX_SAFE_INTEGER;
  await tx.run('DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE account_id = ?) AND event_seq <= ?', [accountId, upto]);
  await tx.run("DELETE FROM jobs WHERE kind = 'webhook.deliver' AND account_id = ? AND ref <= ?", [accountId, upto]);
  const pruned = (await tx.get<{ n: number | null }>('SELECT sum(span) AS n FROM events WHERE account_id = ? AND seq <= ?', [accountId, upto]))!.n ?? 0;
  await tx.run('DELETE FROM events WHERE account_id = ? AND seq <= ?', [accountId, upto]);
  return pruned;
}

/** `enabled` false: nothing is appended (events are off). */
export function createSqliteEvents(db: SqlDatabase, enabled: boolean): SqliteEventRepository {
  const many = enabled ? appendMany : async () => {};
  const repository = eventRepository({
    append: (tx, accountId, events, createdAt, traces) => many(tx, appendWrites(accountId, events, createdAt, traces)),
    rowsFrom: (account, after, limit, types) =>
      types === undefined
        ? db.all<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE ${FROM} ORDER BY seq LIMIT @limit`, { account, after, limit })
        : db.all<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE ${FROM} AND type IN (SELECT value FROM json_each(@types)) ORDER BY seq LIMIT @limit`, {
            account, after, limit, types: JSON.stringify(types),
          }),
    rowHolding: (account, seq) => db.get<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE account_id = @account AND seq = ${runOf('@account', '@seq')}`, { account, seq }),
    legacyRow: (accountId, id) => db.get<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = ? AND account_id = ? AND ${LEGACY_EVENT_ID}`, [id, accountId]),
    prune: (before) =>
      db.transaction(async (tx) => {
        let pruned = 0;
        for (const { id } of await tx.all<{ id: string }>('SELECT id FROM accounts WHERE last_event_seq > 0')) pruned += await pruneAccount(tx, id, before);
        return pruned;
      }),
  });
  return { ...repository, appendMany: (tx, writes) => many(tx, writes) };
}
