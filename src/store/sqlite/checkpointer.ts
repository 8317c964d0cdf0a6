// WAL checkpoints off the event loop. A commit appends the changed pages to the WAL; a
// checkpoint copies them into the database file. SQLite runs it inside the commit that crosses
// wal_autocheckpoint, so a request now and then waited for megabytes to be copied and synced
// (random-page writes such as PATCHes cross it every few batches). A thread of the server's
// copies them every second instead, over a connection of its own: a page rewritten several
// times in that second (a pet patched again, an index page) is copied once. Under continuous
// writes the WAL is never wholly copied when the next commit starts, so it only restarts after
// the writer's own checkpoint (the backstop), which then copies what the thread has not yet.
// Commits stay durable either way: each one syncs the WAL before it returns.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * The WAL size (pages) at which the writer checkpoints itself, letting the WAL restart from its
 * start. Well above a second of writes (~10 000 pages at 15 000 PATCHes/s), so the thread, not
 * a commit, copies nearly all of them; the WAL file can reach ~160 MB under sustained writes
 * (docs/performance.md, "PATCH, eighth round").
 */
export const BACKSTOP_PAGES = 40_000;

/** How often the thread checkpoints. */
export const CHECKPOINT_INTERVAL_MS = 1000;

interface ThreadData {
  driver: string;
  file: string;
  intervalMs: number;
}

/** The thread's code, run from its source text (a file would need tsx's loader in the thread under the tests). */
function checkpointThread(load: NodeJS.Require): void {
  const { parentPort, workerData } = load('node:worker_threads') as typeof import('node:worker_threads');
  const { driver, file, intervalMs } = workerData as ThreadData;
  const Database = load(driver) as typeof import('better-sqlite3');
  const db = new Database(file);
  // Another process's checkpoint in progress: skip this round rather than wait.
  db.pragma('busy_timeout = 0');
  const timer = setInterval(() => {
    try {
      // PASSIVE never blocks the writer or readers; what it cannot copy now waits for the next round.
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // SQLITE_BUSY or a failing disk: the writer's backstop checkpoint (and its errors) still apply.
    }
  }, intervalMs);
  parentPort?.once('message', () => {
    clearInterval(timer);
    db.close();
    parentPort.postMessage('stopped');
  });
}

export function startCheckpointer(file: string, intervalMs = CHECKPOINT_INTERVAL_MS): Checkpointer {
  const workerData: ThreadData = { driver: createRequire(import.meta.url).resolve('better-sqlite3'), file, intervalMs };
  const worker = new Worker(`(${checkpointThread.toString()})(require)`, { eval: true, workerData });
  // A thread that cannot start or fails leaves the backstop to do the work.
  worker.on('error', () => {});
  worker.unref();
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  // Asked to stop, it closes its connection and says so; then it is ended.
  worker.once('message', () => void worker.terminate());
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      if (!stopping) {
        // Referenced while it stops: an unreferenced thread would let a process with nothing else
        // left to wait for exit before its close finished (and logged "shut down cleanly").
        worker.ref();
        worker.postMessage('stop');
        stopping = exited;
      }
      return stopping;
    },
  };
}
