// Group commit: the writes submitted during one event-loop turn (and those submitted while a
// batch is being written) go to the database as one transaction, so one commit (one WAL flush)
// makes all of them durable before any caller hears back. One batch is written at a time; with
// `overlap`, the next one starts while this one's callers are being answered.
// A batch that fails for a reason other than the database being away is written again one
// item per transaction, so only the items at fault reject their callers.
import { StoreUnavailableError } from '../errors.js';
import { hooks as tracingHooks } from '../../tracing/switch.js';

export interface GroupCommitOptions<I, R> {
  /** Most items one batch takes; the rest wait for the next one. */
  max: number;
  /**
   * Writes the batch in one transaction; results in item order. It throws when nothing was
   * written; an item it could not write (and that nothing was written for) is an Error.
   */
  writeBatch(items: readonly I[]): Promise<Array<R | Error>>;
  /** Writes one item in a transaction of its own. */
  writeOne(item: I): Promise<R>;
  /**
   * Start the next batch before answering this one's callers (on the next turn), so its first
   * statements reach the database while the answers are written: for a database in another
   * process (PostgreSQL; SqlDatabase.remote). Not for SQLite, which would write the next batch
   * before answering this one.
   */
  overlap?: boolean;
  /** Told which items were just written or attempted (before their callers hear back). */
  written?(items: readonly I[]): void;
  /**
   * Tracing on: the item as written when its submitter's request was sampled (`link`, its
   * captured span context), e.g. with its traceparent. Asked at commit, so a request the
   * sampler dropped costs nothing here.
   */
  traced?(item: I, link: unknown): I;
}

export interface GroupCommit<I, R> {
  submit(item: I): Promise<R>;
  /** Resolves when everything submitted so far is settled. */
  drain(): Promise<void>;
}

interface Pending<I, R> {
  item: I;
  /** The submitting request's span context (tracing on): the batch's span links to it. */
  link?: unknown;
  resolve(result: R): void;
  reject(error: unknown): void;
}

export function createGroupCommit<I, R>(options: GroupCommitOptions<I, R>): GroupCommit<I, R> {
  const queue: Pending<I, R>[] = [];
  /** A batch's transaction is open (one at a time). */
  let writing = false;
  /** Batches whose callers have not all heard back yet. */
  const unsettled = new Set<Promise<void>>();
  // Read once: with tracing off, nothing below looks at it again.
  const tracing = tracingHooks;

  /** One transaction per item: each settles on its own. */
  const writeEach = async (items: readonly I[]): Promise<PromiseSettledResult<R>[]> => {
    const settled: PromiseSettledResult<R>[] = [];
    for (const item of items) {
      await options.writeOne(item).then(
        (value) => settled.push({ status: 'fulfilled', value }),
        (reason: unknown) => settled.push({ status: 'rejected', reason }),
      );
    }
    return settled;
  };

  const write = async (items: readonly I[]): Promise<PromiseSettledResult<R>[]> => {
    try {
      return (await options.writeBatch(items)).map((value) =>
        value instanceof Error ? { status: 'rejected', reason: value } : { status: 'fulfilled', value },
      );
    } catch (error) {
      if (error instanceof StoreUnavailableError) return items.map(() => ({ status: 'rejected', reason: error }));
      return writeEach(items);
    }
  };

  const commit = async (batch: Pending<I, R>[]): Promise<void> => {
    const { traced } = options;
    const items = batch.map((pending) => (traced && pending.link !== undefined ? traced(pending.item, pending.link) : pending.item));
    let settled: PromiseSettledResult<R>[];
    try {
      settled = await (tracing
        ? tracing.inSpan('group commit', batch.map((pending) => pending.link), { 'db.operation.batch.size': items.length }, () => write(items))
        : write(items));
      // Before anyone hears back (a read cache forgets what these writes made stale).
      options.written?.(items);
    } finally {
      writing = false;
    }
    // Not after a batch the database refused for being away (a failover): its callers hear back
    // first, and the next batch starts as without overlap.
    if (options.overlap && !settled.some((result) => result.status === 'rejected' && result.reason instanceof StoreUnavailableError)) {
      flush();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    settled.forEach((result, i) => {
      if (result.status === 'fulfilled') batch[i]!.resolve(result.value);
      else batch[i]!.reject(result.reason);
    });
  };

  const flush = () => {
    if (writing || queue.length === 0) return;
    writing = true;
    const done: Promise<void> = commit(queue.splice(0, options.max)).finally(() => {
      unsettled.delete(done);
      // Whatever queued meanwhile goes in the next batch, at once.
      flush();
    });
    unsettled.add(done);
  };

  return {
    submit(item) {
      return new Promise<R>((resolve, reject) => {
        queue.push(tracing ? { item, resolve, reject, link: tracing.capture() } : { item, resolve, reject });
        // setImmediate: after this turn's I/O callbacks, so every request parsed in it joins.
        if (queue.length === 1 && !writing) setImmediate(flush);
      });
    },
    async drain() {
      while (unsettled.size > 0 || queue.length > 0) {
        flush();
        await Promise.all(unsettled);
      }
    },
  };
}
