// Process lifecycle for `petstore serve`: store, migrations, app, listen, graceful shutdown.
// With `--workers N` (src/cluster.ts) the primary migrates once and each worker runs
// startServer with `migrations: 'skip'`.
import v8 from 'node:v8';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { buildApp } from './http/app.js';
import { createLogger, exitAfterFlush } from './logger.js';
import { createStore, isPostgresUrl } from './store/index.js';
import type { Store } from './store/types.js';

/** What to do about migrations at start: apply or check them (per PETSTORE_MIGRATE_ON_START), or nothing. */
export type MigrationMode = 'config' | 'skip';

export interface StartOptions {
  /** 'skip' in cluster workers: the primary has already applied or checked them. */
  migrations?: MigrationMode;
  /**
   * Cluster workers keep their signal handlers after the first signal: an interactive
   * Ctrl+C reaches a worker twice (from the terminal and forwarded by the primary), and
   * the second one must not kill it mid-shutdown. A lone process keeps Node's default
   * for a second signal (exit at once), so a second Ctrl+C still forces it.
   */
  ignoreRepeatedSignals?: boolean;
}

/** Applies pending migrations, or refuses to start with pending ones when PETSTORE_MIGRATE_ON_START=false. */
export async function prepareSchema(config: Config['database'], store: Store, logger: Logger): Promise<void> {
  if (config.migrateOnStart) {
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
 * client (the bench's 5 000-page cursor walk: one request at a time) is enough to tenure two
 * sites of the request path (code in fastPath and processImmediate deoptimized for it); after
 * that every request leaves its objects in the old generation and keeps the young objects they
 * point to alive: list20 then promoted 1.1 MB per scavenge (none before), scavenges took
 * 4-7 ms instead of 1 ms, mark-compacts ran every few seconds and peak RSS went from 132 to
 * 210 MB. Request objects here never outlive their request, so the heuristic can only be
 * wrong for us. Set before any request code is optimized; a flag V8 only reads when it
 * allocates or compiles, so setting it at run time is safe.
 * PostgreSQL only: on SQLite, whose read cache holds long-lived pets and pages, the same flag
 * made the shipped defaults (log level info) slower: `npm run bench -- --only defaults` lost
 * 20-36 % at info against warn with it (three runs) and 6-22 % without (two), alternated.
 */
function disablePretenuring(): void {
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<FastifyInstance> {
  if (isPostgresUrl(config.database.url)) disablePretenuring();
  const logger = createLogger(config.logging);
  const store = await createStore(config);
  if (options.migrations !== 'skip') await prepareSchema(config.database, store, logger);
  const app = await buildApp({ config, store, logger });
  let listening = false;
  let signalledEarly: string | undefined;
  let closing = false;
  const shutdown = (signal: string) => {
    // The server is reachable (and, in a cluster, counted) before listen() resolves:
    // a signal in between is honoured once listening completes.
    if (!listening) {
      signalledEarly ??= signal;
      return;
    }
    if (closing) return;
    closing = true;
    const deadline = setTimeout(() => {
      logger.error('shutdown deadline passed; exiting with requests still open');
      exitAfterFlush(logger, 1);
    }, config.shutdown.delayMs + config.shutdown.timeoutMs);
    deadline.unref();
    if (config.shutdown.delayMs > 0) {
      logger.info({ signal, delayMs: config.shutdown.delayMs }, 'shutting down: draining (/readyz answers 503) before closing');
      app.drain();
      setTimeout(() => close(signal), config.shutdown.delayMs);
    } else close(signal);
  };
  const close = (signal: string) => {
    logger.info({ signal }, 'shutting down: finishing requests in flight');
    // The store closes after the app, not in an onClose hook: those run last-registered
    // first, so it would close before the workers' hooks record the attempts they hold.
    app.close().then(() => store.close()).then(
      () => {
        logger.info('shut down cleanly');
        // Every line written so far (the last requests' too) reaches stdout before we go.
        exitAfterFlush(logger, 0);
      },
      (err: unknown) => {
        logger.error({ err }, 'error during shutdown');
        exitAfterFlush(logger, 1);
      },
    );
  };
  const listen = options.ignoreRepeatedSignals ? process.on.bind(process) : process.once.bind(process);
  listen('SIGTERM', () => shutdown('SIGTERM'));
  listen('SIGINT', () => shutdown('SIGINT'));

  await app.listen({ host: config.http.host, port: config.http.port });
  listening = true;
  if (signalledEarly) shutdown(signalledEarly);
  return app;
}
