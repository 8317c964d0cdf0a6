// API keys as stored: only a hash of the secret, never the secret.
import type { Environment } from '../config.js';
import { SCOPES, type Scope } from '../schemas/api-keys.js';
import { nextIds } from './accounts.js';
import type { Dialect } from './core/dialect.js';
import type { Sql, SqlDatabase } from './core/sql.js';

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  environment: Environment;
  /** SHA-256 of the full secret, hex. */
  keyHash: string;
  /** Non-secret tail shown in listings so operators can tell keys apart. */
  hint: string;
  createdAt: string;
  revokedAt: string | null;
  /** A label for people; null when none. */
  name: string | null;
  /** The scopes the key is restricted to; null: full access. */
  scopes: Scope[] | null;
  /** When the key stops working; null: never. */
  expiresAt: string | null;
  /** When the key last authenticated a request, to within a minute; null: never. */
  lastUsedAt: string | null;
}

/** Stored form of scopes: space-separated (as OAuth writes them) in SCOPES order, NULL for full access. */
const storedScopes = (scopes: readonly Scope[] | null): string | null => (scopes === null ? null : SCOPES.filter((scope) => scopes.includes(scope)).join(' '));
/** Unknown words (none today) are dropped. */
const parseStoredScopes = (text: string | null): Scope[] | null =>
  text === null ? null : text.split(' ').filter((word): word is Scope => (SCOPES as readonly string[]).includes(word));

export interface KeyRow {
  id: string;
  account_id: string;
  environment: Environment;
  key_hash: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
  name: string | null;
  scopes: string | null;
  expires_at: string | null;
  last_used_at: string | null;
}

export const KEY_COLUMNS = 'id, account_id, environment, key_hash, hint, created_at, revoked_at, name, scopes, expires_at, last_used_at';

export const toKey = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  accountId: row.account_id,
  environment: row.environment,
  keyHash: row.key_hash,
  hint: row.hint,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
  name: row.name,
  scopes: parseStoredScopes(row.scopes),
  expiresAt: row.expires_at,
  lastUsedAt: row.last_used_at,
});

/** A subscription to API key changes (ApiKeyRepository.watch). */
export interface ApiKeyWatch {
  /** True while every change is being heard. */
  live(): boolean;
  close(): Promise<void>;
}

export interface ApiKeyRepository {
  /** Inserts the key in its own transaction. */
  create(key: ApiKeyRecord): Promise<ApiKeyRecord>;
  /** Inserts the key in the caller's transaction (numbered after the account's last key). */
  insert(tx: Sql, key: ApiKeyRecord): Promise<ApiKeyRecord>;
  findByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /** The key of any account (the operator's CLI), or undefined. */
  find(id: string): Promise<ApiKeyRecord | undefined>;
  /** The account's key, or undefined (another account's key id is not found either). */
  get(accountId: string, id: string): Promise<ApiKeyRecord | undefined>;
  list(accountId: string): Promise<ApiKeyRecord[]>;
  /** The account's keys in creation order after `afterSeq`, at most `limit`, each with its position. */
  page(query: { accountId: string; limit: number; afterSeq: number }): Promise<Array<{ seq: number; key: ApiKeyRecord }>>;
  /** Marks the key revoked (the first revocation time stays); undefined when no such key. */
  revoke(id: string, revokedAt: string): Promise<ApiKeyRecord | undefined>;
  /** As revoke, in the caller's transaction and only for the account's key. */
  revokeIn(tx: Sql, accountId: string, id: string, revokedAt: string): Promise<ApiKeyRecord | undefined>;
  /** The key, locked until `tx` ends (PostgreSQL); undefined when none. */
  lock(tx: Sql, id: string): Promise<ApiKeyRecord | undefined>;
  /** Brings the key's expiry forward to `expiresAt` (never later than it is). */
  expireBy(tx: Sql, id: string, expiresAt: string): Promise<void>;
  /** Records each key's use at `at` unless a later one is recorded, in one transaction. */
  touch(uses: ReadonlyArray<{ id: string; at: string }>): Promise<void>;
  /**
   * Subscribes to key changes committed by any process (PostgreSQL: LISTEN/NOTIFY).
   * `onChange(keyId)` after a key changed; `onChange(undefined)` when changes may have been
   * missed: forget all. Remembered keys are only trustworthy while `live()`.
   */
  watch?(onChange: (keyId: string | undefined) => void): ApiKeyWatch;
}

/**
 * `watch`: how this backend hears other processes' key changes (PostgreSQL: LISTEN/NOTIFY);
 * SQLite has none (its external change counter tells the key cache instead).
 */
export function createApiKeyRepository(db: SqlDatabase, dialect: Dialect, watch?: ApiKeyRepository['watch']): ApiKeyRepository {
  async function insert(tx: Sql, key: ApiKeyRecord): Promise<ApiKeyRecord> {
    const seq = await nextIds(tx, 'last_key_seq', key.accountId, 1);
    await tx.run(`INSERT INTO api_keys (${KEY_COLUMNS}, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      key.id, key.accountId, key.environment, key.keyHash, key.hint, key.createdAt, key.revokedAt,
      key.name, storedScopes(key.scopes), key.expiresAt, key.lastUsedAt, seq,
    ]);
    return key;
  }
  return {
    create: (key) => db.transaction((tx) => insert(tx, key)),
    insert,
    async findByHash(keyHash) {
      // Hot: every request whose key is not remembered.
      const [row] = await db.read<KeyRow>('find_api_key', `SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = ?`, [keyHash]);
      return row && toKey(row);
    },
    async find(id) {
      const row = await db.get<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`, [id]);
      return row && toKey(row);
    },
    async get(accountId, id) {
      const row = await db.get<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = ? AND id = ?`, [accountId, id]);
      return row && toKey(row);
    },
    async list(accountId) {
      return (await db.all<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = ? ORDER BY created_at, id`, [accountId])).map(toKey);
    },
    async page({ accountId, limit, afterSeq }) {
      const rows = await db.all<KeyRow & { seq: number }>(
        `SELECT ${KEY_COLUMNS}, seq FROM api_keys WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
        [accountId, afterSeq, limit],
      );
      return rows.map((row) => ({ seq: Number(row.seq), key: toKey(row) }));
    },
    async revoke(id, revokedAt) {
      // COALESCE keeps the first revocation time, so revoking again changes nothing.
      const row = await db.get<KeyRow>(`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? RETURNING ${KEY_COLUMNS}`, [revokedAt, id]);
      return row && toKey(row);
    },
    async revokeIn(tx, accountId, id, revokedAt) {
      const row = await tx.get<KeyRow>(
        `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE account_id = ? AND id = ? RETURNING ${KEY_COLUMNS}`,
        [revokedAt, accountId, id],
      );
      return row && toKey(row);
    },
    async lock(tx, id) {
      const row = await tx.get<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?${dialect.forUpdate}`, [id]);
      return row && toKey(row);
    },
    async expireBy(tx, id, expiresAt) {
      await tx.run('UPDATE api_keys SET expires_at = ? WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)', [expiresAt, id, expiresAt]);
    },
    async touch(uses) {
      await db.transaction(async (tx) => {
        for (const { id, at } of uses) {
          await tx.run('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)', [at, id, at]);
        }
      });
    },
    ...(watch ? { watch } : {}),
  };
}
