// HAProxy (Debian's package, /usr/sbin/haproxy) in the foreground (-db) with the repository's
// deploy/haproxy.cfg, in front of three instances on 127.0.0.1; its runtime API tells the
// tests what it thinks of each instance. Tests skip, and say so, when haproxy is missing,
// unless PETSTORE_TEST_REQUIRE_HAPROXY=1 (CI), which makes a missing haproxy an error.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './process.js';

export const HAPROXY_BIN = process.env.PETSTORE_TEST_HAPROXY_BIN || '/usr/sbin/haproxy';
export const HAPROXY_CONFIG = path.resolve('deploy/haproxy.cfg');
/** The server names in deploy/haproxy.cfg, in order. */
export const SERVER_NAMES = ['a', 'b', 'c'] as const;

const present = existsSync(HAPROXY_BIN);
if (!present && process.env.PETSTORE_TEST_REQUIRE_HAPROXY) {
  throw new Error(`PETSTORE_TEST_REQUIRE_HAPROXY is set but ${HAPROXY_BIN} is missing (apt-get install -y haproxy).`);
}
/** A node:test skip reason when haproxy is missing, else false. */
export const haproxySkip: string | false = present
  ? false
  : `${HAPROXY_BIN} was not found: install Debian's haproxy (apt-get install -y haproxy) or set PETSTORE_TEST_HAPROXY_BIN to run them`;

export interface Haproxy {
  /** The frontend's base URL. */
  url: string;
  child: ChildProcess;
  /** Status of each server as HAProxy sees it ("UP", "DOWN", "MAINT", "UP 1/2", …). */
  serverStatus(): Promise<Record<string, string>>;
  /** Resolves once `server` has `status` (exactly, or with a transition suffix when prefix), polling every 50 ms. */
  waitForStatus(server: string, status: 'UP' | 'DOWN', timeoutMs: number): Promise<number>;
  output(): string;
  stop(): Promise<void>;
}

/** Sends one command to the runtime API and returns the answer. */
function adminCommand(socketPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.end(`${command}\n`));
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

export async function startHaproxy(servers: readonly string[]): Promise<Haproxy> {
  if (servers.length !== SERVER_NAMES.length) throw new Error(`deploy/haproxy.cfg has ${SERVER_NAMES.length} servers`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-haproxy-'));
  const socketPath = path.join(dir, 'admin.sock');
  const port = await freePort();
  const child = spawn(HAPROXY_BIN, ['-db', '-f', HAPROXY_CONFIG], {
    env: {
      ...process.env,
      PETSTORE_LB_BIND: `127.0.0.1:${port}`,
      PETSTORE_LB_ADMIN_SOCKET: socketPath,
      PETSTORE_A: servers[0]!,
      PETSTORE_B: servers[1]!,
      PETSTORE_C: servers[2]!,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);

  const serverStatus = async () => {
    const csv = await adminCommand(socketPath, 'show stat');
    const [header, ...rows] = csv.trim().split('\n');
    const columns = header!.replace(/^# /, '').split(',');
    const at = (name: string) => columns.indexOf(name);
    const status: Record<string, string> = {};
    for (const row of rows) {
      const cells = row.split(',');
      if (cells[at('pxname')] === 'petstore' && SERVER_NAMES.includes(cells[at('svname')] as never)) {
        status[cells[at('svname')]!] = cells[at('status')]!;
      }
    }
    return status;
  };

  for (let i = 0; ; i += 1) {
    if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}: ${out}`);
    if (existsSync(socketPath)) {
      try {
        await serverStatus();
        break;
      } catch {
        // not answering yet
      }
    }
    if (i > 100) {
      kill();
      throw new Error(`haproxy did not start: ${out}`);
    }
    await sleep(50);
  }

  return {
    url: `http://127.0.0.1:${port}`,
    child,
    serverStatus,
    async waitForStatus(server, wanted, timeoutMs) {
      const start = Date.now();
      for (;;) {
        const status = (await serverStatus())[server];
        if (status === wanted) return Date.now() - start;
        if (Date.now() - start > timeoutMs) throw new Error(`haproxy: server ${server} is ${status}, not ${wanted}, after ${timeoutMs} ms`);
        await sleep(50);
      }
    },
    output: () => out,
    async stop() {
      process.off('exit', kill);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
