// The webhook delivery worker every server process runs. It first fans the event log out to
// endpoints (changes write only their events; each endpoint has a cursor in the log), then
// claims due deliveries. It keeps up to `concurrency`
// attempts in flight, at most `endpointConcurrency` per endpoint: claims skip endpoints at
// their limit, so one slow or dead receiver never holds back the others. Each attempt is
// signed (Standard Webhooks) with the endpoint's live secrets; outcomes are recorded in
// batches, each with its job's removal or rescheduling in one transaction. A worker that dies
// mid-attempt leaves its jobs leased: they come due again when the lease ends and are sent
// again with the same webhook-id (at least once).
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { AttemptRecord, ClaimedDelivery, WebhookRepository } from '../store/webhooks.js';
import { signatureHeader } from '../webhooks/signing.js';
import { eventJson } from './events.js';

/** What sending one delivery came to (src/webhooks/sender.ts makes the request). */
export type SendResult = { kind: 'response'; status: number; retryAfterMs?: number | undefined } | { kind: 'error'; reason: string };
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
  pollMs?: number;
  /** ±20 % jitter source (tests make it exact). */
  random?: () => number;
}

const POLL_MS = 200;
/** After a claim that found nothing, wakes wait this long: a burst of changes without endpoints costs ~50 empty claims/s, not one per change. */
const EMPTY_CLAIM_PAUSE_MS = 20;
/** Claims at once: small, so deliveries waiting in memory for a busy endpoint stay few. */
const CLAIM_MAX = 16;
/** Events one fan-out passes per endpoint (one transaction): a long backlog goes in steps. */
const FAN_OUT_MAX = 1000;

export function createWebhookWorker(deps: { webhooks: Pick<WebhookRepository, 'fanOut' | 'claim' | 'record'>; clock: Clock; log: FastifyBaseLogger; send: Send; counters: WebhookWorkerCounters; options: WebhookWorkerOptions }) {
  const { webhooks, clock, log, send, counters, options } = deps;
  const random = options.random ?? Math.random;
  const pollMs = options.pollMs ?? POLL_MS;
  // A claimed delivery may wait for one round of its endpoint's attempts, then make its own.
  const leaseMs = 2 * options.timeoutMs + 10_000;
  const running = new Map<string, number>();
  const waiting = new Map<string, ClaimedDelivery[]>();
  let inFlight = 0;
  let waitingCount = 0;
  let claiming = false;
  let stopped = true;
  let timer: NodeJS.Timeout | undefined;
  let wakeTimer: NodeJS.Timeout | undefined;
  let lastErrorLogged = 0;
  let lastEmptyClaim = 0;
  // Fan out when told something changed here (wake), when the last one left more, or once a
  // poll interval (other processes' changes); not on every finished attempt.
  let fanOutWanted = true;
  let lastFanOut = 0;
  const records: AttemptRecord[] = [];
  let recording: Promise<void> | undefined;
  let idle: (() => void) | undefined;

  function delayBefore(attempt: number): number {
    const base = (options.schedule[attempt] ?? 0) * 1000;
    return Math.round(base * (0.8 + 0.4 * random()));
  }

  /** Makes one attempt and decides what it came to. */
  async function attempt(d: ClaimedDelivery): Promise<AttemptRecord> {
    const base = { jobId: d.jobId, accountId: d.accountId, endpointId: d.endpointId, eventSeq: d.eventSeq };
    const startedAt = clock.now();
    const at = new Date(startedAt).toISOString();
    if (d.disabled) return { ...base, outcome: 'skipped', at, error: 'The endpoint was disabled before this delivery was attempted.' };
    const body = eventJson(d.event);
    const timestamp = Math.floor(startedAt / 1000);
    const secrets = d.previousSecret !== undefined && (d.previousSecretExpiresAt ?? 0) > startedAt ? [d.secret, d.previousSecret] : [d.secret];
    const started = performance.now();
    const result = await send(d.url, {
      'webhook-id': d.event.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, d.event.id, timestamp, body),
    }, body);
    const seconds = (performance.now() - started) / 1000;
    let record: AttemptRecord;
    if (result.kind === 'response' && result.status >= 200 && result.status < 300) {
      record = { ...base, outcome: 'succeeded', at, responseStatus: result.status };
    } else if (result.kind === 'response' && result.status === 410) {
      record = { ...base, outcome: 'gone', at, responseStatus: 410, error: 'The receiver answered 410 Gone: the endpoint is disabled.' };
    } else {
      const made = d.attempts + 1;
      const status = result.kind === 'response' ? result.status : undefined;
      const error =
        result.kind === 'error'
          ? result.reason
          : status! >= 300 && status! < 400
            ? `The receiver answered ${status} (a redirect): redirects are not followed; register the final URL.`
            : `The receiver answered ${status}.`;
      if (d.singleAttempt || made >= options.schedule.length) {
        record = { ...base, outcome: 'failed', at, responseStatus: status, error };
      } else {
        let delay = delayBefore(made);
        // 429 and 503 may say when to come back: never sooner than asked.
        if (result.kind === 'response' && (status === 429 || status === 503) && result.retryAfterMs !== undefined) delay = Math.max(delay, result.retryAfterMs);
        record = { ...base, outcome: 'retry', at, responseStatus: status, error, nextAttemptAt: clock.now() + delay };
      }
    }
    counters.attempt(record.outcome, seconds);
    if (record.outcome === 'gone') counters.endpointDisabled();
    return record;
  }

  /** Records what has accumulated, one transaction per batch; attempts go on meanwhile. */
  function flushRecords(): Promise<void> {
    if (recording) return recording;
    if (records.length === 0) return Promise.resolve();
    const batch = records.splice(0, records.length);
    recording = webhooks
      .record(batch)
      .catch((err: unknown) => {
        // Unrecorded attempts stay leased and are made again when the lease ends (same webhook-id).
        warn(err, 'webhook worker: could not record attempts; they will be retried');
      })
      .finally(() => {
        recording = undefined;
        if (records.length > 0) void flushRecords();
        else checkIdle();
      });
    return recording;
  }

  function warn(err: unknown, message: string): void {
    if (clock.now() - lastErrorLogged > 10_000) {
      lastErrorLogged = clock.now();
      log.warn({ err }, message);
    }
  }

  function checkIdle(): void {
    if (idle && inFlight === 0 && waitingCount === 0 && !claiming && !recording && records.length === 0) idle();
  }

  function start(d: ClaimedDelivery): void {
    inFlight++;
    running.set(d.endpointId, (running.get(d.endpointId) ?? 0) + 1);
    attempt(d)
      .then(
        (record) => {
          records.push(record);
          setImmediate(flushRecords);
        },
        (err: unknown) => warn(err, 'webhook worker: attempt failed unexpectedly; it will be retried when its lease ends'),
      )
      .finally(() => {
        inFlight--;
        const left = running.get(d.endpointId)! - 1;
        if (left === 0) running.delete(d.endpointId);
        else running.set(d.endpointId, left);
        const queue = waiting.get(d.endpointId);
        const next = queue?.shift();
        if (queue && queue.length === 0) waiting.delete(d.endpointId);
        if (next) {
          waitingCount--;
          start(next);
        }
        // With a waiting delivery started, the endpoint is at its limit again: a claim now would
        // skip it and scan every due job of it for nothing (per attempt: quadratic in a backlog).
        // Other endpoints' jobs are claimed by the next poll, a wake, or an attempt with none waiting.
        else if (!stopped) void pump();
        checkIdle();
      });
  }

  function take(d: ClaimedDelivery): void {
    if ((running.get(d.endpointId) ?? 0) < options.endpointConcurrency) return start(d);
    const queue = waiting.get(d.endpointId) ?? [];
    queue.push(d);
    waiting.set(d.endpointId, queue);
    waitingCount++;
  }

  /** Fans out what is due, then claims as much as there is room for; polls again later when nothing was due. */
  async function pump(): Promise<void> {
    if (claiming || stopped) return;
    // Fanning out does not need room here: its deliveries may go to another process.
    const fanOutDue = fanOutWanted || clock.now() - lastFanOut >= pollMs;
    if (!fanOutDue && options.concurrency - inFlight - waitingCount <= 0) return;
    claiming = true;
    let full = false;
    let more = false;
    try {
      if (fanOutDue) {
        fanOutWanted = false;
        lastFanOut = clock.now();
        more = (await webhooks.fanOut(FAN_OUT_MAX)) >= FAN_OUT_MAX;
        if (more) fanOutWanted = true;
      }
      const room = options.concurrency - inFlight - waitingCount;
      if (room > 0) {
        const busy = [...running].filter(([, n]) => n >= options.endpointConcurrency).map(([id]) => id);
        const max = Math.min(room, CLAIM_MAX);
        const claimed = await webhooks.claim(clock.now(), leaseMs, max, busy);
        for (const d of claimed) take(d);
        // Claim again at once only if an endpoint just claimed for has room left: when all are at
        // their limit the next claim would skip them, scanning their due jobs for nothing (a poll,
        // a wake or a finished attempt looks again soon enough for other endpoints).
        full = claimed.length === max && claimed.some((d) => (running.get(d.endpointId) ?? 0) < options.endpointConcurrency);
        if (claimed.length === 0) lastEmptyClaim = clock.now();
      }
    } catch (err) {
      warn(err, 'webhook worker: could not fan out or claim deliveries; retrying');
    } finally {
      claiming = false;
    }
    // A backlog goes on at once. Changes woken for meanwhile wait a little, like wakes do, so a
    // burst of creates costs a fan-out per EMPTY_CLAIM_PAUSE_MS, not one per pump.
    if (full || more) setImmediate(() => void pump());
    else schedule(fanOutWanted ? EMPTY_CLAIM_PAUSE_MS : pollMs);
    checkIdle();
  }

  function schedule(delay: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => void pump(), delay);
    timer.unref();
  }

  return {
    start(): void {
      stopped = false;
      schedule(0);
    },
    /** Something may be due now (a change in this process, a manual retry): look soon instead of at the next poll. */
    wake(): void {
      // One look for a burst of changes, and fewer still while there is nothing to deliver.
      fanOutWanted = true;
      if (stopped || wakeTimer) return;
      const delay = Math.max(5, lastEmptyClaim + EMPTY_CLAIM_PAUSE_MS - clock.now());
      wakeTimer = setTimeout(() => {
        wakeTimer = undefined;
        void pump();
      }, delay);
      wakeTimer.unref();
    },
    /** Stops claiming and waits for the attempts in hand to finish and be recorded (SIGTERM loses nothing). */
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(wakeTimer);
      // Deliveries still waiting for their endpoint are not attempted: their leases run out and another worker takes them.
      waitingCount = 0;
      waiting.clear();
      await new Promise<void>((resolve) => {
        idle = resolve;
        checkIdle();
      });
      await flushRecords();
    },
  };
}

export type WebhookWorker = ReturnType<typeof createWebhookWorker>;
