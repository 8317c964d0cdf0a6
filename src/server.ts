// Process lifecycle for `petstore serve`: store, migrations, app, listen, graceful shutdown.
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { buildApp } from './http/app.js';
import { createLogger } from './logger.js';
import { createStore } from './store/index.js';

export async function startServer(config: Config): Promise<FastifyInstance> {
  const logger = createLogger(config);
  const store = await createStore(config);
  if (config.migrateOnStart) {
    const applied = await store.migrate();
    if (applied.length > 0) logger.info({ applied }, 'applied migrations');
  } else {
    const pending = await store.pendingMigrations();
    if (pending.length > 0) throw new Error(`Pending migrations ${pending.join(', ')}: run \`petstore migrate\` first.`);
  }
  const app = await buildApp({ config, store, logger });
  app.addHook('onClose', async () => store.close());
  await app.listen({ host: config.host, port: config.port });

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down: finishing requests in flight');
    const deadline = setTimeout(() => {
      logger.error('shutdown deadline passed; exiting with requests still open');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    deadline.unref();
    app.close().then(
      () => {
        logger.info('shut down cleanly');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  return app;
}
