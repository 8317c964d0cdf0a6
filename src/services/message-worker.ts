// The background worker every server process runs: it takes due message jobs from the durable
// queue (store.claimJobs: leased, so two workers never hold one job), delivers each, and
// records the outcome with the job's removal in one transaction. A job whose worker died comes
// due again when its lease ends; a message fails for good after MAX_ATTEMPTS attempts.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Message } from '../schemas/messages.js';
import type { Job, Store } from '../store/types.js';

export const MESSAGE_JOB = 'message.deliver';
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
  store: Store;
  clock: Clock;
  log: FastifyBaseLogger;
  counters: WorkerCounters;
  deliver?: Deliver;
  pollMs?: number;
}) {
  const { store, clock, log, counters } = deps;
  const deliver: Deliver = deps.deliver ?? (async () => {});
  const pollMs = deps.pollMs ?? POLL_MS;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = true;
  let lastErrorLogged = 0;

  /** Delivers one job's message; true when it is done and only needs recording. */
  async function deliverJob(job: Job): Promise<boolean> {
    const message = await store.getMessageBySeq(job.accountId, job.ref);
    // Finished by another worker whose lease ran out meanwhile: only the job is left to remove.
    if (!message || message.status !== 'queued') return true;
    try {
      await deliver(message);
      return true;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (job.attempts >= MAX_ATTEMPTS) {
        if (await store.failMessage(job, `Not delivered after ${job.attempts} attempts: ${reason}`)) counters.failed();
      } else {
        await store.retryJob(job, reason, clock.now() + retryDelayMs(job.attempts));
        counters.retried();
      }
      return false;
    }
  }

  /** Takes and processes due jobs until none is left; returns how many it took. */
  async function runOnce(): Promise<number> {
    let taken = 0;
    for (;;) {
      const jobs = await store.claimJobs(MESSAGE_JOB, clock.now(), LEASE_MS, BATCH);
      taken += jobs.length;
      const done: Job[] = [];
      for (const job of jobs) if (await deliverJob(job)) done.push(job);
      // One commit records the whole batch.
      const moved = await store.completeMessageDeliveries(done, new Date(clock.now()).toISOString());
      for (let i = 0; i < moved; i++) counters.delivered();
      if (jobs.length < BATCH || stopped) return taken;
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
