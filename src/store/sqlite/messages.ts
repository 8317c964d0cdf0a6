// Messages and the job queue on SQLite. Every write is one IMMEDIATE transaction: under the
// write lock, so processes sharing the file (--workers, the CLI) take turns, and a job leased
// by one worker is skipped by the others until its lease ends.
import { KEY_IN_FLIGHT, type JobRow, MESSAGE_COLUMNS, type MessageRow, toJob, toMessage } from '../rows.js';
import type { Job, ListMessagesQuery, MessageRepository } from '../types.js';
import { StoreConflictError } from '../errors.js';
import type { SqliteContext } from './context.js';

export function createSqliteMessages({ db, stmt, nextIds }: SqliteContext): MessageRepository {
  const enqueue = db.transaction((accountId: string, m: { id: string; message: string; createdAt: string }, now: number, key: string | undefined) => {
    const seq = nextIds('last_message_seq', accountId, 1);
    const row = stmt<unknown[], MessageRow>(
      `INSERT INTO messages (account_id, seq, id, message, status, created_at) VALUES (?, ?, ?, ?, 'queued', ?) RETURNING ${MESSAGE_COLUMNS}`,
    ).get(accountId, seq, m.id, m.message, m.createdAt)!;
    stmt<unknown[], unknown>("INSERT INTO jobs (kind, account_id, ref, run_at, created_at) VALUES ('message.deliver', ?, ?, ?, ?)").run(accountId, seq, now, now);
    if (key !== undefined) {
      const done = stmt<[number, string, string], unknown>(`UPDATE idempotency_keys SET message_seq = ? WHERE account_id = ? AND key = ? AND ${KEY_IN_FLIGHT}`).run(seq, accountId, key);
      // Another request completed this key meanwhile: undo ours, never a duplicate.
      if (done.changes !== 1) throw new StoreConflictError('idempotency key completed meanwhile');
    }
    return toMessage(row);
  });

  const claim = db.transaction((kind: Job['kind'], now: number, leaseMs: number, max: number) =>
    stmt<[number, string, number, number, number], JobRow>(
      `UPDATE jobs SET leased_until = ?, attempts = attempts + 1
       WHERE id IN (SELECT id FROM jobs WHERE kind = ? AND run_at <= ? AND leased_until <= ? ORDER BY run_at, id LIMIT ?)
       RETURNING id, kind, account_id, ref, attempts`,
    ).all(now + leaseMs, kind, now, now, max).map(toJob),
  );

  /** Sets each job's message to its final state if it is still queued, and removes the jobs either way; how many moved. */
  const finish = db.transaction((jobs: readonly Job[], set: string, values: unknown[]): number => {
    let moved = 0;
    for (const job of jobs) {
      moved += stmt<unknown[], unknown>(`UPDATE messages SET ${set} WHERE account_id = ? AND seq = ? AND status = 'queued'`).run(...values, job.accountId, job.ref).changes;
      stmt<[number], unknown>('DELETE FROM jobs WHERE id = ?').run(job.id);
    }
    return moved;
  });

  return {
    async enqueueMessage(accountId, message, now, idempotencyKey) {
      try {
        return enqueue.immediate(accountId, message, now, idempotencyKey);
      } catch (error) {
        if (error instanceof StoreConflictError) return undefined;
        throw error;
      }
    },

    async getMessage(accountId, id) {
      const row = stmt<[string, string], MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id = ? AND account_id = ?`).get(id, accountId);
      return row && toMessage(row);
    },

    async getMessageBySeq(accountId, seq) {
      const row = stmt<[string, number], MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE account_id = ? AND seq = ?`).get(accountId, seq);
      return row && toMessage(row);
    },

    async listMessages({ accountId, limit, status, afterSeq = 0 }: ListMessagesQuery) {
      const rows = status
        ? stmt<[string, string, number, number], MessageRow>(
            `SELECT ${MESSAGE_COLUMNS} FROM messages INDEXED BY messages_by_account_status WHERE account_id = ? AND status = ? AND seq > ? ORDER BY seq LIMIT ?`,
          ).all(accountId, status, afterSeq, limit)
        : stmt<[string, number, number], MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`).all(accountId, afterSeq, limit);
      return rows.map(toMessage);
    },

    async claimJobs(kind, now, leaseMs, max) {
      // An idle worker polls often: look without the write lock first, take it only for work.
      const due = stmt<[string, number, number], unknown>('SELECT 1 FROM jobs WHERE kind = ? AND run_at <= ? AND leased_until <= ? LIMIT 1').get(kind, now, now);
      return due === undefined ? [] : claim.immediate(kind, now, leaseMs, max);
    },

    async completeMessageDeliveries(jobs, deliveredAt) {
      return jobs.length === 0 ? 0 : finish.immediate(jobs, "status = 'delivered', delivered_at = ?", [deliveredAt]);
    },

    async retryJob(job, error, retryAt) {
      stmt<[number, string, number], unknown>('UPDATE jobs SET run_at = ?, leased_until = 0, last_error = ? WHERE id = ?').run(retryAt, error, job.id);
    },

    async failMessage(job, reason) {
      return finish.immediate([job], "status = 'failed', failure_reason = ?", [reason]) === 1;
    },

    async messageQueueStats() {
      const row = stmt<[], { depth: number; oldest: string | null }>("SELECT count(*) AS depth, min(created_at) AS oldest FROM messages WHERE status = 'queued'").get()!;
      return { depth: row.depth, oldestCreatedAt: row.oldest ?? undefined };
    },
  };
}
