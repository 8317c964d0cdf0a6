// Webhook endpoints and deliveries on PostgreSQL: the SQL (the rules are ../webhook-repository.ts).
// Rows a transaction means to change are locked first (FOR UPDATE); the fan-out skips endpoints
// another instance is fanning out, and claims skip jobs another instance is leasing (SKIP LOCKED),
// so a delivery finishes once whichever instance tries.
import { EVENT_KIND_BITS } from '../../schemas/events.js';
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

/** SQL for 20 random hex digits (a v4 UUID's, without its version and variant digits). */
const RANDOM_HEX_SQL = "left(overlay(overlay(replace(gen_random_uuid()::text, '-', '') placing '' from 17 for 1) placing '' from 13 for 1), 20)";
/** SQL for a new id: `prefix`, the time in ms in 12 hex digits (a time-ordered key appends to its unique index instead of dirtying a random page), 20 random ones. */
const randomIdSql = (prefix: string) => `'${prefix}' || lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || ${RANDOM_HEX_SQL}`;
/** Enabled endpoints whose cursor is behind their account's last event (what the fan-out has to do), with `join` if given. */
const behind = (join = '') => `webhook_endpoints w JOIN accounts a ON a.id = w.account_id ${join} WHERE NOT w.disabled AND w.fanned_seq < a.last_event_seq`;
const BEHIND = behind();
const DELIVERY_FROM = `webhook_deliveries d ${DELIVERY_EVENT_JOIN}`;

const endpointsSql = {
  lockAccount: async (tx: Sql, accountId: string) => (await tx.get('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId])) !== undefined,
  countEndpoints: async (tx: Sql, accountId: string) => (await tx.get<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1', [accountId]))!.n,
  nextEndpointSeq: (tx: Sql, accountId: string) => nextIds(tx, 'last_endpoint_seq', accountId, 1),
  insertEndpoint: async (tx: Sql, accountId: string, seq: number, e: Parameters<WebhookSql['insertEndpoint']>[3]) =>
    (await tx.get<EndpointRow>(
      `INSERT INTO webhook_endpoints (account_id, seq, id, url, event_mask, description, secret, secret_key_id, created_at, fanned_seq)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, (SELECT last_event_seq FROM accounts WHERE id = $1)) RETURNING ${ENDPOINT_COLUMNS}`,
      [accountId, seq, e.id, e.url, e.eventMask, e.description ?? null, e.secret.value, e.secret.keyId, e.createdAt],
    ))!,
  deleteEndpointJobs: async (tx: Sql, accountId: string, id: string) => {
    await tx.run("DELETE FROM jobs WHERE kind = 'webhook.deliver' AND account_id = $1 AND grp = $2", [accountId, id]);
  },
  deleteEndpoint: async (tx: Sql, accountId: string, id: string) => (await tx.run('DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2', [id, accountId])) === 1,
};

/** UPDATE … SET for `changes`, its values from $3 on ($1 the id, $2 the account). */
function endpointUpdate({ set, resume }: EndpointChanges): { sets: string; values: unknown[] } {
  const sets = set.map(([column], i) => `${column} = $${i + 3}`);
  if (resume) sets.push('fanned_seq = CASE WHEN disabled THEN (SELECT last_event_seq FROM accounts WHERE id = $2) ELSE fanned_seq END');
  return { sets: sets.join(', '), values: set.map(([, value]) => value) };
}

const retrySql = {
  lockDelivery: (tx: Sql, accountId: string, endpointId: string, id: string) =>
    tx.get<{ event_seq: number; status: DeliveryRow['status'] }>(
      'SELECT event_seq, status FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2 AND account_id = $3 FOR UPDATE',
      [id, endpointId, accountId],
    ),
  deliveryDue: async (tx: Sql, endpointId: string, eventSeq: number, now: number) => {
    await tx.run(
      "UPDATE webhook_deliveries SET next_attempt_at = $1, status = 'pending', single_attempt = single_attempt OR status <> 'pending' WHERE endpoint_id = $2 AND event_seq = $3",
      [now, endpointId, eventSeq],
    );
  },
  delivery: (tx: Sql, accountId: string, endpointId: string, id: string) =>
    tx.get<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.id = $1 AND d.endpoint_id = $2 AND d.account_id = $3`, [id, endpointId, accountId]),
  job: (tx: Sql, accountId: string, endpointId: string, eventSeq: number) =>
    tx.get<{ id: number; leased_until: number; run_at: number }>(
      "SELECT id, leased_until, run_at FROM jobs WHERE kind = 'webhook.deliver' AND account_id = $1 AND ref = $2 AND grp = $3 FOR UPDATE",
      [accountId, eventSeq, endpointId],
    ),
  insertJob: async (tx: Sql, accountId: string, endpointId: string, eventSeq: number, now: number) => {
    await tx.run("INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at) VALUES ('webhook.deliver', $1, $2, $3, $4, $4)", [accountId, eventSeq, endpointId, now]);
  },
  jobDue: async (tx: Sql, jobId: number, now: number) => {
    await tx.run('UPDATE jobs SET run_at = $1 WHERE id = $2', [now, jobId]);
  },
};

// One statement for every step: a pending delivery per event of the endpoint's kinds (the log's
// rows from the one holding event after + 1, each expanded to its events: EventRow), and a job
// per delivery made; a delivery already there (written by a version that fanned out at write
// time) keeps its own job.
const DELIVER = `
  WITH due AS (SELECT * FROM unnest($2::text[], $3::text[], $4::int[], $5::bigint[], $6::bigint[]) AS t(id, account_id, event_mask, after, upto)),
  dl AS (
    INSERT INTO webhook_deliveries (account_id, endpoint_id, event_seq, id, status, next_attempt_at, created_at)
    SELECT e.account_id, due.id, s.seq, ${randomIdSql('whd_')}, 'pending', (extract(epoch FROM e.created_at) * 1000)::bigint, e.created_at
    FROM due
    JOIN events e ON e.account_id = due.account_id AND e.seq >= COALESCE(${runOf('due.account_id', 'due.after + 1')}, 0) AND e.seq <= due.upto
    CROSS JOIN LATERAL generate_series(greatest(e.seq, due.after + 1), least(e.seq + e.span - 1, due.upto)) AS s(seq)
    WHERE (due.event_mask & (1 << (array_position($1::text[], e.type) - 1))) <> 0
    ON CONFLICT DO NOTHING
    RETURNING account_id, endpoint_id, event_seq, next_attempt_at
  )
  INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at)
  SELECT 'webhook.deliver', account_id, event_seq, endpoint_id, next_attempt_at, next_attempt_at FROM dl`;

const fanOutSql = {
  anyBehind: (db: SqlDatabase) => async () => (await db.get(`SELECT 1 FROM ${BEHIND} LIMIT 1`)) !== undefined,
  lockBehind: (tx: Sql) => tx.all<{ id: string; account_id: string; event_mask: number; fanned_seq: number; last_event_seq: number }>(
    `SELECT w.id, w.account_id, w.event_mask, w.fanned_seq, a.last_event_seq FROM ${BEHIND} FOR UPDATE OF w SKIP LOCKED`,
  ),
  async deliver(tx: Sql, steps: readonly FanOutStep[]) {
    await tx.run(DELIVER, [
      EVENT_KIND_BITS, steps.map((s) => s.endpointId), steps.map((s) => s.accountId), steps.map((s) => s.eventMask), steps.map((s) => s.after), steps.map((s) => s.upto),
    ]);
  },
  async moveCursors(tx: Sql, steps: readonly FanOutStep[]) {
    await tx.run('UPDATE webhook_endpoints w SET fanned_seq = s.upto FROM unnest($1::text[], $2::bigint[]) AS s(id, upto) WHERE w.id = s.id', [
      steps.map((s) => s.endpointId), steps.map((s) => s.upto),
    ]);
  },
};

const LEASE = `
  WITH j AS (
    UPDATE jobs SET leased_until = $1, attempts = attempts + 1
    WHERE id IN (
      SELECT id FROM jobs WHERE kind = 'webhook.deliver' AND run_at <= $2 AND leased_until <= $2 AND grp <> ALL($3::text[]) AND account_id <> ALL($5::text[])
      ORDER BY run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
    )
    RETURNING id, account_id, ref, grp
  )
  SELECT ${CLAIMED_COLUMNS} FROM j ${CLAIMED_JOINS}`;

// One statement for the batch: each settlement's delivery, its endpoint if disabled, then its job's fate.
const SETTLE = `
  WITH r AS (
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::boolean[], $6::timestamptz[], $7::int[], $8::text[], $9::bigint[], $10::text[])
      AS t(job_id, endpoint_id, event_seq, status, attempted, at, response_status, error, next_attempt_at, disabled_reason)
  ),
  upd AS (
    UPDATE webhook_deliveries d SET
      status = r.status,
      attempts = d.attempts + CASE WHEN r.attempted THEN 1 ELSE 0 END,
      single_attempt = d.single_attempt AND r.status = 'pending',
      last_attempt_at = CASE WHEN r.attempted THEN r.at ELSE d.last_attempt_at END,
      last_response_status = CASE WHEN r.attempted THEN r.response_status ELSE d.last_response_status END,
      last_error = r.error,
      next_attempt_at = r.next_attempt_at
    FROM r WHERE d.endpoint_id = r.endpoint_id AND d.event_seq = r.event_seq AND d.status = 'pending'
  ),
  gone AS (
    UPDATE webhook_endpoints w SET disabled = true, disabled_reason = r.disabled_reason FROM r WHERE r.disabled_reason IS NOT NULL AND w.id = r.endpoint_id
  ),
  resched AS (
    UPDATE jobs SET run_at = r.next_attempt_at, leased_until = 0, last_error = r.error FROM r WHERE r.status = 'pending' AND jobs.id = r.job_id
  )
  DELETE FROM jobs USING r WHERE r.status <> 'pending' AND jobs.id = r.job_id`;

const settleParams = (s: readonly Settlement[]) => [
  s.map((x) => x.jobId), s.map((x) => x.endpointId), s.map((x) => x.eventSeq), s.map((x) => x.status), s.map((x) => x.attempted), s.map((x) => x.at),
  s.map((x) => x.responseStatus), s.map((x) => x.error), s.map((x) => x.nextAttemptAt), s.map((x) => x.disabledReason),
];

// As on SQLite: deliveries with a job, and events past an enabled endpoint's cursor.
const STATS = `SELECT count(*)::int AS jobs, min(created_at) AS oldest_job,
    (SELECT sum(a.last_event_seq - w.fanned_seq)::bigint FROM ${BEHIND}) AS unfanned,
    (SELECT min(e.created_at) FROM ${behind(`JOIN events e ON e.account_id = w.account_id AND e.seq = ${runOf('w.account_id', 'w.fanned_seq + 1')}`)}) AS oldest_unfanned
  FROM jobs WHERE kind = 'webhook.deliver'`;

export function createPostgresWebhooks(db: SqlDatabase, secrets: SecretBox = PLAIN_SECRETS): WebhookRepository {
  const sql: WebhookSql = {
    ...endpointsSql,
    endpoint: (accountId, id) => db.get<EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, [id, accountId]),
    endpoints: (accountId, afterSeq, limit) =>
      db.all<EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [accountId, afterSeq, limit]),
    updateEndpoint(tx, accountId, id, changes) {
      const { sets, values } = endpointUpdate(changes);
      return tx.get<EndpointRow>(`UPDATE webhook_endpoints SET ${sets} WHERE id = $1 AND account_id = $2 RETURNING ${ENDPOINT_COLUMNS}`, [id, accountId, ...values]);
    },
    rotateSecret: (tx, accountId, id, secret, previousExpiresAt) =>
      tx.get<EndpointRow>(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_key_id = secret_key_id, previous_secret_expires_at = $1, secret = $2, secret_key_id = $3
         WHERE id = $4 AND account_id = $5 RETURNING ${ENDPOINT_COLUMNS}`,
        [previousExpiresAt, secret.value, secret.keyId, id, accountId],
      ),
    deliveries: ({ accountId, endpointId, limit, status, afterSeq }) =>
      status
        ? db.all<DeliveryRow>(
            `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.endpoint_id = $1 AND d.account_id = $2 AND d.status = $3 AND d.event_seq > $4 ORDER BY d.event_seq LIMIT $5`,
            [endpointId, accountId, status, afterSeq, limit],
          )
        : db.all<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.endpoint_id = $1 AND d.account_id = $2 AND d.event_seq > $3 ORDER BY d.event_seq LIMIT $4`, [
            endpointId, accountId, afterSeq, limit,
          ]),
    ...retrySql,
    ...fanOutSql,
    anyBehind: fanOutSql.anyBehind(db),
    lease: (now, leaseMs, max, busyEndpoints, busyAccounts) => db.all<ClaimedRow>(LEASE, [now + leaseMs, now, busyEndpoints, max, busyAccounts]),
    deleteJobs: async (ids) => {
      await db.run('DELETE FROM jobs WHERE id = ANY($1::bigint[])', [ids]);
    },
    settle: async (settlements) => {
      await db.run(SETTLE, settleParams(settlements));
    },
    stats: async () => (await db.get<StatsRow>(STATS))!,
  };
  return createWebhookRepository(db, sql, secrets);
}
