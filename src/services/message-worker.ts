// The background worker every server process runs: it takes due message jobs from the durable
// queue (jobs.claim: leased, so two workers never hold one job), delivers each, and
// records the outcome with the job's removal in one transaction. A job whose worker died comes
// due again when its lease ends; a message fails for good after MAX_ATTEMPTS attempts.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Message } from '../schemas/messages.js';
import type { SqlDatabase } from '../store/core/sql.js';
import type { TimeOperation } from '../store/instrumented.js';
import type { Job, JobRepository } from '../store/jobs.js';
import type { MessageOutcome, MessageRepository } from '../store/messages.js';
import { hooks as tracingHooks } from '../tracing/switch.js';


export const MESSAGE_JOB = 'message.deliver' as const;
export const MAX_ATTEMPTS = 5;
/** Delivery takes milliseconds: a job is handed to another worker 5 s after its worker stopped answering. */
export const LEASE_MS = 5_000;
const BATCH = 32;
/** How often an idle worker looks for jobs queued by other processes (this process's own wake it at once). */
const POLL_MS = 200;

/** Wait before attempt n + 1: 1 s, 2 s, 4 s, 8 s. */
export const retryDelayMs = (attempts: number) => 1000 * 2 ** (attempts - 1);

/** What delivering means. The example API has no recipient: stored and done. Tests inject failures. */
export type Deliver = (message: Message) => Promise<void>;

export interface WorkerCounters {
  delivered(): void;
  failed(): void;
  retried(): void;
}

export function createMessageWorker(deps: {
  db: Pick<SqlDatabase, 'transaction'>;
  messages: Pick<MessageRepository, 'getBySeq' | 'finish'>;
  jobs: Pick<JobRepository, 'claim' | 'retry' | 'remove'>;
  /** Times each settling transaction (the store histogram). */
  timed?: TimeOperation;
  clock: Clock;
  log: FastifyBaseLogger;
  counters: WorkerCounters;
  deliver?: Deliver;
  pollMs?: number;
}) {
  const { db, messages, jobs, clock, log, counters } = deps;
  const timed: TimeOperation = deps.timed ?? ((_operation, work) => work());
  const plain: Deliver = deps.deliver ?? (async () => {});
  const tracing = tracingHooks;
  // Tracing on: each delivery a span linked to the POST /messages that queued it (stored with the message).
  const deliver: Deliver = tracing
    ? (message: Parameters<Deliver>[0] & { trace?: string }) =>
        tracing.linkedSpan('message delivery', message.trace, { 'messaging.operation.type': 'process', 'petstore.message.id': message.id }, () => plain(message))
    : plain;
  const pollMs = deps.pollMs ?? POLL_MS;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = true;
  let lastErrorLogged = 0;

  /**
   * The jobs' messages still queued end as `outcome` (a message moves once, whoever tries) and
   * the jobs are done, in one transaction (one commit for a whole batch); how many moved.
   */
  function settle(operation: string, done: readonly Job[], outcome: MessageOutcome): Promise<number> {
    return timed(operation, async () => {
      if (done.length === 0) return 0;
      return db.transaction(async (tx) => {
        await jobs.remove(tx, done.map((job) => job.id));
        return messages.finish(tx, done.map((job) => ({ accountId: job.accountId, seq: job.ref })), outcome);
      });
    });
  }

  /** Delivers one job's message; true when it is done and only needs recording. */
  async function deliverJob(job: Job): Promise<boolean> {
    const message = await messages.getBySeq(job.accountId, job.ref);
    // Finished by another worker whose lease ran out meanwhile: only the job is left to remove.
    if (!message || message.status !== 'queued') return true;
    try {
      await deliver(message);
      return true;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (job.attempts >= MAX_ATTEMPTS) {
        const failureReason = `Not delivered after ${job.attempts} attempts: ${reason}`;
        if ((await settle('failMessage', [job], { status: 'failed', failureReason })) === 1) counters.failed();
      } else {
        await jobs.retry(job, reason, clock.now() + retryDelayMs(job.attempts));
        counters.retried();
      }
      return false;
    }
  }

  /** Takes and processes due jobs until none is left; returns how many it took. */
  async function runOnce(): Promise<number> {
    let taken = 0;
    for (;;) {
      const claimed = await jobs.claim(MESSAGE_JOB, clock.now(), LEASE_MS, BATCH);
      taken += claimed.length;
      const done: Job[] = [];
      for (const job of claimed) if (await deliverJob(job)) done.push(job);
      // One commit records the whole batch.
      const moved = await settle('completeMessageDeliveries', done, { status: 'delivered', deliveredAt: new Date(clock.now()).toISOString() });
      for (let i = 0; i < moved; i++) counters.delivered();
      if (claimed.length < BATCH || stopped) return taken;
    }
  }

  function schedule(delay: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(tick, delay);
    timer.unref();
  }

  function tick(): void {
    if (running) {
      again = true;
      return;
    }
    running = runOnce()
      .then(
        () => undefined,
        (err: unknown) => {
          // Usually the database being away; the jobs stay leased or due and are retried.
          if (clock.now() - lastErrorLogged > 10_000) {
            lastErrorLogged = clock.now();
            log.warn({ err }, 'message worker: could not process jobs; retrying');
          }
        },
      )
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          schedule(0);
        } else schedule(pollMs);
      });
  }

  return {
    start(): void {
      stopped = false;
      schedule(0);
    },
    /** A message was queued by this process: look now instead of at the next poll. */
    wake(): void {
      if (!stopped) schedule(0);
    },
    runOnce,
    /** Stops polling and waits for the jobs in hand to be finished (SIGTERM loses nothing). */
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

export type MessageWorker = ReturnType<typeof createMessageWorker>;
