// Child processes of the benchmark (service, ceiling server, CLI calls): spawning,
// readiness, /proc sampling and a registry so every child dies with the bench, also on failure.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  exited: Promise<number | string>;
  /** Last lines of stdout+stderr, for error messages. */
  tail(): string;
}

const live = new Set<Child>();

// Last resort: `exit` handlers must be synchronous, so SIGKILL whatever is left.
process.on('exit', () => {
  for (const child of live) child.proc.kill('SIGKILL');
});

export function startChild(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { cwd?: string; forward?: boolean; cpu?: number; stdoutFile?: string } = {},
): Child {
  // taskset execs node in place, so the pid we get is the node process's.
  const [command, argv] =
    opts.cpu === undefined ? [process.execPath, args] : ['taskset', ['-c', String(opts.cpu), process.execPath, ...args]];
  // A service logging every request writes to a file: through a pipe, the bench would pay for reading it.
  const stdoutFd = opts.stdoutFile === undefined ? undefined : fs.openSync(opts.stdoutFile, 'a');
  const proc = spawn(command, argv, { env, cwd: opts.cwd, stdio: ['ignore', stdoutFd ?? 'pipe', 'pipe'] });
  if (stdoutFd !== undefined) fs.closeSync(stdoutFd);
  if (proc.pid === undefined) throw new Error(`could not start ${name}`);
  const lines: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      lines.push(line);
      if (lines.length > 40) lines.shift();
      // The service logs at warn: anything it prints is worth seeing while the bench runs.
      if (opts.forward) process.stderr.write(`[${name}] ${line}\n`);
    }
  };
  // Always drain the pipes: a child blocked on a full pipe would skew the measurement.
  proc.stdout?.on('data', collect);
  proc.stderr?.on('data', collect);
  const child: Child = {
    name,
    proc,
    pid: proc.pid,
    exited: new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        live.delete(child);
        resolve(code ?? signal ?? 'unknown');
      });
    }),
    tail: () => lines.join('\n'),
  };
  live.add(child);
  return child;
}

export function isRunning(child: Child): boolean {
  return child.proc.exitCode === null && child.proc.signalCode === null;
}

/** SIGTERM (lets the service shut down cleanly and write a --cpu-prof profile), then SIGKILL. */
export async function stopChild(child: Child, graceMs = 10_000): Promise<void> {
  if (!isRunning(child)) return;
  child.proc.kill('SIGTERM');
  const timer = sleep(graceMs).then(() => 'timeout' as const);
  if ((await Promise.race([child.exited, timer])) === 'timeout' && isRunning(child)) {
    child.proc.kill('SIGKILL');
    await child.exited;
  }
}

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...live].map((child) => stopChild(child, 5_000)));
}

/** Runs a short-lived node command (the CLI) and returns its stdout. */
export function runNode(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { env, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`node ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** A port that was free a moment ago (the race with other processes is acceptable here). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('no port'))));
    });
  });
}

/** Polls `url` until it answers 200, failing fast if the child exits first. */
export async function waitForHttp(child: Child, url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (!isRunning(child)) throw new Error(`${child.name} exited before ${url} answered:\n${child.tail()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(100);
  }
  throw new Error(`${child.name}: ${url} not ready after ${timeoutMs} ms (${last}):\n${child.tail()}`);
}

export interface MemoryStatus {
  /** Current resident set, kB. */
  rssKb: number;
  /** Peak resident set since the process started (kernel high-water mark), kB. */
  hwmKb: number;
}

export function readMemory(pid: number): MemoryStatus | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User+system CPU seconds of a process (all its threads, so GC helpers count too). */
export function readCpuSeconds(pid: number): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm (field 2) may contain spaces: count fields after its closing parenthesis.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / CLOCK_TICKS;
}

/** Busy and total CPU ticks of the whole machine, all cores (idle and iowait count as not busy). */
export function readMachineCpu(): { busy: number; total: number } | undefined {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    return { busy: total - (ticks[3] ?? 0) - (ticks[4] ?? 0), total };
  } catch {
    return undefined;
  }
}

export const ticksPerSecond = CLOCK_TICKS;

export function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Pins a process (all its threads) to one CPU; false when taskset is missing or fails. */
export function pinToCpu(pid: number, cpu: number): boolean {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Samples a process's RSS in the background and remembers the peak. */
export class RssSampler {
  peakRssKb = 0;
  hwmKb = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number, intervalMs = 250) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  sample(): MemoryStatus | undefined {
    const status = readMemory(this.pid);
    if (status) {
      this.peakRssKb = Math.max(this.peakRssKb, status.rssKb);
      this.hwmKb = Math.max(this.hwmKb, status.hwmKb);
    }
    return status;
  }

  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }
}
