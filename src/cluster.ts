// `petstore serve --workers N`: one primary process and N workers sharing one port (node:cluster).
//
// The primary applies migrations once (or checks them, per PETSTORE_MIGRATE_ON_START), closes
// its store, then forks the workers; it serves nothing itself. Workers run the same server as a
// lone process, minus migrations. The primary replaces a worker that exits while the cluster runs,
// after a delay that doubles with each failure in a row (so a worker that cannot start does not
// spin). A worker that fails before the cluster has first come up is fatal, like a lone process
// failing to start (bad config, port in use, database down). On SIGTERM/SIGINT the primary forwards
// the signal to every worker, each finishes its requests in flight and closes its pool (see
// startServer), and the primary exits 0 once all have exited cleanly; 1 otherwise.
import cluster, { type Address, type Worker } from 'node:cluster';
import pino from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { type ClusterMetricsMessage, isClusterMetricsMessage } from './http/plugins/metrics.js';
import type { Config } from './config.js';
import { createLogger } from './logger.js';
import { prepareSchema, startServer } from './server.js';
import { loggedWait, openStoreWhenReachable } from './store/wait.js';

export { MAX_WORKERS } from './cli/usage.js';

/** First restart delay; doubles with each failure in a row up to RESTART_MAX_DELAY_MS. */
export const RESTART_MIN_DELAY_MS = 200;
export const RESTART_MAX_DELAY_MS = 10_000;
/** A worker exit this long after the previous one starts the backoff over. */
const RESTART_RESET_AFTER_MS = 30_000;
/** Time the primary allows beyond the workers' own shutdown deadline before it kills them. */
const SHUTDOWN_GRACE_MS = 2_000;

export function isClusterWorker(): boolean {
  return cluster.isWorker;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Worker side: the usual server without migrations; a start failure exits 1 so the primary sees it. */
export async function runWorker(config: Config): Promise<void> {
  try {
    await startServer(config, { migrations: 'skip', ignoreRepeatedSignals: true });
  } catch (err) {
    // The IPC channel to the primary would keep this process alive: exit explicitly.
    process.stderr.write(`petstore: worker ${process.pid} failed to start: ${message(err)}\n`);
    process.exit(1);
  }
}

function urlOf(address: Address): string {
  const host = address.addressType === 6 ? `[${address.address}]` : (address.address ?? 'localhost');
  return `http://${host}:${address.port}`;
}

/** Primary side: migrate once, fork `workers` workers, supervise them until a signal stops them all. */
export async function runPrimary(config: Config, workers: number): Promise<void> {
  // Synchronous writes: the primary logs little, and its last lines must be out before process.exit.
  const logger = createLogger(config.logging, pino.destination({ dest: 1, sync: true }));
  const store = await openStoreWhenReachable(config, {}, loggedWait(logger, config.database.url, config.database.waitMs));
  try {
    await prepareSchema(config.database, store, logger);
  } finally {
    await store.close();
  }

  type Phase = 'starting' | 'running' | 'stopping';
  let phase: Phase = 'starting';
  const alive = new Map<number, Worker>();
  const listening = new Set<number>();
  const restarts = new Set<NodeJS.Timeout>();
  let failuresInARow = 0;
  let lastFailureAt = 0;
  let exitCode = 0;

  const fork = () => {
    const worker = cluster.fork();
    alive.set(worker.id, worker);
    worker.on('error', (err: unknown) => logger.error({ err, worker: worker.id }, 'worker process error'));
    return worker;
  };

  const finish = () => {
    if (exitCode === 0) logger.info('all workers stopped; exiting');
    else logger.error({ exitCode }, 'workers stopped with errors; exiting');
    process.exit(exitCode);
  };

  const stop = (signal: NodeJS.Signals) => {
    if (phase === 'stopping') {
      // A second signal from an operator: stop waiting.
      logger.error({ signal }, 'second signal during shutdown: killing workers now');
      exitCode = 1;
      for (const worker of alive.values()) worker.process.kill('SIGKILL');
      return;
    }
    phase = 'stopping';
    for (const timer of restarts) clearTimeout(timer);
    restarts.clear();
    logger.info({ signal, workers: alive.size }, 'shutting down: stopping workers');
    if (alive.size === 0) return finish();
    for (const worker of alive.values()) worker.process.kill(signal);
    const deadline = setTimeout(() => {
      logger.error({ workers: alive.size }, 'workers did not stop within the shutdown deadline; killing them');
      exitCode = 1;
      for (const worker of alive.values()) worker.process.kill('SIGKILL');
    }, config.shutdown.delayMs + config.shutdown.timeoutMs + SHUTDOWN_GRACE_MS);
    deadline.unref();
  };

  // Workers forward /metrics scrapes here; answer with every worker's metrics aggregated.
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker: Worker, msg: unknown) => {
    if (!isClusterMetricsMessage(msg)) return;
    aggregator.clusterMetrics().then(
      (text) => worker.isConnected() && worker.send({ type: msg.type, id: msg.id, text } satisfies ClusterMetricsMessage),
      (err: unknown) => worker.isConnected() && worker.send({ type: msg.type, id: msg.id, error: message(err) } satisfies ClusterMetricsMessage),
    );
  });

  cluster.on('listening', (worker: Worker, address: Address) => {
    // A worker's metrics listener (PETSTORE_METRICS_PORT) listens first: only the API port means ready.
    if (config.metrics.listener && address.port === config.metrics.listener.port) return;
    listening.add(worker.id);
    logger.info({ worker: worker.id, workerPid: worker.process.pid, url: urlOf(address) }, 'worker listening');
    if (phase === 'starting' && listening.size === workers) {
      phase = 'running';
      logger.info({ workers, url: urlOf(address) }, `cluster ready: ${workers} workers listening at ${urlOf(address)}`);
    }
  });

  cluster.on('exit', (worker: Worker, code: number | null, signal: string | null) => {
    alive.delete(worker.id);
    const wasListening = listening.delete(worker.id);
    const details = { worker: worker.id, workerPid: worker.process.pid, code, signal };
    if (phase === 'stopping') {
      // A worker killed by the forwarded signal before it could install its handlers had nothing in flight.
      const clean = code === 0 || (!wasListening && signal !== null && signal !== 'SIGKILL');
      if (!clean) exitCode = 1;
      if (clean) logger.info(details, 'worker stopped');
      else logger.error(details, 'worker stopped uncleanly');
      if (alive.size === 0) finish();
      return;
    }
    if (phase === 'starting') {
      logger.error(details, 'worker exited before the cluster came up; stopping');
      exitCode = 1;
      stop('SIGTERM');
      return;
    }
    const now = Date.now();
    if (now - lastFailureAt > RESTART_RESET_AFTER_MS) failuresInARow = 0;
    const delay = Math.min(RESTART_MIN_DELAY_MS * 2 ** failuresInARow, RESTART_MAX_DELAY_MS);
    failuresInARow += 1;
    lastFailureAt = now;
    if (code === 0) {
      // A clean exit: someone signalled the worker itself (or Ctrl+C reached it before the
      // primary handled its own signal, which then cancels this restart).
      logger.warn({ ...details, restartInMs: delay }, 'worker exited; restarting it');
    } else {
      logger.error({ ...details, restartInMs: delay }, 'worker exited unexpectedly; restarting it');
    }
    const timer = setTimeout(() => {
      restarts.delete(timer);
      if (phase !== 'stopping') fork();
    }, delay);
    restarts.add(timer);
  });

  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  if (!config.rateLimits.redisUrl) {
    logger.warn(
      { workers },
      `PETSTORE_REDIS_URL is not set: each worker keeps its own rate-limit buckets, so a key may get up to ${workers} times its limit`,
    );
  }
  logger.info({ workers }, `starting ${workers} workers`);
  for (let i = 0; i < workers; i += 1) fork();
}
