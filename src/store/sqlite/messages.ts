// Messages on SQLite: SQL only (the rules are the services').
import { MESSAGE_COLUMNS, type MessageRepository, type MessageRow, toMessage, toTracedMessage } from '../messages.js';
import { activeTraceparent } from '../../tracing/switch.js';
import { nextIds } from '../accounts.js';
import type { SqliteDatabase } from './driver.js';

export function createSqliteMessages(db: SqliteDatabase): MessageRepository {
  return {
    async get(accountId, id) {
      const row = await db.get<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id = ? AND account_id = ?`, [id, accountId]);
      return row && toMessage(row);
    },

    async getBySeq(accountId, seq) {
      const row = await db.get<MessageRow & { trace: string | null }>(`SELECT ${MESSAGE_COLUMNS}, trace FROM messages WHERE account_id = ? AND seq = ?`, [accountId, seq]);
      return row && toTracedMessage(row);
    },

    async list({ accountId, limit, status, afterSeq = 0 }) {
      const rows = status
        ? await db.all<MessageRow>(
            `SELECT ${MESSAGE_COLUMNS} FROM messages INDEXED BY messages_by_account_status WHERE account_id = ? AND status = ? AND seq > ? ORDER BY seq LIMIT ?`,
            [accountId, status, afterSeq, limit],
          )
        : await db.all<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`, [accountId, afterSeq, limit]);
      return rows.map(toMessage);
    },

    async insert(tx, accountId, m) {
      const seq = await nextIds(tx, 'last_message_seq', accountId, 1);
      const row = await tx.get<MessageRow>(
        `INSERT INTO messages (account_id, seq, id, message, status, created_at, trace) VALUES (?, ?, ?, ?, 'queued', ?, ?) RETURNING ${MESSAGE_COLUMNS}`,
        [accountId, seq, m.id, m.message, m.createdAt, activeTraceparent() ?? null],
      );
      return toMessage(row!);
    },

    async finish(tx, messages, outcome) {
      const [set, value] = outcome.status === 'delivered' ? ["status = 'delivered', delivered_at = ?", outcome.deliveredAt] : ["status = 'failed', failure_reason = ?", outcome.failureReason];
      let moved = 0;
      for (const { accountId, seq } of messages) {
        moved += await tx.run(`UPDATE messages SET ${set} WHERE account_id = ? AND seq = ? AND status = 'queued'`, [value, accountId, seq]);
      }
      return moved;
    },

    async queueStats() {
      const row = await db.get<{ depth: number; oldest: string | null }>("SELECT count(*) AS depth, min(created_at) AS oldest FROM messages WHERE status = 'queued'");
      return { depth: row!.depth, oldestCreatedAt: row!.oldest ?? undefined };
    },
  };
}
