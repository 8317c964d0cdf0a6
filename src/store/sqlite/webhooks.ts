// Webhook endpoints and deliveries on SQLite. The worker's fan-out turns the event log into
// deliveries, each endpoint from its cursor (fanned_seq) on. Deliveries are attempted through
// the jobs table (kind webhook.deliver), leased like message jobs; an attempt's outcome and its
// job's removal or rescheduling commit together, guarded by status = 'pending', so a delivery
// finishes once.
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
import { typesOf } from '../../schemas/events.js';
import type { AttemptRecord, ClaimedDelivery, WebhookRepository } from '../types.js';
import type { SqliteContext } from './orders.js';

/** Enabled endpoints whose cursor is behind their account's last event (what the fan-out has to do), with `join` if given. */
const behind = (join = '') => `webhook_endpoints w JOIN accounts a ON a.id = w.account_id ${join} WHERE w.disabled = 0 AND w.fanned_seq < a.last_event_seq`;
const BEHIND = behind();
const DELIVERY_FROM = `webhook_deliveries d ${DELIVERY_EVENT_JOIN}`;
/** INDEXED BY must follow its table (and alias), before the JOIN: anywhere else it is a syntax error. */
const DELIVERY_BY_STATUS_FROM = `webhook_deliveries d INDEXED BY webhook_deliveries_by_status ${DELIVERY_EVENT_JOIN}`;

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
      // Deliveries start with the account's next event.
      `INSERT INTO webhook_endpoints (account_id, seq, id, url, event_mask, description, secret, created_at, fanned_seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, (SELECT last_event_seq FROM accounts WHERE id = ?)) RETURNING ${ENDPOINT_COLUMNS}`,
    ).get(accountId, seq, e.id, e.url, e.eventMask, e.description ?? null, e.secret, e.createdAt, accountId)!;
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

  interface DueEndpoint {
    id: string;
    account_id: string;
    event_mask: number;
    fanned_seq: number;
    last_event_seq: number;
  }
  const dueEndpoints = () =>
    stmt<[], DueEndpoint>(
      `SELECT w.id, w.account_id, w.event_mask, w.fanned_seq, a.last_event_seq FROM ${BEHIND}`,
    ).all();
  // In SQL, row by row in C: the events' time in ms, and time-ordered ids (prefix, ms in 12 hex, 20 random hex) as on PostgreSQL.
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
  const fanOut = db.transaction((now: number, max: number): number => {
    let passed = 0;
    for (const w of dueEndpoints()) {
      const upto = Math.min(w.last_event_seq, w.fanned_seq + max);
      const range = { account: w.account_id, after: w.fanned_seq, upto, mask: w.event_mask, types: JSON.stringify(typesOf(w.event_mask)), endpoint: w.id };
      // Jobs first, for events without a delivery yet: a delivery already there (written by a
      // version that fanned out at write time) keeps its own job.
      stmt<[typeof range], unknown>(
        `${LOG} INSERT INTO jobs (kind, account_id, ref, grp, run_at, created_at)
         SELECT 'webhook.deliver', e.account_id, e.seq, @endpoint, ${EVENT_MS}, ${EVENT_MS} FROM log e
         WHERE ${RANGE} AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = @endpoint AND d.event_seq = e.seq)`,
      ).run(range);
      stmt<[typeof range & { now: number }], unknown>(
        `${LOG} INSERT INTO webhook_deliveries (account_id, endpoint_id, event_seq, id, status, next_attempt_at, created_at)
         SELECT e.account_id, @endpoint, e.seq, printf('whd_%012x', @now) || lower(hex(randomblob(10))), 'pending', ${EVENT_MS}, e.created_at FROM log e
         WHERE ${RANGE} ON CONFLICT DO NOTHING`,
      ).run({ ...range, now });
      stmt<[number, string], unknown>('UPDATE webhook_endpoints SET fanned_seq = ? WHERE id = ?').run(upto, w.id);
      passed += upto - w.fanned_seq;
    }
    return passed;
  });

  const claim = db.transaction((now: number, leaseMs: number, max: number, busy: string): ClaimedDelivery[] => {
    const jobs = stmt<[number, number, number, string, number], { id: number }>(
      `UPDATE jobs SET leased_until = ?, attempts = attempts + 1
       WHERE id IN (
         SELECT id FROM jobs WHERE kind = 'webhook.deliver' AND run_at <= ? AND leased_until <= ?
           AND grp NOT IN (SELECT value FROM json_each(?)) ORDER BY run_at, id LIMIT ?)
       RETURNING id`,
    ).all(now + leaseMs, now, now, busy, max);
    const rows: ClaimedRow[] = [];
    const gone: number[] = [];
    for (const job of jobs) {
      const row = stmt<[number], ClaimedRow>(
        `SELECT ${CLAIMED_COLUMNS} FROM jobs j
           JOIN webhook_deliveries d ON d.endpoint_id = j.grp AND d.event_seq = j.ref
           JOIN webhook_endpoints w ON w.id = d.endpoint_id
           LEFT JOIN events e ON e.account_id = d.account_id AND e.seq = ${runOf('d.account_id', 'd.event_seq')}
         WHERE j.id = ? AND d.status = 'pending'`,
      ).get(job.id);
      if (row) rows.push(row);
      else gone.push(job.id);
    }
    // A delivery finished or deleted meanwhile, or an event pruned: nothing left to do.
    const { claimed, orphans } = toClaimedDeliveries(rows);
    for (const id of [...gone, ...orphans]) stmt<[number], unknown>('DELETE FROM jobs WHERE id = ?').run(id);
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
      // Re-enabled: deliveries resume with the account's next event, not the ones missed meanwhile.
      if (patch.disabled === false) sets.push('fanned_seq = CASE WHEN disabled = 1 THEN (SELECT last_event_seq FROM accounts WHERE id = account_id) ELSE fanned_seq END');
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

    async fanOutWebhookEvents(max) {
      // Polled often: look without the write lock first.
      return dueEndpoints().length === 0 ? 0 : fanOut.immediate(Date.now(), max);
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
      // Pending: deliveries with a job (jobs are few: pending only, carrying the event's time in
      // ms), and events past an enabled endpoint's cursor, not fanned out yet (each counted as a
      // delivery, though the endpoint's kinds may pass over some).
      const row = stmt<[], { jobs: number; oldest_job: number | null; unfanned: number | null; oldest_unfanned: string | null }>(
        `SELECT count(*) AS jobs, min(created_at) AS oldest_job,
                (SELECT sum(a.last_event_seq - w.fanned_seq) FROM ${BEHIND}) AS unfanned,
                (SELECT min(e.created_at) FROM ${behind(`JOIN events e ON e.account_id = w.account_id AND e.seq = ${runOf('w.account_id', 'w.fanned_seq + 1')}`)}) AS oldest_unfanned
         FROM jobs WHERE kind = 'webhook.deliver'`,
      ).get()!;
      return webhookStatsOf(row.jobs, row.oldest_job, row.unfanned, row.oldest_unfanned);
    },
  };
}
