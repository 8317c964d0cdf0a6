import fs from 'node:fs';
import pino, { type Bindings, type ChildLoggerOptions, type Logger } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import { hooks as tracingHooks } from './tracing/switch.js';

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
 * Log lines are written asynchronously, once per event-loop turn: the lines of a turn are
 * joined and handed to pino's asynchronous destination (sonic-boom) in a check-phase callback,
 * which writes them (with whatever queued behind) when its previous write completes. So under
 * load one write carries many lines, and the event loop never waits on stdout. Per turn rather
 * than per line: sonic-boom starts a write (a thread-pool hop) for the first line it gets while
 * idle, which made most writes carry one or two lines (bench/log-line.ts; docs/performance.md).
 * On a clean exit and on SIGTERM/SIGINT (server.ts) the queue is flushed first; on process
 * 'exit' the turn's lines and the queue are written synchronously. kill -9 loses the lines
 * still queued: at most those of the last moments (one turn's and one write's worth).
 * A minLength buffer was measured and dropped (no gain at 4-16 KB, worse at 16 KB) and would
 * hold lines back on an idle server.
 */
export function createLogDestination(fd = 1): pino.DestinationStream & { flush(cb?: (err?: Error) => void): void; flushSync(): void } {
  return new TurnBatchedDestination(pino.destination({ dest: fd, sync: false }), fd);
}

type SonicBoom = ReturnType<typeof pino.destination>;

/** Destinations with lines not yet handed on, written synchronously on process 'exit'. */
const unwritten = new Set<TurnBatchedDestination>();
let exitHookInstalled = false;

class TurnBatchedDestination {
  private pending = '';
  private ended = false;
  private readonly drain = () => {
    unwritten.delete(this);
    const lines = this.pending;
    this.pending = '';
    if (lines !== '' && !this.ended) this.sonic.write(lines);
  };

  constructor(
    private readonly sonic: SonicBoom,
    private readonly fd: number,
  ) {
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      // After pino's own hook (registered when the first destination was made): hand on what
      // the last turn wrote, then write everything synchronously.
      process.on('exit', () => {
        for (const destination of unwritten) destination.flushSync();
      });
    }
  }

  write(line: string): boolean {
    if (this.pending === '') {
      unwritten.add(this);
      setImmediate(this.drain);
    }
    this.pending += line;
    return true;
  }

  flush(cb?: (err?: Error) => void): void {
    this.drain();
    this.sonic.flush(cb);
  }

  /**
   * For process 'exit': sonic-boom's queue, then this turn's lines, written synchronously
   * (handing them to sonic-boom would start an asynchronous write the exit would cut short).
   */
  flushSync(): void {
    unwritten.delete(this);
    let lines = Buffer.from(this.pending);
    this.pending = '';
    try {
      this.sonic.flushSync();
      for (let tries = 0; lines.length > 0 && tries < 1000; ) {
        try {
          lines = lines.subarray(fs.writeSync(this.fd, lines));
        } catch (error) {
          // A full pipe: wait a moment for its reader, a bounded number of times.
          if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
          tries += 1;
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
        }
      }
    } catch {
      // Destroyed (ended, or stdout closed): nothing more can be written.
    }
  }

  end(): void {
    this.drain();
    this.ended = true;
    this.sonic.end();
  }
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

export function createLogger(logging: Config['logging'], destination: pino.DestinationStream = createLogDestination()): Logger {
  const tracing = tracingHooks;
  return pino(
    {
      level: logging.level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      hooks: { streamWrite: scrubSecrets },
      // Tracing on: every other line carries the active trace_id and span_id too.
      ...(tracing ? { mixin: () => tracing.ids() ?? {} } : {}),
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
  /** The request's server span, when tracing is on. */
  trace?: { trace_id: string; span_id: string } | undefined;
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
      log.info({ reqId: r.reqId, req, res: { statusCode: r.statusCode }, responseTime: r.responseTime, ...r.trace }, 'request completed');
    };
  }
  return (r) => {
    if (!writesAt(log, 'info')) return;
    const line =
      `${levels[30]}${time()}${internals[chindingsSym] as string},"reqId":${str(r.reqId)}` +
      `,"req":{${`${field('method', r.method)}${field('url', r.url)}${field('version', r.version)}${field('host', r.host)}${field('remoteAddress', r.remoteAddress)}${field('remotePort', r.remotePort)}`.slice(1)}}` +
      `,"res":{"statusCode":${r.statusCode}},"responseTime":${str(r.responseTime)}` +
      (r.trace === undefined ? '' : `,"trace_id":"${r.trace.trace_id}","span_id":"${r.trace.span_id}"`) +
      `,"msg":"request completed"}\n`;
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
