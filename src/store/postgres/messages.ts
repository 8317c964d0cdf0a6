// Messages and the job queue on PostgreSQL. Workers on any number of instances take due jobs
// with FOR UPDATE SKIP LOCKED (each row to one taker, nobody waits) and lease them; the
// message's final state and the job's removal commit together.
import { KEY_IN_FLIGHT, type JobRow, MESSAGE_COLUMNS, type MessageRow, toJob, toMessage } from '../rows.js';
import type { Job, ListMessagesQuery, MessageRepository, StoredMessage } from '../types.js';
import type { PostgresContext } from './context.js';

export function createPostgresMessages({ query, transaction }: PostgresContext): MessageRepository {
  /** Sets each job's message to its final state if it is still queued, and removes the jobs either way: one statement; how many moved. */
  const finish = async (jobs: readonly Job[], set: string, value: string): Promise<number> => {
    const [row] = await query<{ moved: number }>(
      `WITH done AS (DELETE FROM jobs WHERE id = ANY($2::bigint[]) RETURNING account_id, ref),
            moved AS (
              UPDATE messages m SET ${set} FROM done
              WHERE m.account_id = done.account_id AND m.seq = done.ref AND m.status = 'queued' RETURNING 1
            )
       SELECT count(*)::int AS moved FROM moved`,
      [value, jobs.map((job) => job.id)],
    );
    return row!.moved;
  };

  return {
    enqueueMessage(accountId, m, now, idempotencyKey) {
      return transaction<StoredMessage | undefined>(async (client, rollback) => {
        // One statement: the account's next seq, the message, its delivery job.
        const { rows } = await client.query<MessageRow>(
          `WITH next AS (UPDATE accounts SET last_message_seq = last_message_seq + 1 WHERE id = $1 RETURNING last_message_seq AS seq),
                message AS (
                  INSERT INTO messages (account_id, seq, id, message, status, created_at)
                  SELECT $1, seq, $2, $3, 'queued', $4 FROM next RETURNING ${MESSAGE_COLUMNS}
                ),
                job AS (INSERT INTO jobs (kind, account_id, ref, run_at, created_at) SELECT 'message.deliver', $1, seq, $5, $5 FROM next)
           SELECT * FROM message`,
          [accountId, m.id, m.message, m.createdAt, now],
        );
        if (!rows[0]) throw new Error(`no account ${accountId}`);
        const message = toMessage(rows[0]);
        if (idempotencyKey !== undefined) {
          const done = await client.query(`UPDATE idempotency_keys SET message_seq = $1 WHERE account_id = $2 AND key = $3 AND ${KEY_IN_FLIGHT}`, [
            message.seq, accountId, idempotencyKey,
          ]);
          // Another request completed this key meanwhile: undo ours, never a duplicate.
          if (done.rowCount !== 1) rollback(undefined);
        }
        return message;
      });
    },

    async getMessage(accountId, id) {
      const [row] = await query<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id = $1 AND account_id = $2`, [id, accountId]);
      return row && toMessage(row);
    },

    async getMessageBySeq(accountId, seq) {
      const [row] = await query<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE account_id = $1 AND seq = $2`, [accountId, seq]);
      return row && toMessage(row);
    },

    async listMessages({ accountId, limit, status, afterSeq = 0 }: ListMessagesQuery) {
      const rows = status
        ? await query<MessageRow>(
            `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE account_id = $1 AND status = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
            [accountId, status, Math.floor(afterSeq), limit],
          )
        : await query<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
            accountId, Math.floor(afterSeq), limit,
          ]);
      return rows.map(toMessage);
    },

    async claimJobs(kind, now, leaseMs, max) {
      const rows = await query<JobRow>(
        `UPDATE jobs SET leased_until = $1, attempts = attempts + 1
         WHERE id IN (
           SELECT id FROM jobs WHERE kind = $2 AND run_at <= $3 AND leased_until <= $3
           ORDER BY run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
         )
         RETURNING id, kind, account_id, ref, attempts`,
        [now + leaseMs, kind, now, max],
      );
      return rows.map(toJob);
    },

    async completeMessageDeliveries(jobs, deliveredAt) {
      return jobs.length === 0 ? 0 : finish(jobs, "status = 'delivered', delivered_at = $1", deliveredAt);
    },

    async retryJob(job, error, retryAt) {
      await query('UPDATE jobs SET run_at = $1, leased_until = 0, last_error = $2 WHERE id = $3', [retryAt, error, job.id]);
    },

    async failMessage(job, reason) {
      return (await finish([job], "status = 'failed', failure_reason = $1", reason)) === 1;
    },

    async messageQueueStats() {
      const [row] = await query<{ depth: number; oldest: string | null }>(
        "SELECT count(*)::int AS depth, min(created_at) AS oldest FROM messages WHERE status = 'queued'",
      );
      return { depth: row!.depth, oldestCreatedAt: row!.oldest ?? undefined };
    },
  };
}
