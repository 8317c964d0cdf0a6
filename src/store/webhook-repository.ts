// The webhook repository over a backend's SQL (WebhookSql, src/store/<backend>/webhooks.ts):
// the rows both backends read alike, and every rule once: the endpoint limit, the fan-out
// policy, what a claim hands out, what an attempt's outcome does to its delivery.
import type { DeliveryStatus, EventType } from '../schemas/events.js';
import type { Sql, SqlDatabase } from './core/sql.js';
import { eventAt, type EventRow, holds, idIn, runData, runOf, traceAt } from './event-log.js';
import type { AlsoInTransaction, AttemptRecord, ClaimedDelivery, ListDeliveriesQuery, StoredDelivery, StoredWebhookEndpoint, WebhookEndpointPatch, WebhookRepository, WebhookStats } from './webhooks.js';
import type { Sealed, SecretBox } from '../webhooks/secret-box.js';
import { openedSecrets, resealSecrets, type SealedEndpointRecord } from './webhook-secrets.js';

export interface EndpointRow {
  seq: number;
  id: string;
  url: string;
  event_mask: number;
  description: string | null;
  disabled: number | boolean;
  disabled_reason: string | null;
  previous_secret_expires_at: number | null;
  created_at: string;
}

// Secrets are not among them: only the delivery worker's claims open them (CLAIMED_COLUMNS).
export const ENDPOINT_COLUMNS = 'seq, id, url, event_mask, description, disabled, disabled_reason, previous_secret_expires_at, created_at';

const toEndpoint = (row: EndpointRow): StoredWebhookEndpoint => ({
  seq: row.seq,
  id: row.id,
  url: row.url,
  eventMask: row.event_mask,
  description: row.description ?? undefined,
  disabled: Boolean(row.disabled),
  disabledReason: row.disabled_reason ?? undefined,
  previousSecretExpiresAt: row.previous_secret_expires_at ?? undefined,
  createdAt: row.created_at,
});

export interface DeliveryRow {
  id: string;
  event_seq: number;
  run_seq: number;
  run_id: string;
  run_more_ids: string | null;
  event_type: EventType;
  status: DeliveryStatus;
  attempts: number;
  last_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
}

/** Columns of webhook_deliveries d joined with the log's row e holding its event (DELIVERY_EVENT_JOIN). */
export const DELIVERY_COLUMNS =
  'd.id, d.event_seq, e.seq AS run_seq, e.id AS run_id, e.more_ids AS run_more_ids, e.type AS event_type, d.status, d.attempts, d.last_attempt_at, d.last_response_status, d.last_error, d.next_attempt_at';

/** SQL: the join of a delivery d to the event-log row e holding its event. */
export const DELIVERY_EVENT_JOIN = `JOIN events e ON e.account_id = d.account_id AND e.seq = ${runOf('d.account_id', 'd.event_seq')}`;

const toDelivery = (row: DeliveryRow): StoredDelivery => ({
  id: row.id,
  eventSeq: row.event_seq,
  eventId: idIn({ seq: row.run_seq, id: row.run_id, more_ids: row.run_more_ids }, row.event_seq),
  eventType: row.event_type,
  status: row.status,
  attempts: row.attempts,
  lastAttemptAt: row.last_attempt_at ?? undefined,
  lastResponseStatus: row.last_response_status ?? undefined,
  lastError: row.last_error ?? undefined,
  nextAttemptAt: row.status === 'pending' && row.next_attempt_at !== null ? new Date(row.next_attempt_at).toISOString() : undefined,
});

/** A leased job j with its pending delivery d, endpoint w and the log's row e holding its event; d's, w's and e's columns are null when gone. */
export interface ClaimedRow {
  job_id: number;
  delivery_id: string | null;
  account_id: string | null;
  endpoint_id: string | null;
  event_seq: number;
  attempts: number;
  single_attempt: number | boolean;
  url: string;
  disabled: number | boolean;
  secret: string;
  secret_key_id: string | null;
  previous_secret: string | null;
  previous_secret_key_id: string | null;
  previous_secret_expires_at: number | null;
  run_seq: number | null;
  run_span: number | null;
  run_id: string | null;
  run_more_ids: string | null;
  event_type: EventType;
  event_created_at: string;
  event_data: string;
  event_trace: string | null;
}

/** What a claim selects for a job j (CLAIMED_JOINS). */
export const CLAIMED_COLUMNS =
  'j.id AS job_id, d.id AS delivery_id, d.account_id, d.endpoint_id, d.event_seq, d.attempts, d.single_attempt, w.url, w.disabled, w.secret, w.secret_key_id, ' +
  'w.previous_secret, w.previous_secret_key_id, w.previous_secret_expires_at, e.seq AS run_seq, e.span AS run_span, e.id AS run_id, e.more_ids AS run_more_ids, ' +
  'e.type AS event_type, e.created_at AS event_created_at, e.data AS event_data, e.trace AS event_trace';

/** SQL: a job j joined to its pending delivery d, d's endpoint w, and the log's row e holding d's event. */
export const CLAIMED_JOINS = `LEFT JOIN webhook_deliveries d ON d.endpoint_id = j.grp AND d.event_seq = j.ref AND d.status = 'pending'
  LEFT JOIN webhook_endpoints w ON w.id = d.endpoint_id
  LEFT JOIN events e ON e.account_id = d.account_id AND e.seq = ${runOf('d.account_id', 'd.event_seq')}`;

/**
 * Claimed rows to deliveries; a row whose delivery or event is gone (finished meanwhile, or
 * pruned) is left out and its job id returned in `orphans`. A run's data is parsed once; the
 * secrets are opened here (a secret that cannot be opened fails that delivery, not the claim).
 */
export function toClaimedDeliveries(rows: readonly ClaimedRow[], leasedUntil: number, secrets: SecretBox): { claimed: ClaimedDelivery[]; orphans: number[] } {
  const claimed: ClaimedDelivery[] = [];
  const orphans: number[] = [];
  const runs = new Map<string, string[]>();
  for (const row of rows) {
    const run: EventRow | undefined =
      row.run_seq === null
        ? undefined
        : { seq: row.run_seq, span: row.run_span!, id: row.run_id!, more_ids: row.run_more_ids, type: row.event_type, created_at: row.event_created_at, data: row.event_data };
    if (row.endpoint_id === null || row.account_id === null || row.delivery_id === null || !run || !holds(run, row.event_seq)) {
      orphans.push(row.job_id);
      continue;
    }
    const key = `${row.account_id}\n${run.seq}`;
    let data = runs.get(key);
    if (!data) runs.set(key, (data = runData(run)));
    // Only a traced event's delivery carries a trace (tracing off: the field is absent).
    const trace = traceAt(row.event_trace, row.event_seq - run.seq);
    claimed.push({
      jobId: row.job_id,
      deliveryId: row.delivery_id,
      leasedUntil,
      accountId: row.account_id,
      endpointId: row.endpoint_id,
      eventSeq: row.event_seq,
      attempts: row.attempts,
      singleAttempt: Boolean(row.single_attempt),
      url: row.url,
      disabled: Boolean(row.disabled),
      ...openedSecrets(secrets, row, row.endpoint_id),
      previousSecretExpiresAt: row.previous_secret_expires_at ?? undefined,
      event: eventAt(run, row.event_seq, data),
      ...(trace === undefined ? {} : { trace }),
    });
  }
  return { claimed, orphans };
}

/** What an attempt's outcome does to its delivery, its job and its endpoint; both backends apply it as it is. */
export interface Settlement {
  jobId: number;
  endpointId: string;
  eventSeq: number;
  /** The delivery's status after: still `pending` (its job due again at nextAttemptAt), or finished (its job removed). */
  status: 'pending' | 'succeeded' | 'failed';
  /** An attempt was made: counted, with its time and response; a skipped delivery keeps its last ones. */
  attempted: boolean;
  at: string;
  responseStatus: number | null;
  error: string | null;
  /** Epoch ms, while pending. */
  nextAttemptAt: number | null;
  /** The endpoint is disabled for this reason (it answered 410 Gone). */
  disabledReason: string | null;
}

export function settle(r: AttemptRecord): Settlement {
  const retry = r.outcome === 'retry';
  return {
    jobId: r.jobId,
    endpointId: r.endpointId,
    eventSeq: r.eventSeq,
    status: retry ? 'pending' : r.outcome === 'succeeded' ? 'succeeded' : 'failed',
    attempted: r.outcome !== 'skipped',
    at: r.at,
    responseStatus: r.responseStatus ?? null,
    error: r.error ?? null,
    nextAttemptAt: retry ? r.nextAttemptAt! : null,
    disabledReason: r.outcome === 'gone' ? `The receiver answered 410 Gone at ${r.at}.` : null,
  };
}

/** An endpoint's part of one fan-out: its events in (after, upto]. */
export interface FanOutStep {
  endpointId: string;
  accountId: string;
  eventMask: number;
  after: number;
  upto: number;
}

/** An endpoint change as columns to set; `resume`: the endpoint is re-enabled (its cursor skips what it missed). */
export interface EndpointChanges {
  set: Array<[column: 'url' | 'event_mask' | 'description' | 'disabled' | 'disabled_reason', value: string | number | boolean | null]>;
  resume: boolean;
}

/** The backlog's two parts: jobs (count, oldest event time in ms) and events not fanned out yet (count, oldest ISO time). */
export interface StatsRow {
  jobs: number;
  oldest_job: number | null;
  unfanned: number | null;
  oldest_unfanned: string | null;
}

/** What a backend provides: its SQL. Methods with `tx` run in the repository's transaction. */
export interface WebhookSql {
  /** Holds the account's endpoints still until `tx` ends; false for an unknown account. */
  lockAccount(tx: Sql, accountId: string): Promise<boolean>;
  countEndpoints(tx: Sql, accountId: string): Promise<number>;
  nextEndpointSeq(tx: Sql, accountId: string): Promise<number>;
  /** Its cursor at the account's last event: deliveries start with the next one. */
  insertEndpoint(tx: Sql, accountId: string, seq: number, endpoint: SealedEndpointRecord): Promise<EndpointRow>;
  endpoint(accountId: string, id: string): Promise<EndpointRow | undefined>;
  endpoints(accountId: string, afterSeq: number, limit: number): Promise<EndpointRow[]>;
  updateEndpoint(tx: Sql, accountId: string, id: string, changes: EndpointChanges): Promise<EndpointRow | undefined>;
  /** The current secret (and its key id) becomes the previous one; `secret` the current one. */
  rotateSecret(tx: Sql, accountId: string, id: string, secret: Sealed, previousExpiresAt: number): Promise<EndpointRow | undefined>;
  deleteEndpointJobs(tx: Sql, accountId: string, id: string): Promise<void>;
  /** With its deliveries; false when there was none. */
  deleteEndpoint(tx: Sql, accountId: string, id: string): Promise<boolean>;
  deliveries(query: ListDeliveriesQuery & { afterSeq: number }): Promise<DeliveryRow[]>;
  /** The delivery's event and status, locked until `tx` ends. */
  lockDelivery(tx: Sql, accountId: string, endpointId: string, id: string): Promise<{ event_seq: number; status: DeliveryStatus } | undefined>;
  /** Pending and due at `now`; a finished delivery becomes a single attempt. */
  deliveryDue(tx: Sql, endpointId: string, eventSeq: number, now: number): Promise<void>;
  delivery(tx: Sql, accountId: string, endpointId: string, id: string): Promise<DeliveryRow | undefined>;
  /** The delivery's job, locked until `tx` ends. */
  job(tx: Sql, accountId: string, endpointId: string, eventSeq: number): Promise<{ id: number; leased_until: number; run_at: number } | undefined>;
  insertJob(tx: Sql, accountId: string, endpointId: string, eventSeq: number, now: number): Promise<void>;
  jobDue(tx: Sql, jobId: number, now: number): Promise<void>;
  /** Whether any enabled endpoint is behind its account's last event (read without locking). */
  anyBehind(): Promise<boolean>;
  /** Those endpoints, locked until `tx` ends (PostgreSQL: skipping those another instance holds). */
  lockBehind(tx: Sql): Promise<Array<{ id: string; account_id: string; event_mask: number; fanned_seq: number; last_event_seq: number }>>;
  /** A pending delivery and its job, due at its event's time, for each event of a step of the endpoint's kinds, unless the delivery exists. */
  deliver(tx: Sql, steps: readonly FanOutStep[], now: number): Promise<void>;
  moveCursors(tx: Sql, steps: readonly FanOutStep[]): Promise<void>;
  /** Leases due jobs (ClaimedRow per job leased, with what it joins), none of the busy endpoints' or accounts'. */
  lease(now: number, leaseMs: number, max: number, busyEndpoints: readonly string[], busyAccounts: readonly string[]): Promise<ClaimedRow[]>;
  deleteJobs(ids: readonly number[]): Promise<void>;
  /** Applies the settlements in one transaction, each only to a delivery still pending. */
  settle(settlements: readonly Settlement[]): Promise<void>;
  stats(): Promise<StatsRow>;
}

/** An endpoint patch as columns (the same rules on both backends). */
function endpointChanges(patch: WebhookEndpointPatch): EndpointChanges {
  const set: EndpointChanges['set'] = [];
  if (patch.url !== undefined) set.push(['url', patch.url]);
  if (patch.eventMask !== undefined) set.push(['event_mask', patch.eventMask]);
  if (patch.description !== undefined) set.push(['description', patch.description]);
  // Whoever sets `disabled` decides: the service's reason (a 410) no longer applies.
  if (patch.disabled !== undefined) set.push(['disabled', patch.disabled], ['disabled_reason', null]);
  // Re-enabled: deliveries resume with the account's next event, not the ones missed meanwhile.
  return { set, resume: patch.disabled === false };
}

/** The backlog from its parts: the oldest of the two times. */
function statsOf(row: StatsRow): WebhookStats {
  const oldest = [row.oldest_job === null ? undefined : new Date(row.oldest_job).toISOString(), row.oldest_unfanned ?? undefined]
    .filter((t): t is string => t !== undefined)
    .sort()[0];
  return { pending: row.jobs + Number(row.unfanned ?? 0), oldestCreatedAt: oldest };
}

/** The fan-out policy: endpoints behind, each in a step of at most `max` events, cursors moved in the same transaction. */
async function fanOut(db: Pick<SqlDatabase, 'transaction'>, sql: WebhookSql, max: number): Promise<number> {
  // Polled often: look without locking first.
  if (!(await sql.anyBehind())) return 0;
  const now = Date.now();
  return db.transaction(async (tx) => {
    const steps: FanOutStep[] = (await sql.lockBehind(tx)).map((w) => ({
      endpointId: w.id, accountId: w.account_id, eventMask: w.event_mask, after: w.fanned_seq, upto: Math.min(w.last_event_seq, w.fanned_seq + max),
    }));
    if (steps.length === 0) return 0;
    // Every event up to last_event_seq is committed: the counter and the events commit together.
    await sql.deliver(tx, steps, now);
    await sql.moveCursors(tx, steps);
    return steps.reduce((passed, step) => passed + step.upto - step.after, 0);
  });
}

/** Due now; a leased job is being attempted right now: that attempt is the retry. */
async function retryDelivery(tx: Sql, sql: WebhookSql, accountId: string, endpointId: string, id: string, now: number): Promise<StoredDelivery | undefined> {
  const delivery = await sql.lockDelivery(tx, accountId, endpointId, id);
  if (!delivery) return undefined;
  await sql.deliveryDue(tx, endpointId, delivery.event_seq, now);
  const job = await sql.job(tx, accountId, endpointId, delivery.event_seq);
  if (!job) await sql.insertJob(tx, accountId, endpointId, delivery.event_seq, now);
  else if (job.leased_until <= now || job.run_at > now) await sql.jobDue(tx, job.id, now);
  return toDelivery((await sql.delivery(tx, accountId, endpointId, id))!);
}

// A lease is the worker's while leased_until is the value it set: once it ended, another worker's
// claim sets its own (the same in the same millisecond only by a coincidence of both clocks).
const RENEW_LEASE = "UPDATE jobs SET leased_until = ? WHERE id = ? AND kind = 'webhook.deliver' AND leased_until = ?";
// The claim counted an attempt; a lease given back made none.
const RELEASE_LEASE = "UPDATE jobs SET leased_until = 0, attempts = attempts - 1 WHERE id = ? AND kind = 'webhook.deliver' AND leased_until = ?";

/** The endpoint a change returned, after the rest of its transaction (`also`) when there was one. */
async function changed(tx: Sql, row: EndpointRow | undefined, also: AlsoInTransaction | undefined): Promise<StoredWebhookEndpoint | undefined> {
  if (row) await also?.(tx);
  return row && toEndpoint(row);
}

export function createWebhookRepository(db: Pick<SqlDatabase, 'transaction' | 'run' | 'all'>, sql: WebhookSql, secrets: SecretBox): WebhookRepository {
  const endpoint = (row: EndpointRow | undefined) => row && toEndpoint(row);
  return {
    createEndpoint: (accountId, e, max, also) =>
      db.transaction(async (tx) => {
        // The account's lock serializes its creates, so the limit holds under concurrency; the
        // counter moves only for an endpoint that is made.
        if (!(await sql.lockAccount(tx, accountId)) || (await sql.countEndpoints(tx, accountId)) >= max) return undefined;
        const sealed = { ...e, secret: secrets.seal(e.secret, e.id) };
        const made = toEndpoint(await sql.insertEndpoint(tx, accountId, await sql.nextEndpointSeq(tx, accountId), sealed));
        await also?.(tx);
        return made;
      }),
    getEndpoint: async (accountId, id) => endpoint(await sql.endpoint(accountId, id)),
    listEndpoints: async ({ accountId, limit, afterSeq = 0 }) => (await sql.endpoints(accountId, Math.floor(afterSeq), limit)).map(toEndpoint),
    async updateEndpoint(accountId, id, patch, also) {
      const changes = endpointChanges(patch);
      if (changes.set.length === 0) return endpoint(await sql.endpoint(accountId, id));
      return db.transaction(async (tx) => changed(tx, await sql.updateEndpoint(tx, accountId, id, changes), also));
    },
    deleteEndpoint: (accountId, id, also) =>
      db.transaction(async (tx) => {
        await sql.deleteEndpointJobs(tx, accountId, id);
        const deleted = await sql.deleteEndpoint(tx, accountId, id);
        if (deleted) await also?.(tx);
        return deleted;
      }),
    rotateSecret: (accountId, id, secret, previousExpiresAt, also) =>
      db.transaction(async (tx) => changed(tx, await sql.rotateSecret(tx, accountId, id, secrets.seal(secret, id), previousExpiresAt), also)),
    listDeliveries: async (query) => (await sql.deliveries({ ...query, afterSeq: Math.floor(query.afterSeq ?? 0) })).map(toDelivery),
    retryDelivery: (accountId, endpointId, id, now) => db.transaction((tx) => retryDelivery(tx, sql, accountId, endpointId, id, now)),
    fanOut: (max) => fanOut(db, sql, max),
    async claim(now, leaseMs, max, busyEndpoints, busyAccounts = []) {
      const { claimed, orphans } = toClaimedDeliveries(await sql.lease(now, leaseMs, max, busyEndpoints, busyAccounts), now + leaseMs, secrets);
      // A delivery finished or deleted meanwhile, or an event pruned: nothing left to do.
      if (orphans.length > 0) await sql.deleteJobs(orphans);
      return claimed;
    },
    renewLease: async (jobId, heldUntil, until) => (await db.run(RENEW_LEASE, [until, jobId, heldUntil])) === 1,
    async release(leases) {
      if (leases.length === 0) return;
      await db.transaction(async (tx) => {
        for (const { jobId, leasedUntil } of leases) await tx.run(RELEASE_LEASE, [jobId, leasedUntil]);
      });
    },
    async record(records) {
      if (records.length > 0) await sql.settle(records.map(settle));
    },
    stats: async () => statsOf(await sql.stats()),
    resealSecrets: (scope) => resealSecrets(db, secrets, scope),
  };
}
