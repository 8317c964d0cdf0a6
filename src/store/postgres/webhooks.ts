// Webhook endpoints and deliveries on PostgreSQL. The worker's fan-out turns the event log into
// deliveries, each endpoint from its cursor (fanned_seq) on, the endpoint's row locked so two
// instances never fan out the same events. Deliveries are attempted through the jobs table
// (kind webhook.deliver), taken with FOR UPDATE SKIP LOCKED and leased like message jobs;
// an attempt's outcome and its job's removal or rescheduling commit together, guarded by
// status = 'pending', so a delivery finishes once whichever instance tries.
import {
  CLAIMED_COLUMNS,
  type ClaimedRow,
  DELIVERY_COLUMNS,
  DELIVERY_EVENT_JOIN,
  type DeliveryRow,
  ENDPOINT_COLUMNS,
  type EndpointRow,
  toClaimedDeliveries,
  toDelivery,
  toEndpoint,
  webhookStatsOf,
} from '../rows.js';
import { runOf } from '../event-log.js';
import { EVENT_TYPES } from '../../schemas/events.js';
import type { WebhookRepository } from '../types.js';
import type { PostgresContext } from './orders.js';

/** SQL for 20 random hex digits (a v4 UUID's, without its version and variant digits). */
const RANDOM_HEX_SQL = "left(overlay(overlay(replace(gen_random_uuid()::text, '-', '') placing '' from 17 for 1) placing '' from 13 for 1), 20)";
/** SQL for a new id: `prefix`, the time in ms in 12 hex digits (a time-ordered key appends to its unique index instead of dirtying a random page), 20 random ones. */
const randomIdSql = (prefix: string) => `'${prefix}' || lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || ${RANDOM_HEX_SQL}`;
/** Enabled endpoints whose cursor is behind their account's last event (what the fan-out has to do), with `join` if given. */
const behind = (join = '') => `webhook_endpoints w JOIN accounts a ON a.id = w.account_id ${join} WHERE NOT w.disabled AND w.fanned_seq < a.last_event_seq`;
const BEHIND = behind();
const DELIVERY_FROM = `webhook_deliveries d ${DELIVERY_EVENT_JOIN}`;

export function createPostgresWebhooks({ query, transaction }: PostgresContext): WebhookRepository {
  return {
    createWebhookEndpoint(accountId, e, max) {
      return transaction(async (client) => {
        // The account's row lock serializes its creates, so the limit holds under concurrency;
        // the counter moves only for an endpoint that is made.
        const { rows: locked } = await client.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
        const { rows: count } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1', [accountId]);
        if (locked.length === 0 || count[0]!.n >= max) return undefined;
        const { rows: counter } = await client.query<{ seq: number }>(
          'UPDATE accounts SET last_endpoint_seq = last_endpoint_seq + 1 WHERE id = $1 RETURNING last_endpoint_seq AS seq',
          [accountId],
        );
        const { rows } = await client.query<EndpointRow>(
          // Deliveries start with the account's next event.
          `INSERT INTO webhook_endpoints (account_id, seq, id, url, event_mask, description, secret, created_at, fanned_seq)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, (SELECT last_event_seq FROM accounts WHERE id = $1)) RETURNING ${ENDPOINT_COLUMNS}`,
          [accountId, counter[0]!.seq, e.id, e.url, e.eventMask, e.description ?? null, e.secret, e.createdAt],
        );
        return toEndpoint(rows[0]!);
      });
    },

    async getWebhookEndpoint(accountId, id) {
      const [row] = await query<EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, [id, accountId]);
      return row && toEndpoint(row);
    },

    async listWebhookEndpoints({ accountId, limit, afterSeq = 0 }) {
      const rows = await query<EndpointRow>(
        `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
        [accountId, Math.floor(afterSeq), limit],
      );
      return rows.map(toEndpoint);
    },

    async updateWebhookEndpoint(accountId, id, patch) {
      const sets: string[] = [];
      const values: unknown[] = [id, accountId];
      const set = (column: string, value: unknown) => {
        values.push(value);
        sets.push(`${column} = $${values.length}`);
      };
      if (patch.url !== undefined) set('url', patch.url);
      if (patch.eventMask !== undefined) set('event_mask', patch.eventMask);
      if (patch.description !== undefined) set('description', patch.description);
      if (patch.disabled !== undefined) {
        set('disabled', patch.disabled);
        // Whoever sets `disabled` decides: the service's reason (a 410) no longer applies.
        sets.push('disabled_reason = NULL');
        // Re-enabled: deliveries resume with the account's next event, not the ones missed meanwhile.
        if (!patch.disabled) sets.push('fanned_seq = CASE WHEN disabled THEN (SELECT last_event_seq FROM accounts WHERE id = $2) ELSE fanned_seq END');
      }
      const [row] =
        sets.length === 0
          ? await query<EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, values)
          : await query<EndpointRow>(`UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE id = $1 AND account_id = $2 RETURNING ${ENDPOINT_COLUMNS}`, values);
      return row && toEndpoint(row);
    },

    async deleteWebhookEndpoint(accountId, id) {
      const [row] = await query<{ n: number }>(
        `WITH gone AS (DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2 RETURNING id),
              jobs_gone AS (DELETE FROM jobs WHERE kind = 'webhook.deliver' AND account_id = $2 AND grp IN (SELECT id FROM gone))
         SELECT count(*)::int AS n FROM gone`,
        [id, accountId],
      );
      return row!.n === 1;
    },

    async rotateWebhookSecret(accountId, id, secret, previousExpiresAt) {
      const [row] = await query<EndpointRow>(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = $1, secret = $2
         WHERE id = $3 AND account_id = $4 RETURNING ${ENDPOINT_COLUMNS}`,
        [previousExpiresAt, secret, id, accountId],
      );
      return row && toEndpoint(row);
    },

    async listWebhookDeliveries({ accountId, endpointId, limit, status, afterSeq = 0 }) {
      const rows = status
        ? await query<DeliveryRow>(
            `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.endpoint_id = $1 AND d.account_id = $2 AND d.status = $3 AND d.event_seq > $4 ORDER BY d.event_seq LIMIT $5`,
            [endpointId, accountId, status, Math.floor(afterSeq), limit],
          )
        : await query<DeliveryRow>(
            `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.endpoint_id = $1 AND d.account_id = $2 AND d.event_seq > $3 ORDER BY d.event_seq LIMIT $4`,
            [endpointId, accountId, Math.floor(afterSeq), limit],
          );
      return rows.map(toDelivery);
    },

    retryWebhookDelivery(accountId, endpointId, deliveryId, now) {
      return transaction(async (client) => {
        const { rows } = await client.query<{ event_seq: number; status: string }>(
          'SELECT event_seq, status FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2 AND account_id = $3 FOR UPDATE',
          [deliveryId, endpointId, accountId],
        );
        const row = rows[0];
        if (!row) return undefined;
        // A finished delivery gets one more attempt, outside the schedule.
        await client.query(
          `UPDATE webhook_deliveries SET next_attempt_at = $1, status = 'pending', single_attempt = single_attempt OR status <> 'pending'
           WHERE endpoint_id = $2 AND event_seq = $3`,
          [now, endpointId, row.event_seq],
        );
        // A leased job is being attempted right now: that attempt is the retry.
        const moved = await client.query(
          "UPDATE jobs SET run_at = $1 WHERE kind = 'webhook.deliver' AND account_id = $2 AND ref = $3 AND grp = $4 AND (leased_until <= $1 OR run_at > $1) RETURNING 1",
          [now, accountId, row.event_seq, endpointId],
        );
        if (moved.rowCount === 0) {
          await client.query(
            `INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at)
             SELECT 'webhook.deliver', $1, $2, $3, $4, $4
             WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE kind = 'webhook.deliver' AND account_id = $1 AND ref = $2 AND grp = $3)`,
            [accountId, row.event_seq, endpointId, now],
          );
        }
        const { rows: delivery } = await client.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.id = $1`, [deliveryId]);
        return toDelivery(delivery[0]!);
      });
    },

    async fanOutWebhookEvents(max) {
      // One statement: lock the endpoints behind their account's last event (another instance
      // fanning one out is skipped), add the deliveries and jobs of their next `max` events
      // (by kind), and move their cursors. Every event up to last_event_seq is committed: the
      // counter and the events commit together, under the account's row lock.
      const [row] = await query<{ n: number }>(
        `WITH due AS (
           SELECT w.id, w.account_id, w.event_mask, w.fanned_seq AS after, least(a.last_event_seq, w.fanned_seq + $2) AS upto
           FROM ${BEHIND}
           FOR UPDATE OF w SKIP LOCKED
         ),
         moved AS (UPDATE webhook_endpoints w SET fanned_seq = due.upto FROM due WHERE w.id = due.id),
         dl AS (
           -- A delivery already there (written by a version that fanned out at write time) keeps its own job.
           INSERT INTO webhook_deliveries (account_id, endpoint_id, event_seq, id, status, next_attempt_at, created_at)
           -- Rows of the log from the one holding event after + 1, each expanded to its events (EventRow).
           SELECT e.account_id, due.id, s.seq, ${randomIdSql('whd_')}, 'pending', (extract(epoch FROM e.created_at) * 1000)::bigint, e.created_at
           FROM due
           JOIN events e ON e.account_id = due.account_id AND e.seq >= COALESCE(${runOf('due.account_id', 'due.after + 1')}, 0) AND e.seq <= due.upto
           CROSS JOIN LATERAL generate_series(greatest(e.seq, due.after + 1), least(e.seq + e.span - 1, due.upto)) AS s(seq)
           WHERE (due.event_mask & (1 << (array_position($1::text[], e.type) - 1))) <> 0
           ON CONFLICT DO NOTHING
           RETURNING account_id, endpoint_id, event_seq, next_attempt_at
         ),
         jb AS (
           INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at)
           SELECT 'webhook.deliver', account_id, event_seq, endpoint_id, next_attempt_at, next_attempt_at FROM dl
         )
         SELECT COALESCE(sum(upto - after), 0)::int AS n FROM due`,
        [EVENT_TYPES, max],
      );
      return row!.n;
    },

    async claimWebhookDeliveries(now, leaseMs, max, busyEndpoints) {
      const rows = await query<ClaimedRow>(
        `WITH j AS (
           UPDATE jobs SET leased_until = $1, attempts = attempts + 1
           WHERE id IN (
             SELECT id FROM jobs WHERE kind = 'webhook.deliver' AND run_at <= $2 AND leased_until <= $2 AND grp <> ALL($3::text[])
             ORDER BY run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
           )
           RETURNING id, account_id, ref, grp
         )
         SELECT ${CLAIMED_COLUMNS} FROM j
           LEFT JOIN webhook_deliveries d ON d.endpoint_id = j.grp AND d.event_seq = j.ref AND d.status = 'pending'
           LEFT JOIN webhook_endpoints w ON w.id = d.endpoint_id
           LEFT JOIN events e ON e.account_id = d.account_id AND e.seq = ${runOf('d.account_id', 'd.event_seq')}`,
        [now + leaseMs, now, busyEndpoints, max],
      );
      // A job whose delivery was finished or deleted meanwhile, or whose event was pruned (a
      // fan-out racing the retention): nothing left to do.
      const { claimed, orphans } = toClaimedDeliveries(rows);
      if (orphans.length > 0) await query('DELETE FROM jobs WHERE id = ANY($1::bigint[])', [orphans]);
      return claimed;
    },

    async recordWebhookAttempts(records) {
      if (records.length === 0) return;
      // One statement for the batch: each record's delivery update, then its job's fate.
      await query(
        `WITH r AS (
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[], $6::int[], $7::text[], $8::bigint[])
             AS t(job_id, endpoint_id, event_seq, outcome, at, response_status, error, next_attempt_at)
         ),
         upd AS (
           UPDATE webhook_deliveries d SET
             status = CASE WHEN r.outcome = 'retry' THEN 'pending' WHEN r.outcome = 'succeeded' THEN 'succeeded' ELSE 'failed' END,
             attempts = d.attempts + CASE WHEN r.outcome = 'skipped' THEN 0 ELSE 1 END,
             single_attempt = r.outcome = 'retry' AND d.single_attempt,
             last_attempt_at = CASE WHEN r.outcome = 'skipped' THEN d.last_attempt_at ELSE r.at END,
             last_response_status = CASE WHEN r.outcome = 'skipped' THEN d.last_response_status ELSE r.response_status END,
             last_error = r.error,
             next_attempt_at = CASE WHEN r.outcome = 'retry' THEN r.next_attempt_at END
           FROM r WHERE d.endpoint_id = r.endpoint_id AND d.event_seq = r.event_seq AND d.status = 'pending'
         ),
         gone AS (
           UPDATE webhook_endpoints w SET disabled = true, disabled_reason = 'The receiver answered 410 Gone at ' || to_char(r.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '.'
           FROM r WHERE r.outcome = 'gone' AND w.id = r.endpoint_id
         ),
         resched AS (
           UPDATE jobs SET run_at = r.next_attempt_at, leased_until = 0, last_error = r.error FROM r WHERE r.outcome = 'retry' AND jobs.id = r.job_id
         )
         DELETE FROM jobs USING r WHERE r.outcome <> 'retry' AND jobs.id = r.job_id`,
        [
          records.map((r) => r.jobId),
          records.map((r) => r.endpointId),
          records.map((r) => r.eventSeq),
          records.map((r) => r.outcome),
          records.map((r) => r.at),
          records.map((r) => r.responseStatus ?? null),
          records.map((r) => r.error ?? null),
          records.map((r) => r.nextAttemptAt ?? null),
        ],
      );
    },

    async webhookStats() {
      // As on SQLite: deliveries with a job, and events past an enabled endpoint's cursor.
      const [row] = await query<{ jobs: number; oldest_job: number | null; unfanned: number | null; oldest_unfanned: string | null }>(
        `SELECT count(*)::int AS jobs, min(created_at) AS oldest_job,
                (SELECT sum(a.last_event_seq - w.fanned_seq)::bigint FROM ${BEHIND}) AS unfanned,
                (SELECT min(e.created_at) FROM ${behind(`JOIN events e ON e.account_id = w.account_id AND e.seq = ${runOf('w.account_id', 'w.fanned_seq + 1')}`)}) AS oldest_unfanned
         FROM jobs WHERE kind = 'webhook.deliver'`,
      );
      return webhookStatsOf(row!.jobs, row!.oldest_job, row!.unfanned, row!.oldest_unfanned);
    },
  };
}
