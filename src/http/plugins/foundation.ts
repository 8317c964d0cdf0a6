// The plugins that make what the routes and the workers run on, each decorating the app with one
// thing: metrics, the store (as the views below), /metrics, the services, the rate limiter.
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../clock.js';
import type { Config, MetricsConfig, RateLimitsConfig, WebhooksConfig } from '../../config.js';
import type { Wakeups } from '../../runtime/wakeups.js';
import { createServices, type Services } from '../../services/index.js';
import { createMemoryRateLimiter, createRedisRateLimiter, type RateLimiter } from '../../services/rate-limit.js';
import { createAuthFailureGuard } from '../../services/auth-failures.js';
import type { AuthFailureLimit } from './auth.js';
import { instrumentStore, operationTimer, type TimeOperation } from '../../store/instrumented.js';
import type { Store } from '../../store/types.js';
import type { EventType } from '../../schemas/events.js';
import { checkWebhookUrl } from '../../webhooks/address-policy.js';
import { definePlugin, PLUGIN } from '../plugin.js';
import { createMetrics, type Metrics, registerMetrics, type ResponseRecorder } from './metrics.js';

/** One store, seen two ways, and what services and workers time their transactions with. */
export interface StoreViews {
  /** The store itself: health checks and gauges (untimed), closing. */
  raw: Store;
  /** Every call timed in the store latency histogram: what services and workers use. */
  timed: Store;
  /** Times the services' and workers' transactions under their operation names. */
  operations: TimeOperation;
  /** Counts the events a committed change wrote and announces them; undefined when events are off. */
  eventsWritten: ((types: readonly EventType[]) => void) | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics;
    stores: StoreViews;
    /** Records an answered request in the latency histogram (for paths that answer outside Fastify). */
    recordResponse: ResponseRecorder;
    /** The services this app runs on (tests and tools act through the same caches). */
    services: Services;
    rateLimiter: RateLimiter;
    authFailureLimit: AuthFailureLimit;
  }
}

/** A registry of this app's own (several apps in one process never mix). */
export const metricsPlugin = definePlugin<Record<never, never>>(PLUGIN.metrics, [], async (app) => {
  app.decorate('metrics', createMetrics());
});

export const storePlugin = definePlugin<{ store: Store; events: boolean; wakeups: Wakeups }>(
  PLUGIN.store,
  [PLUGIN.metrics],
  async (app, { store, events, wakeups }) => {
    const { metrics } = app;
    const timed = instrumentStore(store, (operation) => {
      const child = metrics.storeDuration.labels({ operation });
      return (seconds) => child.observe(seconds);
    });
    // Every change that wrote events is counted, and wakes the webhook worker (a delivery may be due).
    const eventsWritten = (types: readonly EventType[]) => {
      for (const type of types) metrics.eventsWritten.labels({ type }).inc();
      wakeups.deliveryDue();
      wakeups.eventsCommitted();
    };
    const operations = operationTimer((operation) => {
      const child = metrics.storeDuration.labels({ operation });
      return (seconds) => child.observe(seconds);
    });
    app.decorate('stores', { raw: store, timed, operations, eventsWritten: events ? eventsWritten : undefined });
  },
);

/** GET /metrics (on the app's listener, or on a listener of its own), the store gauges and the per-request latency histogram. */
export const metricsEndpointPlugin = definePlugin<MetricsConfig>(
  PLUGIN.metricsEndpoint,
  [PLUGIN.core, PLUGIN.metrics, PLUGIN.store],
  async (app, config) => {
    app.decorate('recordResponse', registerMetrics(app, app.metrics, app.stores.raw, config));
  },
);

export interface ServicesOptions {
  clock: Clock;
  environment: Config['environment'];
  webhooks: Pick<WebhooksConfig, 'allowHttp' | 'allowedNetworks' | 'secretOverlapSeconds'>;
  wakeups: Wakeups;
}

export const servicesPlugin = definePlugin<ServicesOptions>(PLUGIN.services, [PLUGIN.store], async (app, { clock, environment, webhooks, wakeups }) => {
  const urlPolicy = { allowHttp: webhooks.allowHttp, allowed: webhooks.allowedNetworks };
  const services = await createServices({
    store: app.stores.timed,
    timed: app.stores.operations,
    clock,
    environment,
    onMessageQueued: wakeups.messageQueued,
    checkWebhookUrl: (url) => {
      const checked = checkWebhookUrl(url, urlPolicy);
      return checked.ok ? { url: checked.url.href } : { reason: checked.reason };
    },
    webhookSecretOverlapSeconds: webhooks.secretOverlapSeconds,
    onDeliveryDue: wakeups.deliveryDue,
    ...(app.stores.eventsWritten ? { published: app.stores.eventsWritten } : {}),
  });
  app.decorate('services', services);
  // The last minute's key uses are written before the store closes (it closes after the app).
  app.addHook('onClose', async () => {
    services.apiKeys.stopUsage();
    await services.apiKeys.flushUsage();
  });
});

/** Per-key token buckets, and per-address ones for failed authentications: in memory, or shared through Redis (failing open while it is away). */
export const rateLimitPlugin = definePlugin<RateLimitsConfig>(PLUGIN.rateLimit, [PLUGIN.metrics], async (app, config) => {
  const rateLimiter = limiterOf(app, config, { ratePerSecond: config.perSecond, capacity: config.burst });
  const failures = limiterOf(app, config, { ratePerSecond: config.authFailuresPerSecond, capacity: config.authFailuresBurst });
  app.decorate('rateLimiter', rateLimiter);
  app.decorate('authFailureLimit', { guard: createAuthFailureGuard(failures), refused: () => app.metrics.rateLimited.inc() });
  app.addHook('onClose', async () => {
    await rateLimiter.close();
    await failures.close();
  });
});

function limiterOf(app: FastifyInstance, config: RateLimitsConfig, options: { ratePerSecond: number; capacity: number }): RateLimiter {
  if (!config.redisUrl) return createMemoryRateLimiter(options);
  let lastLogged = 0;
  return createRedisRateLimiter(config.redisUrl, {
    ...options,
    onError: (err) => {
      app.metrics.rateLimiterErrors.inc();
      // Fail open, but say so: at most one log line per 10 s while Redis is away.
      if (Date.now() - lastLogged > 10_000) {
        lastLogged = Date.now();
        app.log.warn({ err }, 'rate limiter unavailable: allowing requests without a shared limit');
      }
    },
  });
}
