// The webhook delivery worker every server process runs. It first fans the event log out to
// endpoints (changes append only their events; each endpoint has a cursor in the log), then
// claims due deliveries. It keeps up to `concurrency` attempts in flight, at most
// `endpointConcurrency` per endpoint and `accountConcurrency` per account: claims skip endpoints
// and accounts at their limit, so one slow or dead receiver, or one account's many, never holds
// back the others (webhook-slots.ts). A delivery that waited for a slot renews its lease before
// it is sent, and is dropped if the lease was lost: a live worker's delivery is never sent twice. Each attempt is signed (Standard Webhooks) with the
// endpoint's live secrets; outcomes are recorded in batches, each with its job's removal or
// rescheduling in one transaction. A failed attempt records only its category (DeliveryError): the
// detail, which may name what the host resolved to, goes to the server's log. A worker that dies mid-attempt leaves its jobs leased: they
// come due again when the lease ends and are sent again with the same webhook-id (at least once).
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { DeliveryError } from '../schemas/events.js';
import type { AttemptRecord, ClaimedDelivery, WebhookRepository } from '../store/webhooks.js';
import { DeliverySlots } from './webhook-slots.js';
import { hooks as tracingHooks, type TracingHooks } from '../tracing/switch.js';
import { tracedSend } from './webhook-tracing.js';
import { deliveryHeaders } from '../webhooks/signing.js';
import { eventJson } from './events.js';

/** What sending one delivery came to (src/webhooks/sender.ts makes the request). */
export type SendResult =
  | { kind: 'response'; status: number; retryAfterMs?: number | undefined }
  /** `reason` is for the server's log only. */
  | { kind: 'error'; category: DeliveryError; reason: string };
export type Send = (url: string, headers: Record<string, string>, body: string) => Promise<SendResult>;

export interface WebhookWorkerCounters {
  attempt(outcome: AttemptRecord['outcome'], seconds: number | undefined): void;
  endpointDisabled(): void;
}

export interface WebhookWorkerOptions {
  /** Seconds before each attempt (entry 0: the first). Its length is the number of attempts. */
  schedule: readonly number[];
  timeoutMs: number;
  concurrency: number;
  endpointConcurrency: number;
  /** Attempts in flight for one account (its share of `concurrency`). */
  accountConcurrency: number;
  pollMs?: number;
  /** ±20 % jitter source (tests make it exact). */
  random?: () => number;
}

export interface WebhookWorkerDeps {
  webhooks: Pick<WebhookRepository, 'fanOut' | 'claim' | 'record' | 'renewLease' | 'release'>;
  clock: Clock;
  log: FastifyBaseLogger;
  send: Send;
  counters: WebhookWorkerCounters;
  options: WebhookWorkerOptions;
}

const POLL_MS = 200;
/** After a claim that found nothing, wakes wait this long: a burst of changes without endpoints costs ~50 empty claims/s, not one per change. */
const EMPTY_CLAIM_PAUSE_MS = 20;
/** Claims at once: small, so deliveries waiting in memory for a busy endpoint stay few. */
const CLAIM_MAX = 16;
/** Events one fan-out passes per endpoint (one transaction): a long backlog goes in steps. */
const FAN_OUT_MAX = 1000;
/** Lease left after an attempt's deadline, to record it: a delivery with less is renewed before it is sent. */
const RECORD_MARGIN_MS = 10_000;
/** A batch of records that failed is tried again this often, this many times (its leases still hold). */
const RECORD_RETRY_MS = 1000;
const RECORD_TRIES = 5;

/** Why an answer (or no answer) is a failure, as the delivery records it (the status is recorded beside it). */
const failureOf = (result: SendResult): DeliveryError => (result.kind === 'error' ? result.category : 'http_status');

/**
 * What an attempt's result comes to: a 2xx succeeded, a 410 is gone (the endpoint is disabled),
 * anything else is retried after `delay(attempts made)` while the schedule lasts (never sooner
 * than a 429's or 503's Retry-After), and failed once it has run out or for a single attempt.
 */
export function outcomeOf(d: ClaimedDelivery, result: SendResult, at: string, now: number, schedule: readonly number[], delay: (attempt: number) => number): AttemptRecord {
  const status = result.kind === 'response' ? result.status : undefined;
  if (status !== undefined && status >= 200 && status < 300) return attemptRecord(d, at, 'succeeded', status);
  if (status === 410) return attemptRecord(d, at, 'gone', 410, 'http_status');
  const error = failureOf(result);
  const made = d.attempts + 1;
  if (d.singleAttempt || made >= schedule.length) return attemptRecord(d, at, 'failed', status, error);
  const retryAfter = result.kind === 'response' && (status === 429 || status === 503) ? result.retryAfterMs : undefined;
  return attemptRecord(d, at, 'retry', status, error, now + Math.max(delay(made), retryAfter ?? 0));
}

/** One literal for every outcome: `{ ...base, outcome }` gives each record a hidden class of its own on Node 20, and the recorder's code went megamorphic. */
const attemptRecord = (d: ClaimedDelivery, at: string, outcome: AttemptRecord['outcome'], responseStatus?: number, error?: string, nextAttemptAt?: number): AttemptRecord => ({
  jobId: d.jobId,
  accountId: d.accountId,
  endpointId: d.endpointId,
  eventSeq: d.eventSeq,
  at,
  outcome,
  responseStatus,
  error,
  nextAttemptAt,
});

/** Attempt records, written in batches (one transaction each) while attempts go on. */
class Recorder {
  private readonly records: AttemptRecord[] = [];
  private recording: Promise<void> | undefined;

  constructor(
    private readonly webhooks: WebhookWorkerDeps['webhooks'],
    private readonly warn: (err: unknown, message: string) => void,
    private readonly drained: () => void,
  ) {}

  idle = (): boolean => !this.recording && this.records.length === 0;

  /** A failure under load (a pool wait, a lock timeout) is tried again while the leases hold: giving up means sending again. */
  private async recordWithRetries(batch: AttemptRecord[]): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.webhooks.record(batch);
      } catch (err) {
        if (tries >= RECORD_TRIES) throw err;
        this.warn(err, 'webhook worker: could not record attempts; trying again');
        await new Promise((resolve) => setTimeout(resolve, RECORD_RETRY_MS));
      }
    }
  }

  add(record: AttemptRecord): void {
    this.records.push(record);
    setImmediate(() => void this.flush());
  }

  /** Records what has accumulated; attempts made meanwhile go in the next batch. */
  flush(): Promise<void> {
    if (this.recording) return this.recording;
    if (this.records.length === 0) return Promise.resolve();
    const batch = this.records.splice(0, this.records.length);
    this.recording = this.recordWithRetries(batch)
      // Unrecorded attempts stay leased and are made again when the lease ends (same webhook-id).
      .catch((err: unknown) => this.warn(err, 'webhook worker: could not record attempts; they will be made again'))
      .finally(() => {
        this.recording = undefined;
        if (this.records.length > 0) void this.flush();
        else this.drained();
      });
    return this.recording;
  }
}

class DeliveryWorker {
  private readonly random: () => number;
  private readonly pollMs: number;
  /** A claimed delivery may wait for one round of its endpoint's attempts, then make its own. */
  private readonly leaseMs: number;
  private readonly slots: DeliverySlots;
  private readonly recorder: Recorder;
  /** Read once: tracing off costs the attempt one check. */
  private readonly tracing = tracingHooks;
  private claiming = false;
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private lastErrorLogged = 0;
  private lastEmptyClaim = 0;
  // Fan out when told something changed here (wake), when the last one left more, or once a
  // poll interval (other processes' changes); not on every finished attempt.
  private fanOutWanted = true;
  private lastFanOut = 0;
  private idle: (() => void) | undefined;

  constructor(private readonly deps: WebhookWorkerDeps) {
    const { options } = deps;
    this.random = options.random ?? Math.random;
    this.pollMs = options.pollMs ?? POLL_MS;
    this.leaseMs = 2 * options.timeoutMs + 10_000;
    this.slots = new DeliverySlots(options.endpointConcurrency, options.accountConcurrency);
    this.recorder = new Recorder(deps.webhooks, (err, message) => this.warn(err, message), () => this.checkIdle());
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Something may be due now (a change in this process, a manual retry): look soon instead of at the next poll. */
  wake(): void {
    // One look for a burst of changes, and fewer still while there is nothing to deliver.
    this.fanOutWanted = true;
    if (this.stopped || this.wakeTimer) return;
    const delay = Math.max(5, this.lastEmptyClaim + EMPTY_CLAIM_PAUSE_MS - this.deps.clock.now());
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      void this.pump();
    }, delay);
    this.wakeTimer.unref();
  }

  /** Stops claiming and waits for the attempts in hand to finish and be recorded (SIGTERM loses nothing). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.wakeTimer);
    // Given back now rather than when their leases end: another worker can take them at once.
    await this.release(this.slots.dropWaiting());
    await new Promise<void>((resolve) => {
      this.idle = resolve;
      this.checkIdle();
    });
    await this.recorder.flush();
  }

  private delayBefore(attempt: number): number {
    const base = (this.deps.options.schedule[attempt] ?? 0) * 1000;
    return Math.round(base * (0.8 + 0.4 * this.random()));
  }

  private async release(dropped: readonly ClaimedDelivery[]): Promise<void> {
    if (dropped.length === 0) return;
    // Not given back: they come due when their leases end.
    await this.deps.webhooks.release(dropped).catch((err: unknown) => this.warn(err, 'webhook worker: could not give back deliveries'));
  }

  /** True when the lease outlasts the attempt and its recording, renewing it if need be; false when it was lost. */
  private async leaseHeld(d: ClaimedDelivery): Promise<boolean> {
    const { clock, webhooks, options, log } = this.deps;
    const now = clock.now();
    if (d.leasedUntil - now >= options.timeoutMs + RECORD_MARGIN_MS) return true;
    const until = now + this.leaseMs;
    if (await webhooks.renewLease(d.jobId, d.leasedUntil, until)) {
      d.leasedUntil = until;
      return true;
    }
    log.info({ endpointId: d.endpointId, deliveryId: d.deliveryId }, 'webhook worker: a waiting delivery lost its lease; left to the worker that holds it');
    return false;
  }

  /** Makes one attempt and decides what it came to; undefined when the delivery is no longer this worker's. */
  private async attempt(d: ClaimedDelivery): Promise<AttemptRecord | undefined> {
    const { clock, send, counters, options } = this.deps;
    if (!(await this.leaseHeld(d))) return undefined;
    const startedAt = clock.now();
    const at = new Date(startedAt).toISOString();
    if (d.disabled) {
      return attemptRecord(d, at, 'skipped', undefined, 'endpoint_disabled');
    }
    if (d.secret === undefined) return this.unsigned(d, at);
    const body = eventJson(d.event);
    const timestamp = Math.floor(startedAt / 1000);
    const secrets = d.previousSecret !== undefined && (d.previousSecretExpiresAt ?? 0) > startedAt ? [d.secret, d.previousSecret] : [d.secret];
    const started = performance.now();
    const headers = deliveryHeaders(secrets, d.event.id, timestamp, body);
    const result = await (this.tracing ? tracedSend(this.tracing, d, headers, () => send(d.url, headers, body)) : send(d.url, headers, body));
    const seconds = (performance.now() - started) / 1000;
    if (result.kind === 'error') {
      // The owner sees the category only; operators get what it hides.
      this.deps.log.info(
        { accountId: d.accountId, endpointId: d.endpointId, deliveryId: d.deliveryId, eventId: d.event.id, category: result.category, reason: result.reason },
        'webhook attempt failed',
      );
    }
    const record = outcomeOf(d, result, at, clock.now(), options.schedule, (attempt) => this.delayBefore(attempt));
    counters.attempt(record.outcome, seconds);
    if (record.outcome === 'gone') counters.endpointDisabled();
    return record;
  }

  /** A delivery whose secret cannot be opened (a wrong or missing sealing key) fails unsent, on the schedule: an operator's fix lets its retries through. */
  private unsigned(d: ClaimedDelivery, at: string): AttemptRecord {
    const { clock, counters, options, log } = this.deps;
    log.error(
      { accountId: d.accountId, endpointId: d.endpointId, deliveryId: d.deliveryId, eventId: d.event.id, category: 'signing_failed', reason: d.secretProblem },
      'webhook attempt not sent: its signing secret cannot be opened; check PETSTORE_SECRET_KEY (and PETSTORE_SECRET_KEY_PREVIOUS during a key rotation)',
    );
    const record = outcomeOf(d, { kind: 'error', category: 'signing_failed', reason: d.secretProblem ?? '' }, at, clock.now(), options.schedule, (attempt) => this.delayBefore(attempt));
    counters.attempt(record.outcome, undefined);
    return record;
  }

  private warn(err: unknown, message: string): void {
    const now = this.deps.clock.now();
    if (now - this.lastErrorLogged > 10_000) {
      this.lastErrorLogged = now;
      this.deps.log.warn({ err }, message);
    }
  }

  private checkIdle(): void {
    if (this.idle && this.slots.inFlight === 0 && this.slots.waitingCount === 0 && !this.claiming && this.recorder.idle()) this.idle();
  }

  private begin(d: ClaimedDelivery): void {
    this.slots.started(d);
    this.attempt(d)
      .then(
        (record) => record && this.recorder.add(record),
        (err: unknown) => this.warn(err, 'webhook worker: attempt failed unexpectedly; it will be retried when its lease ends'),
      )
      .finally(() => this.finished(d));
  }

  private finished(d: ClaimedDelivery): void {
    const next = this.slots.finished(d);
    // With a waiting delivery started, the endpoint is at its limit again: a claim now would
    // skip it and scan every due job of it for nothing (per attempt: quadratic in a backlog).
    // Other endpoints' jobs are claimed by the next poll, a wake, or an attempt with none waiting.
    if (next) this.begin(next);
    else if (!this.stopped) void this.pump();
    this.checkIdle();
  }

  // Waiting deliveries take no room: their accounts or endpoints are at their limit, which claims skip.
  private room = (): number => this.deps.options.concurrency - this.slots.inFlight;

  /** Fans out; true when it left more to fan out. */
  private async fanOut(): Promise<boolean> {
    this.fanOutWanted = false;
    this.lastFanOut = this.deps.clock.now();
    const more = (await this.deps.webhooks.fanOut(FAN_OUT_MAX)) >= FAN_OUT_MAX;
    if (more) this.fanOutWanted = true;
    return more;
  }

  /** Claims as much as there is room for; true when claiming again at once may find more. */
  private async claim(): Promise<boolean> {
    const room = this.room();
    if (room <= 0) return false;
    const max = Math.min(room, CLAIM_MAX);
    const claimed = await this.deps.webhooks.claim(this.deps.clock.now(), this.leaseMs, max, this.slots.busyEndpoints(), this.slots.busyAccounts());
    const released: ClaimedDelivery[] = [];
    for (const d of claimed) {
      const taken = this.slots.take(d);
      if (taken === 'start') this.begin(d);
      else if (taken === 'release') released.push(d);
    }
    void this.release(released);
    if (claimed.length === 0) this.lastEmptyClaim = this.deps.clock.now();
    // Claim again at once only if an endpoint just claimed for has room left: when all are at
    // their limit the next claim would skip them, scanning their due jobs for nothing (a poll,
    // a wake or a finished attempt looks again soon enough for other endpoints).
    return claimed.length === max && claimed.some((d) => this.slots.hasRoom(d));
  }

  /** Fans out what is due, then claims as much as there is room for; polls again later when nothing was due. */
  private async pump(): Promise<void> {
    if (this.claiming || this.stopped) return;
    // Fanning out does not need room here: its deliveries may go to another process.
    const fanOutDue = this.fanOutWanted || this.deps.clock.now() - this.lastFanOut >= this.pollMs;
    if (!fanOutDue && this.room() <= 0) return;
    this.claiming = true;
    let more = false;
    let full = false;
    try {
      if (fanOutDue) more = await this.fanOut();
      full = await this.claim();
    } catch (err) {
      this.warn(err, 'webhook worker: could not fan out or claim deliveries; retrying');
    } finally {
      this.claiming = false;
    }
    // A backlog goes on at once. Changes woken for meanwhile wait a little, like wakes do, so a
    // burst of creates costs a fan-out per EMPTY_CLAIM_PAUSE_MS, not one per pump.
    if (full || more) setImmediate(() => void this.pump());
    else this.schedule(this.fanOutWanted ? EMPTY_CLAIM_PAUSE_MS : this.pollMs);
    this.checkIdle();
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.pump(), delay);
    this.timer.unref();
  }
}

export function createWebhookWorker(deps: WebhookWorkerDeps) {
  const worker = new DeliveryWorker(deps);
  return {
    start: (): void => worker.start(),
    wake: (): void => worker.wake(),
    stop: (): Promise<void> => worker.stop(),
  };
}

export type WebhookWorker = ReturnType<typeof createWebhookWorker>;
