// Messages on PostgreSQL: SQL only (the rules are the services').
import { MESSAGE_COLUMNS, type MessageRepository, type MessageRow, toMessage, toTracedMessage } from '../messages.js';
import { activeTraceparent } from '../../tracing/switch.js';
import type { PostgresDatabase } from './driver.js';

export function createPostgresMessages(db: PostgresDatabase): MessageRepository {
  return {
    async get(accountId, id) {
      const row = await db.get<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id = $1 AND account_id = $2`, [id, accountId]);
      return row && toMessage(row);
    },

    async getBySeq(accountId, seq) {
      const row = await db.get<MessageRow & { trace: string | null }>(`SELECT ${MESSAGE_COLUMNS}, trace FROM messages WHERE account_id = $1 AND seq = $2`, [accountId, seq]);
      return row && toTracedMessage(row);
    },

    async list({ accountId, limit, status, afterSeq = 0 }) {
      const after = Math.floor(afterSeq);
      const rows = status
        ? await db.all<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE account_id = $1 AND status = $2 AND seq > $3 ORDER BY seq LIMIT $4`, [
            accountId, status, after, limit,
          ])
        : await db.all<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [accountId, after, limit]);
      return rows.map(toMessage);
    },

    async insert(tx, accountId, m) {
      // One statement: the account's next seq (its row lock orders the account's messages), the message.
      const row = await tx.get<MessageRow>(
        `WITH next AS (UPDATE accounts SET last_message_seq = last_message_seq + 1 WHERE id = $1 RETURNING last_message_seq AS seq)
         INSERT INTO messages (account_id, seq, id, message, status, created_at, trace)
         SELECT $1, seq, $2, $3, 'queued', $4, $5 FROM next RETURNING ${MESSAGE_COLUMNS}`,
        [accountId, m.id, m.message, m.createdAt, activeTraceparent() ?? null],
      );
      if (!row) throw new Error(`no account ${accountId}`);
      return toMessage(row);
    },

    async finish(tx, messages, outcome) {
      if (messages.length === 0) return 0;
      const [set, value] = outcome.status === 'delivered' ? ["status = 'delivered', delivered_at = $1", outcome.deliveredAt] : ["status = 'failed', failure_reason = $1", outcome.failureReason];
      // One statement for a whole batch.
      return tx.run(
        `UPDATE messages m SET ${set} FROM unnest($2::text[], $3::bigint[]) AS d(account_id, seq)
         WHERE m.account_id = d.account_id AND m.seq = d.seq AND m.status = 'queued'`,
        [value, messages.map((m) => m.accountId), messages.map((m) => m.seq)],
      );
    },

    async queueStats() {
      const row = await db.get<{ depth: number; oldest: string | null }>("SELECT count(*)::int AS depth, min(created_at) AS oldest FROM messages WHERE status = 'queued'");
      return { depth: row!.depth, oldestCreatedAt: row!.oldest ?? undefined };
    },
  };
}
