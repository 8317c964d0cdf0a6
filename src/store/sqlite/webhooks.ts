// Webhook endpoints and deliveries on SQLite: the SQL (the rules are ../webhook-repository.ts).
// Transactions take the write lock (BEGIN IMMEDIATE), so the account's endpoints, a fan-out's
// endpoints and a claim's jobs are held until they commit; polls look without it first.
import { typesOf } from '../../schemas/events.js';
import type { Sql, SqlDatabase } from '../core/sql.js';
import { runOf } from '../event-log.js';
import {
  CLAIMED_COLUMNS,
  CLAIMED_JOINS,
  type ClaimedRow,
  createWebhookRepository,
  DELIVERY_COLUMNS,
  DELIVERY_EVENT_JOIN,
  type DeliveryRow,
  ENDPOINT_COLUMNS,
  type EndpointChanges,
  type EndpointRow,
  type FanOutStep,
  type Settlement,
  type StatsRow,
  type WebhookSql,
} from '../webhook-repository.js';
import type { WebhookRepository } from '../webhooks.js';
import { PLAIN_SECRETS, type SecretBox } from '../../webhooks/secret-box.js';
import { nextIds } from '../accounts.js';

/** Enabled endpoints whose cursor is behind their account's last event (what the fan-out has to do), with `join` if given. */
const behind = (join = '') => `webhook_endpoints w JOIN accounts a ON a.id = w.account_id ${join} WHERE w.disabled = 0 AND w.fanned_seq < a.last_event_seq`;
const BEHIND = behind();
const DELIVERY_FROM = `webhook_deliveries d ${DELIVERY_EVENT_JOIN}`;
/** INDEXED BY must follow its table (and alias), before the JOIN: anywhere else it is a syntax error. */
const DELIVERY_BY_STATUS_FROM = `webhook_deliveries d INDEXED BY webhook_deliveries_by_status ${DELIVERY_EVENT_JOIN}`;

const endpointsSql = {
  lockAccount: async (tx: Sql, accountId: string) => (await tx.get('SELECT 1 FROM accounts WHERE id = ?', [accountId])) !== undefined,
  countEndpoints: async (tx: Sql, accountId: string) => (await tx.get<{ n: number }>('SELECT count(*) AS n FROM webhook_endpoints WHERE account_id = ?', [accountId]))!.n,
  nextEndpointSeq: (tx: Sql, accountId: string) => nextIds(tx, 'last_endpoint_seq', accountId, 1),
  insertEndpoint: async (tx: Sql, accountId: string, seq: number, e: Parameters<WebhookSql['insertEndpoint']>[3]) =>
    (await tx.get<EndpointRow>(
      `INSERT INTO webhook_endpoints (account_id, seq, id, url, event_mask, description, secret, secret_key_id, created_at, fanned_seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT last_event_seq FROM accounts WHERE id = ?)) RETURNING ${ENDPOINT_COLUMNS}`,
      [accountId, seq, e.id, e.url, e.eventMask, e.description ?? null, e.secret.value, e.secret.keyId, e.createdAt, accountId],
    ))!,
  deleteEndpointJobs: async (tx: Sql, accountId: string, id: string) => {
    await tx.run("DELETE FROM jobs WHERE kind = 'webhook.deliver' AND account_id = ? AND grp = ?", [accountId, id]);
  },
  deleteEndpoint: async (tx: Sql, accountId: string, id: string) => (await tx.run('DELETE FROM webhook_endpoints WHERE account_id = ? AND id = ?', [accountId, id])) === 1,
};

/** UPDATE … SET for `changes` (booleans as 0/1), with its values. */
function endpointUpdate({ set, resume }: EndpointChanges): { sets: string; values: unknown[] } {
  const sets = set.map(([column]) => `${column} = ?`);
  if (resume) sets.push('fanned_seq = CASE WHEN disabled = 1 THEN (SELECT last_event_seq FROM accounts WHERE id = account_id) ELSE fanned_seq END');
  return { sets: sets.join(', '), values: set.map(([, value]) => (typeof value === 'boolean' ? (value ? 1 : 0) : value)) };
}

const retrySql = {
  lockDelivery: (tx: Sql, accountId: string, endpointId: string, id: string) =>
    tx.get<{ event_seq: number; status: DeliveryRow['status'] }>('SELECT event_seq, status FROM webhook_deliveries WHERE id = ? AND endpoint_id = ? AND account_id = ?', [id, endpointId, accountId]),
  deliveryDue: async (tx: Sql, endpointId: string, eventSeq: number, now: number) => {
    await tx.run(
      "UPDATE webhook_deliveries SET next_attempt_at = ?, status = 'pending', single_attempt = single_attempt OR status <> 'pending' WHERE endpoint_id = ? AND event_seq = ?",
      [now, endpointId, eventSeq],
    );
  },
  delivery: (tx: Sql, accountId: string, endpointId: string, id: string) =>
    tx.get<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.id = ? AND d.endpoint_id = ? AND d.account_id = ?`, [id, endpointId, accountId]),
  job: (tx: Sql, accountId: string, endpointId: string, eventSeq: number) =>
    tx.get<{ id: number; leased_until: number; run_at: number }>(
      "SELECT id, leased_until, run_at FROM jobs WHERE kind = 'webhook.deliver' AND account_id = ? AND ref = ? AND grp = ?",
      [accountId, eventSeq, endpointId],
    ),
  insertJob: async (tx: Sql, accountId: string, endpointId: string, eventSeq: number, now: number) => {
    await tx.run("INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at) VALUES ('webhook.deliver', ?, ?, ?, ?, ?)", [accountId, eventSeq, endpointId, now, now]);
  },
  jobDue: async (tx: Sql, jobId: number, now: number) => {
    await tx.run('UPDATE jobs SET run_at = ? WHERE id = ?', [now, jobId]);
  },
};

// In SQL, row by row in C: the events' time in ms.
const EVENT_MS = "CAST(round(unixepoch(e.created_at, 'subsec') * 1000) AS INTEGER)";
// The account's events in (after, upto] of the wanted kinds: the log's rows from the one
// holding event after + 1, each expanded to its events (rows hold runs: EventRow).
const LOG = `WITH RECURSIVE log(account_id, seq, last, type, created_at) AS (
    SELECT account_id, seq, seq + span - 1, type, created_at FROM events
    WHERE account_id = @account AND seq >= COALESCE(${runOf('@account', '@after + 1')}, 0) AND seq <= @upto
      AND (@mask = -1 OR type IN (SELECT value FROM json_each(@types)))
    UNION ALL SELECT account_id, seq + 1, last, type, created_at FROM log WHERE seq < last
  )`;
const RANGE = 'e.seq > @after AND e.seq <= @upto';
// Jobs first, for events without a delivery yet: a delivery already there (written by a version
// that fanned out at write time) keeps its own job.
const FAN_OUT_JOBS = `${LOG} INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at)
  SELECT 'webhook.deliver', e.account_id, e.seq, @endpoint, ${EVENT_MS}, ${EVENT_MS} FROM log e
  WHERE ${RANGE} AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = @endpoint AND d.event_seq = e.seq)`;
// Ids as on PostgreSQL: prefix, the time in ms in 12 hex digits (a time-ordered key), 20 random hex.
const FAN_OUT_DELIVERIES = `${LOG} INSERT INTO webhook_deliveries (account_id, endpoint_id, event_seq, id, status, next_attempt_at, created_at)
  SELECT e.account_id, @endpoint, e.seq, printf('whd_%012x', @now) || lower(hex(randomblob(10))), 'pending', ${EVENT_MS}, e.created_at FROM log e
  WHERE ${RANGE} ON CONFLICT DO NOTHING`;

const fanOutSql = {
  anyBehind: (db: SqlDatabase) => async () => (await db.get(`SELECT 1 FROM ${BEHIND} LIMIT 1`)) !== undefined,
  lockBehind: (tx: Sql) => tx.all<{ id: string; account_id: string; event_mask: number; fanned_seq: number; last_event_seq: number }>(
    `SELECT w.id, w.account_id, w.event_mask, w.fanned_seq, a.last_event_seq FROM ${BEHIND}`,
  ),
  async deliver(tx: Sql, steps: readonly FanOutStep[], now: number) {
    for (const s of steps) {
      const range = { account: s.accountId, after: s.after, upto: s.upto, mask: s.eventMask, types: JSON.stringify(typesOf(s.eventMask)), endpoint: s.endpointId };
      await tx.run(FAN_OUT_JOBS, range);
      await tx.run(FAN_OUT_DELIVERIES, { ...range, now });
    }
  },
  async moveCursors(tx: Sql, steps: readonly FanOutStep[]) {
    for (const s of steps) await tx.run('UPDATE webhook_endpoints SET fanned_seq = ? WHERE id = ?', [s.upto, s.endpointId]);
  },
};

const LEASE = `UPDATE jobs SET leased_until = ?, attempts = attempts + 1
  WHERE id IN (
    SELECT id FROM jobs WHERE kind = 'webhook.deliver' AND run_at <= ? AND leased_until <= ?
      AND grp NOT IN (SELECT value FROM json_each(?)) AND account_id NOT IN (SELECT value FROM json_each(?)) ORDER BY run_at, id LIMIT ?)
  RETURNING id`;

/** The leased jobs with what they join, in one statement (each job by its rowid). */
const CLAIMED = `SELECT ${CLAIMED_COLUMNS} FROM jobs j ${CLAIMED_JOINS} WHERE j.id IN (SELECT value FROM json_each(?))`;

function lease(db: SqlDatabase): WebhookSql['lease'] {
  return async (now, leaseMs, max, busyEndpoints, busyAccounts) => {
    // An idle worker polls often: look without the write lock first, take it only for work.
    const due = await db.get("SELECT 1 FROM jobs WHERE kind = 'webhook.deliver' AND run_at <= ? AND leased_until <= ? LIMIT 1", [now, now]);
    if (due === undefined) return [];
    return db.transaction(async (tx) => {
      const jobs = await tx.all<{ id: number }>(LEASE, [now + leaseMs, now, now, JSON.stringify(busyEndpoints), JSON.stringify(busyAccounts), max]);
      return jobs.length === 0 ? [] : tx.all<ClaimedRow>(CLAIMED, [JSON.stringify(jobs.map((job) => job.id))]);
    });
  };
}

// Positional: named parameters cost the hot path a lookup each.
const SETTLE_DELIVERY = `UPDATE webhook_deliveries SET status = ?, single_attempt = single_attempt AND ?, attempts = attempts + ?,
    last_attempt_at = CASE WHEN ? THEN ? ELSE last_attempt_at END, last_response_status = CASE WHEN ? THEN ? ELSE last_response_status END,
    last_error = ?, next_attempt_at = ?
  WHERE endpoint_id = ? AND event_seq = ? AND status = 'pending'`;

async function settleOne(tx: Sql, s: Settlement): Promise<void> {
  const attempted = s.attempted ? 1 : 0;
  await tx.run(SETTLE_DELIVERY, [
    s.status, s.status === 'pending' ? 1 : 0, attempted, attempted, s.at, attempted, s.responseStatus, s.error, s.nextAttemptAt, s.endpointId, s.eventSeq,
  ]);
  if (s.disabledReason !== null) await tx.run('UPDATE webhook_endpoints SET disabled = 1, disabled_reason = ? WHERE id = ?', [s.disabledReason, s.endpointId]);
  if (s.status === 'pending') await tx.run('UPDATE jobs SET run_at = ?, leased_until = 0, last_error = ? WHERE id = ?', [s.nextAttemptAt, s.error, s.jobId]);
  else await tx.run('DELETE FROM jobs WHERE id = ?', [s.jobId]);
}

// Pending: deliveries with a job (jobs are few: pending only, carrying the event's time in ms),
// and events past an enabled endpoint's cursor, not fanned out yet (each counted as a delivery,
// though the endpoint's kinds may pass over some).
const STATS = `SELECT count(*) AS jobs, min(created_at) AS oldest_job,
    (SELECT sum(a.last_event_seq - w.fanned_seq) FROM ${BEHIND}) AS unfanned,
    (SELECT min(e.created_at) FROM ${behind(`JOIN events e ON e.account_id = w.account_id AND e.seq = ${runOf('w.account_id', 'w.fanned_seq + 1')}`)}) AS oldest_unfanned
  FROM jobs WHERE kind = 'webhook.deliver'`;

export function createSqliteWebhooks(db: SqlDatabase, secrets: SecretBox = PLAIN_SECRETS): WebhookRepository {
  const sql: WebhookSql = {
    ...endpointsSql,
    endpoint: (accountId, id) => db.get<EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ? AND account_id = ?`, [id, accountId]),
    endpoints: (accountId, afterSeq, limit) =>
      db.all<EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`, [accountId, afterSeq, limit]),
    updateEndpoint(tx, accountId, id, changes) {
      const { sets, values } = endpointUpdate(changes);
      return tx.get<EndpointRow>(`UPDATE webhook_endpoints SET ${sets} WHERE id = ? AND account_id = ? RETURNING ${ENDPOINT_COLUMNS}`, [...values, id, accountId]);
    },
    rotateSecret: (tx, accountId, id, secret, previousExpiresAt) =>
      tx.get<EndpointRow>(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_key_id = secret_key_id, previous_secret_expires_at = ?, secret = ?, secret_key_id = ?
         WHERE id = ? AND account_id = ? RETURNING ${ENDPOINT_COLUMNS}`,
        [previousExpiresAt, secret.value, secret.keyId, id, accountId],
      ),
    deliveries: ({ accountId, endpointId, limit, status, afterSeq }) =>
      status
        ? db.all<DeliveryRow>(
            `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_BY_STATUS_FROM}
             WHERE d.endpoint_id = ? AND d.account_id = ? AND d.status = ? AND d.event_seq > ? ORDER BY d.event_seq LIMIT ?`,
            [endpointId, accountId, status, afterSeq, limit],
          )
        : db.all<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.endpoint_id = ? AND d.account_id = ? AND d.event_seq > ? ORDER BY d.event_seq LIMIT ?`, [
            endpointId, accountId, afterSeq, limit,
          ]),
    ...retrySql,
    ...fanOutSql,
    anyBehind: fanOutSql.anyBehind(db),
    lease: lease(db),
    deleteJobs: async (ids) => {
      await db.run('DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))', [JSON.stringify(ids)]);
    },
    settle: (settlements) =>
      db.transaction(async (tx) => {
        for (const s of settlements) await settleOne(tx, s);
      }),
    stats: async () => (await db.get<StatsRow>(STATS))!,
  };
  return createWebhookRepository(db, sql, secrets);
}
