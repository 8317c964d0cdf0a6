// A throwaway PostgreSQL cluster (initdb + pg_ctl on a spare port, in a temp dir) that tests
// can stop and start under a running server. Needs the PostgreSQL server binaries.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './process.js';

const run = promisify(execFile);

/** Directory with initdb and pg_ctl: PETSTORE_TEST_PG_BIN, else the newest /usr/lib/postgresql/<version>/bin. */
function findPgBin(): string | undefined {
  const candidates = process.env.PETSTORE_TEST_PG_BIN
    ? [process.env.PETSTORE_TEST_PG_BIN]
    : (existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql') : [])
        .sort((x, y) => Number(y) - Number(x))
        .map((version) => path.join('/usr/lib/postgresql', version, 'bin'));
  return candidates.find((dir) => existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl')));
}

/** initdb refuses to run as root: then the cluster belongs to the `postgres` OS user. */
function pgUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

export interface ThrowawayPostgres {
  url: string;
  start(): Promise<void>;
  /** Fast shutdown: open sessions are terminated, then the port closes. */
  stop(): Promise<void>;
  /** Stops it (immediate mode) if running and deletes its files. */
  destroy(): void;
}

export async function createThrowawayPostgres(bin: string): Promise<ThrowawayPostgres> {
  const user = pgUser();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = path.join(dir, 'data');
  const argv = (tool: string, args: string[]) =>
    user ? ['runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args]] as const : [path.join(bin, tool), args] as const;
  const pg = async (tool: string, args: string[]) => {
    const [command, commandArgs] = argv(tool, args);
    await run(command, commandArgs, { timeout: 30_000 });
  };
  const destroy = () => {
    const [command, commandArgs] = argv('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    if (existsSync(path.join(data, 'postmaster.pid'))) spawnSync(command, commandArgs, { stdio: 'ignore', timeout: 10_000 });
    rmSync(dir, { recursive: true, force: true });
  };
  // Also on an abrupt exit of the test process: never leave a cluster running.
  process.once('exit', destroy);
  try {
    await pg('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync']);
    const port = await freePort();
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    const cluster: ThrowawayPostgres = {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      start: () => pg('pg_ctl', ['-D', data, '-l', path.join(dir, 'server.log'), '-o', options, '-w', '-t', '20', 'start']),
      stop: () => pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '20', 'stop']),
      destroy() {
        process.off('exit', destroy);
        destroy();
      },
    };
    await cluster.start();
    return cluster;
  } catch (error) {
    destroy();
    throw error;
  }
}

/** The binaries' directory, or undefined when they are not installed. */
export const PG_BIN = findPgBin();
/** A node:test skip reason when the binaries are missing, else false. */
export const pgSkip: string | false = PG_BIN
  ? false
  : 'the PostgreSQL server binaries (initdb, pg_ctl) were not found: set PETSTORE_TEST_PG_BIN to their directory to run them';
