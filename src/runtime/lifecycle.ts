// SIGTERM/SIGINT for a long-running process (`serve`, `worker`): optionally drain (readiness
// answers 503) for PETSTORE_SHUTDOWN_DELAY_MS, then close everything in order and exit 0, or 1 if
// closing fails or outlasts the deadline (delay + PETSTORE_SHUTDOWN_TIMEOUT_MS).
import type { Logger } from 'pino';
import type { ShutdownConfig } from '../config.js';
import { exitAfterFlush } from '../logger.js';

export interface SignalOptions {
  logger: Logger;
  shutdown: ShutdownConfig;
  /** Starts draining: readiness answers 503 while everything else is served as usual. */
  drain: () => void;
  /** Closes everything, in order (what still works first, the store last). */
  close: () => Promise<void>;
  /** Logged when closing begins, and when the deadline passes (what the process finishes before it exits). */
  messages: { closing: string; deadline: string };
  /**
   * Cluster workers keep their signal handlers after the first signal: an interactive
   * Ctrl+C reaches a worker twice (from the terminal and forwarded by the primary), and
   * the second one must not kill it mid-shutdown. A lone process keeps Node's default
   * for a second signal (exit at once), so a second Ctrl+C still forces it.
   */
  ignoreRepeatedSignals?: boolean;
}

/**
 * Installs the handlers now. A signal that arrives before `started()` is honoured then: the
 * process is reachable (and, in a cluster, counted) before it has finished starting.
 */
export function handleSignals(options: SignalOptions): { started(): void } {
  const { logger, shutdown: limits } = options;
  let started = false;
  let signalledEarly: string | undefined;
  let closing = false;
  const close = (signal: string) => {
    logger.info({ signal }, options.messages.closing);
    options.close().then(
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
  const shutdown = (signal: string) => {
    if (!started) {
      signalledEarly ??= signal;
      return;
    }
    if (closing) return;
    closing = true;
    const deadline = setTimeout(() => {
      logger.error(options.messages.deadline);
      exitAfterFlush(logger, 1);
    }, limits.delayMs + limits.timeoutMs);
    deadline.unref();
    if (limits.delayMs > 0) {
      logger.info({ signal, delayMs: limits.delayMs }, 'shutting down: draining (/readyz answers 503) before closing');
      options.drain();
      setTimeout(() => close(signal), limits.delayMs);
    } else close(signal);
  };
  const listen = options.ignoreRepeatedSignals ? process.on.bind(process) : process.once.bind(process);
  listen('SIGTERM', () => shutdown('SIGTERM'));
  listen('SIGINT', () => shutdown('SIGINT'));
  return {
    started() {
      started = true;
      if (signalledEarly) shutdown(signalledEarly);
    },
  };
}
