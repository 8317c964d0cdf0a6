// The background runtime: the message worker, the webhook worker, and the hourly maintenance
// (expired idempotency keys, events past their retention). `petstore serve` starts it next to the
// HTTP app (the worker switches may turn the two workers off); `petstore worker` runs only this.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Metrics } from '../http/plugins/metrics.js';
import { createMessageWorker, type Deliver } from '../services/message-worker.js';
import type { Services } from '../services/index.js';
import { createWebhookWorker, type Send } from '../services/webhook-worker.js';
import type { TimeOperation } from '../store/instrumented.js';
import type { Store } from '../store/types.js';
import { createWebhookSender, type WebhookResolver } from '../webhooks/sender.js';
import type { Wakeups } from './wakeups.js';

const HOUR_MS = 60 * 60 * 1000;
/** The first pruning runs this soon after start, then hourly. */
const FIRST_PRUNE_MS = 60_000;

export interface WorkerDeps {
  config: Pick<Config, 'workers' | 'webhooks' | 'events'>;
  /** The timed store (every call in the store latency histogram). */
  store: Store;
  /** Times the workers' transactions under their operation names (the same histogram). */
  timed: TimeOperation;
  services: { pets: Pick<Services['pets'], 'purgeExpiredIdempotencyKeys'>; events: Pick<Services['events'], 'prune'>; audit: Pick<Services['audit'], 'prune'> };
  metrics: Metrics;
  wakeups: Wakeups;
  clock: Clock;
  log: FastifyBaseLogger;
  /** What delivering a message means (default: nothing more than recording it; tests make it fail). */
  deliver?: Deliver;
  /** Resolves webhook host names (default: the system resolver; tests inject names). */
  webhookResolver?: WebhookResolver;
  /** Sends a webhook delivery (default: the policy-checked HTTP sender). */
  webhookSend?: Send;
}

export interface Workers {
  /** Stops taking work and waits for what is in hand to be finished and recorded; call before closing the store. */
  stop(): Promise<void>;
}

type Stop = () => Promise<void> | void;

function startMessageWorker({ store, timed, clock, log, metrics, wakeups, deliver }: WorkerDeps): Stop {
  const worker = createMessageWorker({
    db: store.db,
    messages: store.messages,
    jobs: store.jobs,
    timed,
    clock,
    log,
    counters: {
      delivered: () => metrics.messagesDelivered.inc(),
      failed: () => metrics.messagesFailed.inc(),
      retried: () => metrics.messageRetries.inc(),
    },
    ...(deliver ? { deliver } : {}),
  });
  const unsubscribe = wakeups.onMessageQueued(worker.wake);
  worker.start();
  return async () => {
    unsubscribe();
    await worker.stop();
  };
}

function startWebhookWorker({ config, store, clock, log, metrics, wakeups, webhookResolver, webhookSend }: WorkerDeps): Stop {
  const { webhooks } = config;
  const sender = webhookSend
    ? undefined
    : createWebhookSender({
        allowHttp: webhooks.allowHttp,
        allowed: webhooks.allowedNetworks,
        timeoutMs: webhooks.timeoutMs,
        maxSockets: webhooks.endpointConcurrency,
        ...(webhookResolver ? { resolve: webhookResolver } : {}),
      });
  const worker = createWebhookWorker({
    webhooks: store.webhooks,
    clock,
    log,
    send: webhookSend ?? ((url, headers, body) => sender!.send(url, headers, body)),
    counters: {
      attempt: (outcome, seconds) => {
        metrics.webhookDeliveries.labels({ outcome }).inc();
        if (seconds !== undefined) metrics.webhookAttemptDuration.observe(seconds);
      },
      endpointDisabled: () => metrics.webhookEndpointsDisabled.inc(),
    },
    options: {
      schedule: webhooks.retrySchedule,
      timeoutMs: webhooks.timeoutMs,
      concurrency: webhooks.concurrency,
      endpointConcurrency: webhooks.endpointConcurrency,
      accountConcurrency: webhooks.accountConcurrency,
    },
  });
  const unsubscribe = wakeups.onDeliveryDue(worker.wake);
  worker.start();
  return async () => {
    unsubscribe();
    await worker.stop();
    sender?.close();
  };
}

/** Expired idempotency keys and events past their retention, hourly; the events once soon after start too. */
function startMaintenance({ config, services, clock, log }: WorkerDeps): Stop {
  const purge = setInterval(() => {
    services.pets.purgeExpiredIdempotencyKeys().catch((err: unknown) => log.warn({ err }, 'idempotency key purge failed'));
  }, HOUR_MS);
  const pruneEvents = () => {
    services.events.prune(clock.now(), config.events.retentionDays).catch((err: unknown) => log.warn({ err }, 'event pruning failed'));
    services.audit.prune(clock.now()).catch((err: unknown) => log.warn({ err }, 'audit log pruning failed'));
  };
  const prune = setInterval(pruneEvents, HOUR_MS);
  const firstPrune = setTimeout(pruneEvents, FIRST_PRUNE_MS);
  for (const timer of [purge, prune, firstPrune]) timer.unref();
  return () => {
    clearInterval(purge);
    clearInterval(prune);
    clearTimeout(firstPrune);
  };
}

/** Starts what the config's worker switches ask for, and the maintenance. */
export function startWorkers(deps: WorkerDeps): Workers {
  const stops: Stop[] = [startMaintenance(deps)];
  if (deps.config.workers.messages) stops.push(startMessageWorker(deps));
  if (deps.config.workers.webhooks) stops.push(startWebhookWorker(deps));
  return {
    async stop() {
      // Side by side: each finishes the work it holds; the store closes after both.
      await Promise.all(stops.map((stop) => stop()));
    },
  };
}
