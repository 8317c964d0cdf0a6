// Process lifecycle for `petstore serve`: store, migrations, app, workers, listen, graceful shutdown.
// With `--workers N` (src/cluster.ts) the primary migrates once and each worker runs
// startServer with `migrations: 'skip'`.
import v8 from 'node:v8';
import type { Logger } from 'pino';
import type { Config, DatabaseConfig } from './config.js';
import { buildApp, workerDepsOf } from './http/app.js';
import type { App } from './http/plugin.js';
import { createLogger } from './logger.js';
import { handleSignals } from './runtime/lifecycle.js';
import { createWakeups } from './runtime/wakeups.js';
import { startWorkers } from './runtime/workers.js';
import { systemClock } from './clock.js';
import { flushTracing, startTracing } from './tracing/switch.js';
import { isPostgresUrl } from './store/index.js';
import { loggedWait, openStoreWhenReachable } from './store/wait.js';
import type { Store } from './store/types.js';
import { tierUpSooner } from './runtime/tier-up.js';

/** What to do about migrations at start: apply or check them (per PETSTORE_MIGRATE_ON_START), or nothing. */
export type MigrationMode = 'config' | 'skip';

export interface StartOptions {
  /** 'skip' in cluster workers: the primary has already applied or checked them. */
  migrations?: MigrationMode;
  /** See SignalOptions.ignoreRepeatedSignals (cluster workers). */
  ignoreRepeatedSignals?: boolean;
}

/** Applies pending migrations, or refuses to start with pending ones when PETSTORE_MIGRATE_ON_START=false. */
export async function prepareSchema(database: Pick<DatabaseConfig, 'migrateOnStart'>, store: Store, logger: Logger): Promise<void> {
  if (database.migrateOnStart) {
    const applied = await store.migrate();
    if (applied.length > 0) logger.info({ applied }, 'applied migrations');
  } else {
    const pending = await store.pendingMigrations();
    if (pending.length > 0) throw new Error(`Pending migrations ${pending.join(', ')}: run \`petstore migrate\` first.`);
  }
}

/**
 * V8's allocation-site pretenuring, off for the serving process. It watches object and array
 * literals and, when one site's objects are all still alive at a few scavenges, allocates that
 * site's objects straight in the old generation from then on, for good. A slow sequential
 * client (one request at a time) is enough to tenure sites of the request path; after that
 * every request leaves its objects in the old generation, and scavenges, mark-compacts and
 * RSS all grow (docs/performance.md). Request objects here never outlive their request, so
 * the heuristic can only be wrong for us. Set before any request code is optimized; a flag V8
 * only reads when it allocates or compiles, so setting it at run time is safe.
 * PostgreSQL only: on SQLite, whose read cache holds long-lived pets and pages, the same flag
 * made the shipped defaults slower.
 */
function disablePretenuring(): void {
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<App> {
  if (isPostgresUrl(config.database.url)) disablePretenuring();
  // First: the store, the app and the logger see whether tracing is on when they are made.
  await startTracing();
  const logger = createLogger(config.logging);
  const store = await openStoreWhenReachable(config, { server: true }, loggedWait(logger, config.database.url, config.database.waitMs));
  if (store.secretsWarning) logger.warn(store.secretsWarning);
  if (options.migrations !== 'skip') await prepareSchema(config.database, store, logger);
  const wakeups = createWakeups();
  const clock = systemClock;
  const app = await buildApp({ config, store, logger, wakeups, clock });
  const workers = startWorkers({ ...workerDepsOf(app), config, wakeups, clock });
  const signals = handleSignals({
    logger,
    shutdown: config.shutdown,
    ignoreRepeatedSignals: options.ignoreRepeatedSignals ?? false,
    drain: () => app.drain(),
    // The workers stop after the last request (what they hold is finished and recorded), the store last.
    close: async () => {
      const since = Date.now();
      await app.close();
      await workers.stop();
      await store.close();
      await flushTracing(config.shutdown.timeoutMs, since);
    },
    messages: { closing: 'shutting down: finishing requests in flight', deadline: 'shutdown deadline passed; exiting with requests still open' },
  });
  try {
    await app.listen({ host: config.http.host, port: config.http.port });
  } catch (err) {
    // Nothing keeps running after a failed start (port in use…): the caller reports and exits.
    await workers.stop();
    await app.close();
    await store.close();
    throw err;
  }
  signals.started();
  tierUpSooner();
  return app;
}
