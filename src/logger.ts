import pino, { type Bindings, type ChildLoggerOptions, type Logger } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';

/** Paths that may carry secrets; pino replaces them before anything is written. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'key',
  '*.key',
];

/** Anything key-shaped, wherever a client put it (URL, a field, a header), becomes a harmless marker. */
export const scrubSecrets = (line: string) => line.replace(/psk_(live|test)_[0-9A-Za-z]*/gi, 'psk_$1_[redacted]');

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      hooks: { streamWrite: scrubSecrets },
    },
    destination,
  );
}

const LEVEL_VALUES: Record<'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent', number> & Record<string, number | undefined> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };
type LogFn = (...args: unknown[]) => void;

/** Whether a logger at its current level writes lines of `level`. */
export function writesAt(logger: { level: string }, level: keyof typeof LEVEL_VALUES): boolean {
  return (LEVEL_VALUES[level] ?? 0) >= (LEVEL_VALUES[logger.level] ?? 0);
}

/**
 * Fastify's per-request logger, made only when a line is actually written: pino's child()
 * serializes the request-id binding up front, a cost every request paid even when the
 * level (warn, say) writes nothing for it.
 */
export class LazyRequestLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private real(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  private write(level: string, args: unknown[]): void {
    if ((LEVEL_VALUES[level] ?? 0) < (LEVEL_VALUES[(this.made ?? this.parent).level] ?? 0)) return;
    (this.real()[level as 'info'] as LogFn)(...args);
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }

  error(...args: unknown[]): void {
    this.write('error', args);
  }

  warn(...args: unknown[]): void {
    this.write('warn', args);
  }

  info(...args: unknown[]): void {
    this.write('info', args);
  }

  debug(...args: unknown[]): void {
    this.write('debug', args);
  }

  trace(...args: unknown[]): void {
    this.write('trace', args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }
}

export function lazyChildLoggerFactory(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyRequestLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}
