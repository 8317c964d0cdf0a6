// Runs the built CLI (`bin/petstore.js`) as real child processes.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { type IncomingHttpHeaders, request as httpRequestRaw } from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { systemClock } from '../../src/clock.js';
import { createServices } from '../../src/services/index.js';
import { createStore } from '../../src/store/index.js';
import { storeConfig } from './store-config.js';

const BIN = path.resolve('bin/petstore.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `petstore <args>` to completion. With timeoutMs, a command still running then (say a
 * `serve` that should have refused to start) is killed and the call rejects, so that no
 * process outlives the test.
 */
export async function cli(args: string[], env: Record<string, string>, options: { timeoutMs?: number } = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  let timedOut = false;
  const timer = options.timeoutMs === undefined
    ? undefined
    : setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, options.timeoutMs);
  const [code] = (await once(child, 'close')) as [number];
  clearTimeout(timer);
  if (timedOut) throw new Error(`petstore ${args.join(' ')} still ran after ${options.timeoutMs} ms (killed):\n${stdout}${stderr}`);
  return { code, stdout, stderr };
}

export async function cliJson<T>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await cli([...args, '--json'], env);
  if (result.code !== 0) throw new Error(`petstore ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** One JSON log line (pino): `pid` tells which process (primary or worker) wrote it. */
export type LogLine = Record<string, unknown> & { pid?: number; msg?: string; level?: number };

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout (JSON log lines; with --workers, the workers' too). */
  output(): string;
  /** Everything it wrote to stderr. */
  errors(): string;
  /** stdout parsed as JSON log lines (lines that are not JSON are skipped). */
  logs(): LogLine[];
  /** Resolves with the first log line (already written or to come) that matches; rejects after timeoutMs. */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartServerOptions {
  /** The command to run: `serve` (default) or `worker` (whose health port listens with the same log line). */
  command?: 'serve' | 'worker';
  /**
   * The stdout pattern that means "ready"; its first group must be the base URL. Default: the
   * primary's "cluster ready" line when args ask for more than one worker (each worker's own
   * "Server listening at" line comes earlier, with the same shared port), else Fastify's
   * "Server listening at" line.
   */
  ready?: RegExp;
  /** How long to wait for it (default 20 s). */
  timeoutMs?: number;
  /** Called with each JSON log line as it arrives, from the start (before ready). */
  onLogLine?: (line: LogLine) => void;
  /** Node's own flags, before the script (V8's `--log-ic`, say). */
  nodeArgs?: string[];
}

const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/;
const CLUSTER_READY = /cluster ready: \d+ workers listening at (http:\/\/127\.0\.0\.1:\d+)/;

function workersArg(args: string[]): number {
  for (const [i, arg] of args.entries()) {
    if (arg === '--workers') return Number(args[i + 1]);
    if (arg.startsWith('--workers=')) return Number(arg.slice('--workers='.length));
  }
  return 1;
}

function parseLines(text: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      // a partial line still being written
    }
  }
  return lines;
}

// Generous: a start is ~1 s alone, but CI runs four test files at once on 2 cores, and a burst
// of them (or a background image build) has stretched a start past 20 s. Not a speed assertion.
const START_MS = 45_000;
const CLUSTER_START_MS = 60_000;

/** Starts `petstore serve` (or `worker`) on a free port and resolves once it listens (with --workers N, once all N do). */
export async function startServerProcess(
  env: Record<string, string>,
  args: string[] = [],
  options: StartServerOptions = {},
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), BIN, options.command ?? 'serve', ...args], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', PETSTORE_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ready = options.ready ?? (workersArg(args) > 1 ? CLUSTER_READY : LISTENING);
  let out = '';
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  let pending = '';
  child.stdout!.on('data', (c: Buffer) => {
    const text = c.toString();
    out += text;
    if (!options.onLogLine) return;
    const lines = (pending + text).split('\n');
    pending = lines.pop() ?? '';
    for (const line of parseLines(lines.join('\n'))) options.onLogLine(line);
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start: ${out}${err}`));
    }, options.timeoutMs ?? (workersArg(args) > 1 ? CLUSTER_START_MS : START_MS));
    const check = () => {
      const match = ready.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}: ${out}${err}`));
    });
  });
  const logs = () => parseLines(out);
  return {
    url,
    child,
    output: () => out,
    errors: () => err,
    logs,
    waitForLog(match, timeoutMs = 10_000) {
      return new Promise<LogLine>((resolve, reject) => {
        const check = () => {
          const found = logs().find(match);
          if (!found) return false;
          clearTimeout(timer);
          child.stdout!.off('data', check);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          child.stdout!.off('data', check);
          reject(new Error(`no matching log line within ${timeoutMs} ms:\n${out}${err}`));
        }, timeoutMs);
        if (!check()) child.stdout!.on('data', check);
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      // 'close' comes once its output is read to the end (the last log line included); bounded,
      // since a killed cluster's orphaned workers could hold the pipe open (SIGKILL: 2 s). After
      // a graceful signal nothing is orphaned, and under CI's load the last line of a clean exit
      // once took longer than 2 s to be read: 10 s.
      const closed = once(child, 'close');
      child.kill(signal);
      const [code] = (await once(child, 'exit')) as [number | null];
      const bound = signal === 'SIGKILL' ? 2_000 : 10_000;
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, bound).unref())]);
      return code;
    },
  };
}

/**
 * A new account with one active key, written straight to the database through the real
 * services (what the CLI does, without the cost of a process per call). Environment: production.
 */
export async function createAccountWithKey(
  env: Record<string, string>,
  name = 'Test account',
): Promise<{ accountId: string; keyId: string; key: string }> {
  const databaseUrl = env.PETSTORE_DATABASE_URL;
  if (!databaseUrl) throw new Error('createAccountWithKey needs PETSTORE_DATABASE_URL');
  const store = await createStore(storeConfig(databaseUrl, { pgPoolMax: 1 }));
  try {
    const services = await createServices({ store, clock: systemClock, environment: 'production' });
    const account = await services.accounts.create(name);
    const key = await services.apiKeys.create(account.id);
    return { accountId: account.id, keyId: key.id, key: key.key };
  } finally {
    await store.close();
  }
}

export interface HttpResult {
  status: number;
  headers: IncomingHttpHeaders;
  /** Parsed JSON, or the text when the body is not JSON. */
  body: unknown;
}

/**
 * One HTTP request on a connection of its own (no keep-alive agent), so that requests to a
 * `--workers` cluster are spread over the workers instead of sticking to one connection.
 */
export function httpRequest(
  baseUrl: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<HttpResult> {
  const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (payload) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.length);
  }
  return new Promise((resolve, reject) => {
    const req = httpRequestRaw(new URL(path, baseUrl), { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        if ((res.headers['content-type'] ?? '').startsWith('application/json') && text !== '') body = JSON.parse(text);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.on('error', reject);
    // Rejects with code ETIMEDOUT when no response has arrived in time.
    req.setTimeout(options.timeoutMs ?? 10_000, () =>
      req.destroy(Object.assign(new Error(`${method} ${path}: no response within ${options.timeoutMs ?? 10_000} ms`), { code: 'ETIMEDOUT' })),
    );
    req.end(payload);
  });
}

/** A TCP port that was free a moment ago on 127.0.0.1 (for a server that must come back on the same port). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
