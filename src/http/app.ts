// The one wiring point of the HTTP side: the app is its plugins, registered in dependency order
// (src/http/plugin.ts; Fastify refuses a plugin whose dependencies are not registered yet).
// Background work is not here: src/runtime/workers.ts, started by src/server.ts or src/worker.ts.
import type { FastifyBaseLogger } from 'fastify';
import { type Clock, systemClock } from '../clock.js';
import type { Config, MetricsConfig } from '../config.js';
import type { Wakeups } from '../runtime/wakeups.js';
import type { WorkerDeps } from '../runtime/workers.js';
import type { Store } from '../store/types.js';
import { createInstance } from './instance.js';
import type { App } from './plugin.js';
import { registerTracing } from './plugins/tracing.js';
import { hooks as tracingHooks } from '../tracing/switch.js';
import { collectRouteMethods, corePlugin } from './plugins/core.js';
import { metricsEndpointPlugin, metricsPlugin, rateLimitPlugin, servicesPlugin, storePlugin } from './plugins/foundation.js';
import { apiPlugin, exampleApiPlugin, fastPathPlugin, healthPlugin, openApiPlugin, portalPlugin } from './plugins/routes.js';

export interface AppDeps {
  config: Config;
  store: Store;
  logger: FastifyBaseLogger;
  /** Told when a message is queued or a delivery is due; the worker runtime listens. */
  wakeups: Wakeups;
  clock?: Clock;
}

/** The instance with what every app of ours has: the core, metrics, the store and its services. */
async function foundation({ config, store, logger, wakeups, clock = systemClock }: AppDeps, metrics: MetricsConfig) {
  const instance = createInstance(config.http, logger);
  const { app } = instance;
  // Tracing on: first, so its hooks see every other plugin's work.
  if (tracingHooks) await registerTracing(app);
  await app.register(corePlugin, { bodyLimit: config.http.bodyLimit });
  const addMethodNotAllowed = collectRouteMethods(app);
  await app.register(metricsPlugin, {});
  await app.register(storePlugin, { store, events: config.events.enabled, wakeups });
  await app.register(metricsEndpointPlugin, metrics);
  await app.register(servicesPlugin, { clock, environment: config.environment, webhooks: config.webhooks, wakeups });
  return { ...instance, addMethodNotAllowed, clock };
}

/** The API server of `petstore serve`: the documents, health, the portal, /v1, the example API. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config } = deps;
  const { app, addMethodNotAllowed, clock, requestId, intercept } = await foundation(deps, config.metrics);
  await app.register(rateLimitPlugin, config.rateLimits);
  await app.register(openApiPlugin, config.docs);
  await app.register(healthPlugin, {});
  await app.register(portalPlugin, { enabled: config.docs.portal });
  await app.register(apiPlugin, { clock, events: config.events, wakeups: deps.wakeups });
  await app.register(exampleApiPlugin, config.docs);
  if (config.http.fastPath) await app.register(fastPathPlugin, { clock, requestId, intercept, trustedProxies: config.http.trustedProxies });
  addMethodNotAllowed();
  return app;
}

/** The HTTP side of `petstore worker`: /metrics, /healthz and /readyz, no API. */
export async function buildWorkerApp(deps: AppDeps): Promise<App> {
  // Its own port is an operations port already: /metrics stays on it.
  const { app, addMethodNotAllowed } = await foundation(deps, { token: deps.config.metrics.token, listener: undefined });
  await app.register(healthPlugin, {});
  addMethodNotAllowed();
  return app;
}

/** What the worker runtime takes from an app: the timed store, the services, the metrics, the log. */
export function workerDepsOf(app: App): Pick<WorkerDeps, 'store' | 'timed' | 'services' | 'metrics' | 'log'> {
  return { store: app.stores.timed, timed: app.stores.operations, services: app.services, metrics: app.metrics, log: app.log };
}
