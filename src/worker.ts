// Process lifecycle for `petstore worker`: the background runtime (src/runtime/workers.ts) alone,
// without the API. It serves /metrics, /healthz and /readyz on PETSTORE_WORKER_PORT (on HOST),
// and on SIGTERM/SIGINT finishes the work in hand before it exits, like `serve`. Run `serve` with
// PETSTORE_MESSAGE_WORKER=false and PETSTORE_WEBHOOK_WORKER=false, and as many of these as the
// queue needs: workers share the database's leases, so any number can run side by side.
import { systemClock } from './clock.js';
import { type Config, ConfigError } from './config.js';
import { buildWorkerApp, workerDepsOf } from './http/app.js';
import type { App } from './http/plugin.js';
import { createLogger } from './logger.js';
import { handleSignals } from './runtime/lifecycle.js';
import { createWakeups } from './runtime/wakeups.js';
import { startWorkers } from './runtime/workers.js';
import { prepareSchema } from './server.js';
import { loggedWait, openStoreWhenReachable } from './store/wait.js';
import { flushTracing, startTracing } from './tracing/switch.js';
import { tierUpSooner } from './runtime/tier-up.js';

export async function startWorkerProcess(config: Config): Promise<App> {
  if (!config.workers.messages && !config.workers.webhooks) {
    throw new ConfigError('`petstore worker` has nothing to run: PETSTORE_MESSAGE_WORKER and PETSTORE_WEBHOOK_WORKER are both false.');
  }
  await startTracing();
  const logger = createLogger(config.logging);
  const store = await openStoreWhenReachable(config, { server: true }, loggedWait(logger, config.database.url, config.database.waitMs));
  if (store.secretsWarning) logger.warn(store.secretsWarning);
  await prepareSchema(config.database, store, logger);
  const wakeups = createWakeups();
  const clock = systemClock;
  const app = await buildWorkerApp({ config, store, logger, wakeups, clock });
  const workers = startWorkers({ ...workerDepsOf(app), config, wakeups, clock });
  const signals = handleSignals({
    logger,
    shutdown: config.shutdown,
    drain: () => app.drain(),
    // The work in hand first, while /metrics still answers; the store last.
    close: async () => {
      const since = Date.now();
      await workers.stop();
      await app.close();
      await store.close();
      await flushTracing(config.shutdown.timeoutMs, since);
    },
    messages: { closing: 'shutting down: finishing the work in hand', deadline: 'shutdown deadline passed; exiting with work still open' },
  });
  try {
    await app.listen({ host: config.http.host, port: config.workers.port });
  } catch (err) {
    await workers.stop();
    await app.close();
    await store.close();
    throw err;
  }
  logger.info({ messages: config.workers.messages, webhooks: config.workers.webhooks }, 'workers running');
  signals.started();
  tierUpSooner();
  return app;
}
