// Webhook endpoints and deliveries on SQLite. Deliveries are attempted through the jobs table
// (kind webhook.deliver), leased like message jobs; an attempt's outcome and its job's removal
// or rescheduling commit together, guarded by status = 'pending', so a delivery finishes once.
import {
  CLAIMED_COLUMNS,
  type ClaimedRow,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  ENDPOINT_COLUMNS,
  type EndpointRow,
  toClaimed,
  toDelivery,
  toEndpoint,
} from '../rows.js';
import type { AttemptRecord, ClaimedDelivery, WebhookRepository } from '../types.js';
import type { SqliteContext } from './orders.js';

const DELIVERY_JOIN = 'JOIN events e ON e.account_id = d.account_id AND e.seq = d.event_seq';
const DELIVERY_FROM = `webhook_deliveries d ${DELIVERY_JOIN}`;
/** INDEXED BY must follow its table (and alias), before the JOIN: anywhere else it is a syntax error. */
const DELIVERY_BY_STATUS_FROM = `webhook_deliveries d INDEXED BY webhook_deliveries_by_status ${DELIVERY_JOIN}`;

export function createSqliteWebhooks({ db, stmt, nextIds }: SqliteContext): WebhookRepository {
  const endpointById = (accountId: string, id: string) =>
    stmt<[string, string], EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ? AND account_id = ?`).get(id, accountId);
  const deliveryById = (accountId: string, endpointId: string, id: string) =>
    stmt<[string, string, string], DeliveryRow & { single_attempt: number }>(
      `SELECT ${DELIVERY_COLUMNS}, d.single_attempt FROM ${DELIVERY_FROM} WHERE d.id = ? AND d.endpoint_id = ? AND d.account_id = ?`,
    ).get(id, endpointId, accountId);

  const create = db.transaction((accountId: string, e: Parameters<WebhookRepository['createWebhookEndpoint']>[1], max: number) => {
    const { n } = stmt<[string], { n: number }>('SELECT count(*) AS n FROM webhook_endpoints WHERE account_id = ?').get(accountId)!;
    if (n >= max) return undefined;
    const seq = nextIds('last_endpoint_seq', accountId, 1);
    return stmt<unknown[], EndpointRow>(
      `INSERT INTO webhook_endpoints (account_id, seq, id, url, event_mask, description, secret, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${ENDPOINT_COLUMNS}`,
    ).get(accountId, seq, e.id, e.url, e.eventMask, e.description ?? null, e.secret, e.createdAt)!;
  });

  const remove = db.transaction((accountId: string, id: string): boolean => {
    if (!endpointById(accountId, id)) return false;
    stmt<[string, string], unknown>("DELETE FROM jobs WHERE kind = 'webhook.deliver' AND account_id = ? AND grp = ?").run(accountId, id);
    stmt<[string, string], unknown>('DELETE FROM webhook_endpoints WHERE account_id = ? AND id = ?').run(accountId, id);
    return true;
  });

  const retry = db.transaction((accountId: string, endpointId: string, id: string, now: number) => {
    const row = deliveryById(accountId, endpointId, id);
    if (!row) return undefined;
    const job = stmt<[string, number, string], { id: number; leased_until: number }>(
      "SELECT id, leased_until FROM jobs WHERE kind = 'webhook.deliver' AND account_id = ? AND ref = ? AND grp = ?",
    ).get(accountId, row.event_seq, endpointId);
    if (row.status !== 'pending') {
      // A finished delivery gets one more attempt, outside the schedule.
      stmt<[number, string, number], unknown>(
        "UPDATE webhook_deliveries SET status = 'pending', single_attempt = 1, next_attempt_at = ? WHERE endpoint_id = ? AND event_seq = ?",
      ).run(now, endpointId, row.event_seq);
    } else {
      stmt<[number, string, number], unknown>('UPDATE webhook_deliveries SET next_attempt_at = ? WHERE endpoint_id = ? AND event_seq = ?').run(now, endpointId, row.event_seq);
    }
    if (!job) {
      stmt<unknown[], unknown>("INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at) VALUES ('webhook.deliver', ?, ?, ?, ?, ?)").run(
        accountId, row.event_seq, endpointId, now, now,
      );
    } else if (job.leased_until <= now) {
      // A leased job is being attempted right now: that attempt is the retry.
      stmt<[number, number], unknown>('UPDATE jobs SET run_at = ? WHERE id = ?').run(now, job.id);
    }
    return toDelivery(deliveryById(accountId, endpointId, id)!);
  });

  const claim = db.transaction((now: number, leaseMs: number, max: number, busy: string): ClaimedDelivery[] => {
    const jobs = stmt<[number, number, number, string, number], { id: number }>(
      `UPDATE jobs SET leased_until = ?, attempts = attempts + 1
       WHERE id IN (
         SELECT id FROM jobs WHERE kind = 'webhook.deliver' AND run_at <= ? AND leased_until <= ?
           AND grp NOT IN (SELECT value FROM json_each(?)) ORDER BY run_at, id LIMIT ?)
       RETURNING id`,
    ).all(now + leaseMs, now, now, busy, max);
    const claimed: ClaimedDelivery[] = [];
    for (const job of jobs) {
      const row = stmt<[number], ClaimedRow>(
        `SELECT ${CLAIMED_COLUMNS} FROM jobs j
           JOIN webhook_deliveries d ON d.endpoint_id = j.grp AND d.event_seq = j.ref
           JOIN webhook_endpoints w ON w.id = d.endpoint_id
           JOIN events e ON e.account_id = d.account_id AND e.seq = d.event_seq
         WHERE j.id = ? AND d.status = 'pending'`,
      ).get(job.id);
      // Its delivery was finished or deleted meanwhile: nothing left to do.
      if (row) claimed.push(toClaimed(row));
      else stmt<[number], unknown>('DELETE FROM jobs WHERE id = ?').run(job.id);
    }
    return claimed;
  });

  const record = db.transaction((records: readonly AttemptRecord[]) => {
    for (const r of records) {
      const where = "WHERE endpoint_id = ? AND event_seq = ? AND status = 'pending'";
      if (r.outcome === 'retry') {
        stmt<unknown[], unknown>(
          `UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = ?, last_response_status = ?, last_error = ?, next_attempt_at = ? ${where}`,
        ).run(r.at, r.responseStatus ?? null, r.error ?? null, r.nextAttemptAt!, r.endpointId, r.eventSeq);
        stmt<[number, string | null, number], unknown>('UPDATE jobs SET run_at = ?, leased_until = 0, last_error = ? WHERE id = ?').run(
          r.nextAttemptAt!, r.error ?? null, r.jobId,
        );
        continue;
      }
      if (r.outcome === 'skipped') {
        stmt<unknown[], unknown>(
          `UPDATE webhook_deliveries SET status = 'failed', single_attempt = 0, last_error = ?, next_attempt_at = NULL ${where}`,
        ).run(r.error ?? null, r.endpointId, r.eventSeq);
      } else {
        stmt<unknown[], unknown>(
          `UPDATE webhook_deliveries SET status = ?, single_attempt = 0, attempts = attempts + 1, last_attempt_at = ?, last_response_status = ?,
             last_error = ?, next_attempt_at = NULL ${where}`,
        ).run(r.outcome === 'succeeded' ? 'succeeded' : 'failed', r.at, r.responseStatus ?? null, r.error ?? null, r.endpointId, r.eventSeq);
      }
      if (r.outcome === 'gone') {
        stmt<[string, string], unknown>('UPDATE webhook_endpoints SET disabled = 1, disabled_reason = ? WHERE id = ?').run(
          `The receiver answered 410 Gone at ${r.at}.`, r.endpointId,
        );
      }
      stmt<[number], unknown>('DELETE FROM jobs WHERE id = ?').run(r.jobId);
    }
  });

  return {
    async createWebhookEndpoint(accountId, endpoint, max) {
      const row = create.immediate(accountId, endpoint, max);
      return row && toEndpoint(row);
    },

    async getWebhookEndpoint(accountId, id) {
      const row = endpointById(accountId, id);
      return row && toEndpoint(row);
    },

    async listWebhookEndpoints({ accountId, limit, afterSeq = 0 }) {
      return stmt<[string, number, number], EndpointRow>(
        `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
      )
        .all(accountId, afterSeq, limit)
        .map(toEndpoint);
    },

    async updateWebhookEndpoint(accountId, id, patch) {
      const sets: string[] = [];
      const values: unknown[] = [];
      const set = (sql: string, value: unknown) => {
        sets.push(sql);
        values.push(value);
      };
      if (patch.url !== undefined) set('url = ?', patch.url);
      if (patch.eventMask !== undefined) set('event_mask = ?', patch.eventMask);
      if (patch.description !== undefined) set('description = ?', patch.description);
      // Whoever sets `disabled` decides: the service's reason (a 410) no longer applies.
      if (patch.disabled !== undefined) set('disabled = ?, disabled_reason = NULL', patch.disabled ? 1 : 0);
      if (sets.length === 0) {
        const row = endpointById(accountId, id);
        return row && toEndpoint(row);
      }
      const row = stmt<unknown[], EndpointRow>(
        `UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE id = ? AND account_id = ? RETURNING ${ENDPOINT_COLUMNS}`,
      ).get(...values, id, accountId);
      return row && toEndpoint(row);
    },

    async deleteWebhookEndpoint(accountId, id) {
      return remove.immediate(accountId, id);
    },

    async rotateWebhookSecret(accountId, id, secret, previousExpiresAt) {
      const row = stmt<[number, string, string, string], EndpointRow>(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = ?, secret = ?
         WHERE id = ? AND account_id = ? RETURNING ${ENDPOINT_COLUMNS}`,
      ).get(previousExpiresAt, secret, id, accountId);
      return row && toEndpoint(row);
    },

    async listWebhookDeliveries({ accountId, endpointId, limit, status, afterSeq = 0 }) {
      const rows = status
        ? stmt<[string, string, string, number, number], DeliveryRow>(
            `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_BY_STATUS_FROM}
             WHERE d.endpoint_id = ? AND d.account_id = ? AND d.status = ? AND d.event_seq > ? ORDER BY d.event_seq LIMIT ?`,
          ).all(endpointId, accountId, status, afterSeq, limit)
        : stmt<[string, string, number, number], DeliveryRow>(
            `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.endpoint_id = ? AND d.account_id = ? AND d.event_seq > ? ORDER BY d.event_seq LIMIT ?`,
          ).all(endpointId, accountId, afterSeq, limit);
      return rows.map(toDelivery);
    },

    async retryWebhookDelivery(accountId, endpointId, deliveryId, now) {
      return retry.immediate(accountId, endpointId, deliveryId, now);
    },

    async claimWebhookDeliveries(now, leaseMs, max, busyEndpoints) {
      const busy = JSON.stringify(busyEndpoints);
      // An idle worker polls often: look without the write lock first, take it only for work.
      const due = stmt<[number, number], unknown>("SELECT 1 FROM jobs WHERE kind = 'webhook.deliver' AND run_at <= ? AND leased_until <= ? LIMIT 1").get(now, now);
      return due === undefined ? [] : claim.immediate(now, leaseMs, max, busy);
    },

    async recordWebhookAttempts(records) {
      if (records.length > 0) record.immediate(records);
    },

    async webhookStats() {
      // A pending delivery is exactly one with a job; jobs are few (pending only) and carry the event's time.
      const row = stmt<[], { pending: number; oldest: number | null }>(
        "SELECT count(*) AS pending, min(created_at) AS oldest FROM jobs WHERE kind = 'webhook.deliver'",
      ).get()!;
      return { pending: row.pending, oldestCreatedAt: row.oldest === null ? undefined : new Date(row.oldest).toISOString() };
    },
  };
}
