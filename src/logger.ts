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

const KEY_SHAPED = /psk_(live|test)_[0-9A-Za-z]*/gi;
/**
 * Anything key-shaped, wherever a client put it (URL, a field, a header), becomes a harmless marker.
 * Most lines hold no "psk_" in any case: every match contains "k_" or "K_", which two indexOf
 * scans rule out for a fraction of the regex's cost.
 */
export const scrubSecrets = (line: string) =>
  line.indexOf('k_') === -1 && line.indexOf('K_') === -1 ? line : line.replace(KEY_SHAPED, 'psk_$1_[redacted]');

/**
 * Log lines are written asynchronously: a line is queued and written (with whatever queued
 * behind it) when the previous write completes, so under load one write carries many lines
 * and the event loop never waits on stdout. On a clean exit and on SIGTERM/SIGINT (server.ts)
 * the queue is flushed first; pino also flushes it synchronously on process 'exit'. kill -9
 * loses the lines still queued: at most those of the last moments (one write's worth).
 * A minLength buffer was measured and dropped (bench/log-line.ts: no gain at 4-16 KB, worse at
 * 16 KB) and would hold lines back on an idle server.
 */
export function createLogDestination(fd = 1): pino.DestinationStream & { flush(cb?: (err?: Error) => void): void } {
  return pino.destination({ dest: fd, sync: false });
}

/** Flushes the logger's queued lines, then exits; exits anyway after `timeoutMs` (a stuck stdout). */
export function exitAfterFlush(logger: Logger, code: number, timeoutMs = 2_000): void {
  const exit = () => process.exit(code);
  setTimeout(exit, timeoutMs).unref();
  try {
    logger.flush(() => exit());
  } catch {
    exit();
  }
}

export function createLogger(config: Pick<Config, 'logLevel'>, destination: pino.DestinationStream = createLogDestination()): Logger {
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

/** The per-request line's fields: what Fastify's `req` and `res` serializers take from a request. */
export interface CompletedRequest {
  reqId: string;
  method: string | undefined;
  url: string | undefined;
  /** The Accept-Version header (Fastify's serializer logs it). */
  version: string | string[] | undefined;
  host: string | string[] | undefined;
  remoteAddress: string | undefined;
  remotePort: number | undefined;
  statusCode: number;
  responseTime: number;
}

const str = JSON.stringify;
const field = (name: string, value: string | string[] | number | undefined) => (value === undefined ? '' : `,"${name}":${str(value)}`);

/**
 * Writes the "request completed" line, the one line per request, as
 * `log.info({ reqId, req, res, responseTime }, 'request completed')` would with Fastify's
 * serializers, byte for byte (test/http/logging.test.ts), but built in one pass: pino would
 * copy and walk every object for the redaction paths, then serialize it. None of these fields
 * can hold a secret the redaction paths name (no headers), and the line still goes through
 * scrubSecrets like every other. A logger that is not pino's gets the plain call.
 */
export function createRequestLineWriter(log: FastifyBaseLogger): (request: CompletedRequest) => void {
  const internals = log as unknown as Record<symbol, unknown>;
  const { streamSym, timeSym, chindingsSym, lsCacheSym } = pino.symbols;
  const stream = internals[streamSym] as { write(line: string): void } | undefined;
  const time = internals[timeSym] as (() => string) | undefined;
  const levels = internals[lsCacheSym] as Record<number, string> | undefined;
  if (!stream || !time || !levels || typeof internals[chindingsSym] !== 'string') {
    return (r) => {
      if (!writesAt(log, 'info')) return;
      const req = { method: r.method, url: r.url, version: r.version, host: r.host, remoteAddress: r.remoteAddress, remotePort: r.remotePort };
      log.info({ reqId: r.reqId, req, res: { statusCode: r.statusCode }, responseTime: r.responseTime }, 'request completed');
    };
  }
  return (r) => {
    if (!writesAt(log, 'info')) return;
    const line =
      `${levels[30]}${time()}${internals[chindingsSym] as string},"reqId":${str(r.reqId)}` +
      `,"req":{${`${field('method', r.method)}${field('url', r.url)}${field('version', r.version)}${field('host', r.host)}${field('remoteAddress', r.remoteAddress)}${field('remotePort', r.remotePort)}`.slice(1)}}` +
      `,"res":{"statusCode":${r.statusCode}},"responseTime":${str(r.responseTime)},"msg":"request completed"}\n`;
    stream.write(scrubSecrets(line));
  };
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
