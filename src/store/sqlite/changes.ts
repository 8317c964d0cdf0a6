// Has another connection (another process, the CLI, a --workers sibling) committed? Asked
// before every cached read; the answer is reused for the rest of one synchronous run (one
// socket read's worth of requests: the auth check and the lookup of a request share it), which
// is exact: anything committed before those bytes were read is seen.
import { createChangeCheck } from './change-check.js';
import type { SqliteDatabase } from './driver.js';
import type { ReadCache } from './read-cache.js';

export interface ExternalChanges {
  /** A number that changes when another connection has committed; clears the read cache then. */
  counter(): number;
  close(): void;
}

export function watchExternalChanges(db: SqliteDatabase, cache: ReadCache | undefined): ExternalChanges {
  const changes = createChangeCheck(db.connection, db.file);
  let seen: number | undefined;
  let fresh = false;
  const forget = () => {
    fresh = false;
  };
  return {
    counter() {
      if (fresh) return seen!;
      const current = changes.current();
      if (seen !== undefined && current !== seen) cache?.clear();
      seen = current;
      fresh = true;
      queueMicrotask(forget);
      return current;
    },
    close: () => changes.close(),
  };
}
