// WAL checkpoints off the event loop. A commit appends the changed pages to the WAL; a
// checkpoint copies them into the database file. SQLite runs it inside the commit that crosses
// wal_autocheckpoint, so a request now and then waited for megabytes to be copied and synced
// (random-page writes such as PATCHes cross it every few batches). A thread of the server's
// copies them every interval instead, over a connection of its own; the writer's own checkpoint
// remains as a backstop should the thread fall behind. Commits stay durable either way: each
// one syncs the WAL before it returns.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface Checkpointer {
  stop(): Promise<void>;
}

/** The WAL size (pages) at which the writer checkpoints itself: the thread should never let it grow so far. */
export const BACKSTOP_PAGES = 10_000;

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

export function startCheckpointer(file: string, intervalMs = 100): Checkpointer {
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
        worker.postMessage('stop');
        stopping = exited;
      }
      return stopping;
    },
  };
}
