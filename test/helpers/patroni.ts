// A throwaway Patroni cluster for the failover test, built from deploy/patroni/ as it is: one
// etcd member, two PostgreSQL 15 nodes under Debian's patroni (deploy/patroni/patroni.yml, each
// node's addresses from PATRONI_* variables) and HAProxy's read-write port checked on /primary
// (deploy/patroni/haproxy.cfg). Everything listens on 127.0.0.1 on free ports, lives in one
// temporary folder, runs as the `postgres` OS user when the tests run as root (PostgreSQL and
// Patroni refuse root) and is stopped and deleted by destroy(), or at the latest when the test
// process exits. Skipped, and says so, when a program is missing, unless
// PETSTORE_TEST_REQUIRE_PATRONI=1 (CI), which makes that an error.
import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { HAPROXY_BIN } from './haproxy.js';
import { freePort } from './process.js';

const run = promisify(execFile);
const PATRONI_BIN = '/usr/bin/patroni';
const PATRONICTL_BIN = '/usr/bin/patronictl';
const ETCD_BIN = '/usr/bin/etcd';
/** deploy/patroni/patroni.yml names this bin_dir. */
const PG15_BIN = '/usr/lib/postgresql/15/bin';
const PATRONI_CONFIG = path.resolve('deploy/patroni/patroni.yml');
const HAPROXY_CONFIG = path.resolve('deploy/patroni/haproxy.cfg');

const missing = [PATRONI_BIN, PATRONICTL_BIN, ETCD_BIN, HAPROXY_BIN, path.join(PG15_BIN, 'postgres')].filter((file) => !existsSync(file));
if (missing.length > 0 && process.env.PETSTORE_TEST_REQUIRE_PATRONI) {
  throw new Error(`PETSTORE_TEST_REQUIRE_PATRONI is set but ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} missing (apt-get install -y patroni etcd-server haproxy postgresql-15).`);
}
/** A node:test skip reason when a program is missing, else false. */
export const patroniSkip: string | false = missing.length === 0
  ? false
  : `${missing.join(', ')} not found: install Debian's patroni, etcd-server, haproxy and postgresql-15 to run it`;

export interface Member {
  name: string;
  role: 'leader' | 'sync_standby' | 'replica' | string;
  state: string;
  timeline?: number;
}

export interface PatroniNode {
  name: string;
  api: string;
  dataDir: string;
}

export interface PatroniCluster {
  /** The service's PETSTORE_DATABASE_URL: HAProxy's read-write port. */
  url: string;
  nodes: PatroniNode[];
  /** What Patroni says of each member (asked of any node that answers). */
  members(): Promise<Member[]>;
  /** Polls members() every 100 ms until `ok` holds; the members then. */
  waitFor(what: string, ok: (members: Member[]) => boolean, timeoutMs: number): Promise<Member[]>;
  /** SIGKILL to the node's postmaster (its Patroni lives on); when it was sent. */
  killPostmaster(name: string): number;
  /** `patronictl switchover --leader … --candidate … --force`, as an operator runs it. */
  switchover(leader: string, candidate: string): Promise<void>;
  /** The tail of every process's output, for a failure message. */
  logs(): string;
  destroy(): void;
}

/** Patroni and PostgreSQL refuse root: run them as the postgres OS user then. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Leader running, every other member a running synchronous standby on its timeline. */
export const healthy = (members: Member[]): boolean =>
  members.length === 2 &&
  members.filter((m) => m.role === 'leader' && m.state === 'running').length === 1 &&
  members.every((m) => m.role === 'leader' || (m.role === 'sync_standby' && (m.state === 'running' || m.state === 'streaming')));

export const leaderOf = (members: Member[]): string | undefined => members.find((m) => m.role === 'leader')?.name;

export async function startPatroniCluster(): Promise<PatroniCluster> {
  const user = postgresUser();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-patroni-'));
  const own = (file: string) => user && chownSync(file, user.uid, user.gid);
  own(dir);
  const children: ChildProcess[] = [];
  const output = new Map<string, string>();
  const start = (name: string, command: string, args: string[], env: Record<string, string>, asPostgres = true) => {
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8', ...env },
      ...(asPostgres && user ? user : {}),
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: destroy() ends it with what it started (pg_basebackup, pg_rewind).
      detached: true,
    });
    output.set(name, '');
    const keep = (chunk: Buffer) => output.set(name, (output.get(name)! + chunk.toString()).slice(-20_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    children.push(child);
    return child;
  };
  const nodes: PatroniNode[] = [];
  let destroyed = false;
  const destroy = () => {
    if (destroyed) return;
    destroyed = true;
    process.off('exit', destroy);
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    for (const child of children) {
      try {
        if (child.pid && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // Patroni starts each postmaster in a session of its own: stop those by their data folder.
    for (const node of nodes) {
      if (!existsSync(path.join(node.dataDir, 'postmaster.pid'))) continue;
      spawnSync(path.join(PG15_BIN, 'pg_ctl'), ['-D', node.dataDir, '-m', 'immediate', '-w', '-t', '10', 'stop'], { stdio: 'ignore', timeout: 15_000, ...(user ?? {}) });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', destroy);
  // A runner's timeout ends the test process with SIGTERM, which skips 'exit': clean up then too.
  const onSignal = (signal: NodeJS.Signals) => {
    destroy();
    process.kill(process.pid, signal);
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const logs = () => [...output].map(([name, text]) => `--- ${name}\n${text.slice(-4000)}`).join('\n');

  try {
    const password = randomBytes(12).toString('hex');
    const config = path.join(dir, 'patroni.yml');
    copyFileSync(PATRONI_CONFIG, config);
    own(config);
    const [etcdPort, peerPort, lbPort] = [await freePort(), await freePort(), await freePort()];
    const etcdHosts = `127.0.0.1:${etcdPort}`;
    mkdirSync(path.join(dir, 'etcd'), { mode: 0o700 });
    own(path.join(dir, 'etcd'));
    start('etcd', ETCD_BIN, [], {
      ETCD_NAME: 'e1',
      ETCD_DATA_DIR: path.join(dir, 'etcd'),
      ETCD_LISTEN_CLIENT_URLS: `http://${etcdHosts}`,
      ETCD_ADVERTISE_CLIENT_URLS: `http://${etcdHosts}`,
      ETCD_LISTEN_PEER_URLS: `http://127.0.0.1:${peerPort}`,
      ETCD_INITIAL_ADVERTISE_PEER_URLS: `http://127.0.0.1:${peerPort}`,
      ETCD_INITIAL_CLUSTER: `e1=http://127.0.0.1:${peerPort}`,
    });
    await until('etcd is healthy', async () => (await fetch(`http://${etcdHosts}/health`)).ok, 20_000, logs);

    const lbEnv: Record<string, string> = { PETSTORE_PG_LB_BIND: `127.0.0.1:${lbPort}`, PETSTORE_PG_LB_ADMIN_SOCKET: path.join(dir, 'haproxy.sock') };
    for (const name of ['pg1', 'pg2']) {
      const [pgPort, apiPort] = [await freePort(), await freePort()];
      const node = { name, api: `http://127.0.0.1:${apiPort}`, dataDir: path.join(dir, name) };
      nodes.push(node);
      lbEnv[`PETSTORE_${name.toUpperCase()}`] = `127.0.0.1:${pgPort}`;
      lbEnv[`PETSTORE_${name.toUpperCase()}_API`] = String(apiPort);
      start(name, PATRONI_BIN, [config], {
        PATRONI_NAME: name,
        PATRONI_RESTAPI_LISTEN: `127.0.0.1:${apiPort}`,
        PATRONI_RESTAPI_CONNECT_ADDRESS: `127.0.0.1:${apiPort}`,
        PATRONI_POSTGRESQL_LISTEN: `127.0.0.1:${pgPort}`,
        PATRONI_POSTGRESQL_CONNECT_ADDRESS: `127.0.0.1:${pgPort}`,
        PATRONI_POSTGRESQL_DATA_DIR: node.dataDir,
        PATRONI_POSTGRESQL_PGPASS: path.join(dir, `${name}.pgpass`),
        PATRONI_ETCD3_HOSTS: etcdHosts,
        PATRONI_SUPERUSER_PASSWORD: password,
        PATRONI_REPLICATION_PASSWORD: password,
      });
    }
    start('haproxy', HAPROXY_BIN, ['-db', '-f', HAPROXY_CONFIG], lbEnv, false);

    const members = async (): Promise<Member[]> => {
      for (const node of nodes) {
        try {
          const res = await fetch(`${node.api}/cluster`, { signal: AbortSignal.timeout(2000) });
          if (res.ok) return ((await res.json()) as { members: Member[] }).members;
        } catch {
          // this node's API is not answering: ask the next
        }
      }
      return [];
    };
    const waitFor = async (what: string, ok: (m: Member[]) => boolean, timeoutMs: number) => {
      let last: Member[] = [];
      await until(what, async () => ok((last = await members())), timeoutMs, () => `${JSON.stringify(last)}\n${logs()}`);
      return last;
    };
    await waitFor('a leader and a synchronous standby', healthy, 90_000);
    const url = `postgres://postgres:${password}@127.0.0.1:${lbPort}/postgres`;
    await until('HAProxy reaches the primary', async () => {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      client.on('error', () => {});
      try {
        await client.connect();
        return (await client.query<{ ro: boolean }>('SELECT pg_is_in_recovery() AS ro')).rows[0]!.ro === false;
      } finally {
        await client.end().catch(() => {});
      }
    }, 20_000, logs);

    return {
      url,
      nodes,
      members,
      waitFor,
      killPostmaster(name) {
        const node = nodes.find((n) => n.name === name)!;
        const pid = Number(readFileSync(path.join(node.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
        process.kill(pid, 'SIGKILL');
        return Date.now();
      },
      async switchover(leader, candidate) {
        try {
          await run(PATRONICTL_BIN, ['-c', config, 'switchover', '--leader', leader, '--candidate', candidate, '--force'], {
            env: { ...process.env, PATRONI_ETCD3_HOSTS: etcdHosts },
            timeout: 60_000,
          });
        } catch (error) {
          const { stdout, stderr } = error as { stdout?: string; stderr?: string };
          throw new Error(`patronictl switchover failed: ${(error as Error).message}\n${stdout ?? ''}${stderr ?? ''}\n${logs()}`, { cause: error });
        }
      },
      logs,
      destroy,
    };
  } catch (error) {
    const text = logs();
    destroy();
    throw new Error(`${(error as Error).message}\n${text}`, { cause: error });
  }
}

/** Polls `check` every 100 ms (errors count as false) until it holds or `timeoutMs` passes. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, context: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms\n${context()}`);
    await sleep(100);
  }
}
