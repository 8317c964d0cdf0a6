// The audit log: entries are written by the services that make the changes, in their
// transactions (an entry without its change, or a change without its entry, cannot commit); here
// they are built, read, paged and pruned, and an expired key's refused use is recorded (at most
// once an hour per key, whichever instance refused it).
import type { Clock } from '../clock.js';
import { InvalidRequestError } from '../errors.js';
import { AUDIT_RETENTION_DAYS, type AuditAction, type AuditEntry } from '../schemas/audit.js';
import type { AuditLogRepository, AuditRecord, NewAuditRecord } from '../store/audit-log.js';
import type { SqlDatabase } from '../store/core/sql.js';
import { type CursorCodec, pageBounds, pageOf } from './cursor.js';
import { randomBase62 } from './ids.js';

/** Who made a change, and from where (a request's id and client address; none from the CLI). */
export interface AuditContext {
  actor: { type: 'api_key'; keyId: string } | { type: 'cli' };
  requestId?: string | undefined;
  clientAddress?: string | undefined;
}

export const CLI_ACTOR: AuditContext = { actor: { type: 'cli' } };
const EXPIRED_USE_EVERY_MS = 3_600_000;

export function auditEntry(
  context: AuditContext,
  action: AuditAction,
  target: { type: 'api_key' | 'webhook_endpoint'; id: string },
  now: number,
  newKeyId?: string,
): NewAuditRecord {
  return {
    id: `aud_${randomBase62(24)}`,
    action,
    actor: context.actor,
    target,
    ...(newKeyId === undefined ? {} : { newKeyId }),
    requestId: context.requestId ?? null,
    clientAddress: context.clientAddress ?? null,
    createdAt: new Date(now).toISOString(),
  };
}

export function publicAuditEntry(record: AuditRecord): AuditEntry {
  return {
    id: record.id,
    sequence: record.seq,
    action: record.action as AuditAction,
    actor: record.actor,
    target: record.target as AuditEntry['target'],
    ...(record.newKeyId === undefined ? {} : { newKeyId: record.newKeyId }),
    requestId: record.requestId,
    clientAddress: record.clientAddress,
    createdAt: record.createdAt,
  };
}

export function createAuditService(deps: {
  db: Pick<SqlDatabase, 'transaction'>;
  auditLog: Pick<AuditLogRepository, 'append' | 'list' | 'prune' | 'claimExpiredUse'>;
  cursors: CursorCodec<string>;
  clock: Clock;
}) {
  const { db, auditLog, cursors, clock } = deps;
  return {
    async list(accountId: string, query: { limit: number; after?: number | undefined; cursor?: string | undefined }) {
      if (query.after !== undefined && query.cursor !== undefined) {
        throw new InvalidRequestError('Send either `after` (to start after a sequence) or `cursor` (to continue a listing), not both.');
      }
      const page = { limit: query.limit, status: undefined, cursor: query.cursor };
      const bounds = pageBounds(cursors, accountId, page);
      const rows = await auditLog.list({ accountId, limit: bounds.limit, afterSeq: query.cursor === undefined ? (query.after ?? 0) : bounds.afterId });
      const { items, nextCursor } = pageOf(cursors, accountId, page, rows, (row) => row.seq);
      return { entries: items.map(publicAuditEntry), nextCursor };
    },

    /** Records that an expired key was refused, unless one was recorded for it within the hour. Never fails the refusal. */
    async expiredUse(accountId: string, keyId: string, context: Omit<AuditContext, 'actor'>): Promise<void> {
      const now = clock.now();
      await db
        .transaction(async (tx) => {
          if (!(await auditLog.claimExpiredUse(tx, keyId, new Date(now).toISOString(), new Date(now - EXPIRED_USE_EVERY_MS).toISOString()))) return;
          await auditLog.append(tx, accountId, auditEntry({ ...context, actor: { type: 'api_key', keyId } }, 'api_key.expired_use_refused', { type: 'api_key', id: keyId }, now));
        })
        .catch(() => undefined);
    },

    async prune(now: number): Promise<number> {
      return auditLog.prune(new Date(now - AUDIT_RETENTION_DAYS * 86_400_000).toISOString());
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
