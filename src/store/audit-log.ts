// The audit log as stored: rows are appended in the transaction of the change they record and
// never changed; pruned by age.
import { nextIds } from './accounts.js';
import type { Sql, SqlDatabase } from './core/sql.js';

export interface AuditRecord {
  /** Position in the account's log (pages, `after`). */
  seq: number;
  id: string;
  action: string;
  actor: { type: 'api_key'; keyId: string } | { type: 'cli' };
  target: { type: string; id: string };
  /** A roll's new key. */
  newKeyId?: string | undefined;
  requestId: string | null;
  clientAddress: string | null;
  createdAt: string;
}

export type NewAuditRecord = Omit<AuditRecord, 'seq'>;

interface AuditRow {
  seq: number;
  id: string;
  action: string;
  actor_type: 'api_key' | 'cli';
  actor_key_id: string | null;
  target_type: string;
  target_id: string;
  new_key_id: string | null;
  request_id: string | null;
  client_address: string | null;
  created_at: string;
}

const COLUMNS = 'seq, id, action, actor_type, actor_key_id, target_type, target_id, new_key_id, request_id, client_address, created_at';

const toRecord = (row: AuditRow): AuditRecord => ({
  seq: Number(row.seq),
  id: row.id,
  action: row.action,
  actor: row.actor_type === 'cli' || row.actor_key_id === null ? { type: 'cli' } : { type: 'api_key', keyId: row.actor_key_id },
  target: { type: row.target_type, id: row.target_id },
  ...(row.new_key_id === null ? {} : { newKeyId: row.new_key_id }),
  requestId: row.request_id,
  clientAddress: row.client_address,
  createdAt: row.created_at,
});

export interface AuditLogRepository {
  /** Appends the entry in the caller's transaction (numbered after the account's last). */
  append(tx: Sql, accountId: string, entry: NewAuditRecord): Promise<void>;
  /** The account's entries after `afterSeq`, oldest first, at most `limit`. */
  list(query: { accountId: string; afterSeq: number; limit: number }): Promise<AuditRecord[]>;
  /** Deletes entries created before `before` (ISO); how many. */
  prune(before: string): Promise<number>;
  /**
   * Notes, in `tx`, that an expired key's use is being audited at `now`, unless one was after
   * `since`; true when this one is to be written.
   */
  claimExpiredUse(tx: Sql, keyId: string, now: string, since: string): Promise<boolean>;
}

export function createAuditLogRepository(db: SqlDatabase): AuditLogRepository {
  return {
    async append(tx, accountId, e) {
      const seq = await nextIds(tx, 'last_audit_seq', accountId, 1);
      await tx.run(`INSERT INTO audit_log (account_id, ${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
        accountId, seq, e.id, e.action, e.actor.type, e.actor.type === 'api_key' ? e.actor.keyId : null,
        e.target.type, e.target.id, e.newKeyId ?? null, e.requestId, e.clientAddress, e.createdAt,
      ]);
    },
    async list({ accountId, afterSeq, limit }) {
      const rows = await db.all<AuditRow>(`SELECT ${COLUMNS} FROM audit_log WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`, [accountId, afterSeq, limit]);
      return rows.map(toRecord);
    },
    prune: (before) => db.run('DELETE FROM audit_log WHERE created_at < ?', [before]),
    async claimExpiredUse(tx, keyId, now, since) {
      const changed = await tx.run(
        'UPDATE api_keys SET expired_use_audited_at = ? WHERE id = ? AND (expired_use_audited_at IS NULL OR expired_use_audited_at <= ?)',
        [now, keyId, since],
      );
      return changed > 0;
    },
  };
}
