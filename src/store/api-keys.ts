// API keys as stored: only a hash of the secret, never the secret.
import type { Environment } from '../config.js';
import type { SqlDatabase } from './core/sql.js';

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
}

export interface KeyRow {
  id: string;
  account_id: string;
  environment: Environment;
  key_hash: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

export const KEY_COLUMNS = 'id, account_id, environment, key_hash, hint, created_at, revoked_at';

export const toKey = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  accountId: row.account_id,
  environment: row.environment,
  keyHash: row.key_hash,
  hint: row.hint,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
});

/** A subscription to API key changes (ApiKeyRepository.watch). */
export interface ApiKeyWatch {
  /** True while every change is being heard. */
  live(): boolean;
  close(): Promise<void>;
}

export interface ApiKeyRepository {
  create(key: ApiKeyRecord): Promise<ApiKeyRecord>;
  findByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  list(accountId: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked (the first revocation time stays); undefined when no such key. */
  revoke(id: string, revokedAt: string): Promise<ApiKeyRecord | undefined>;
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
export function createApiKeyRepository(db: SqlDatabase, watch?: ApiKeyRepository['watch']): ApiKeyRepository {
  return {
    async create(key) {
      await db.run(`INSERT INTO api_keys (${KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
        key.id, key.accountId, key.environment, key.keyHash, key.hint, key.createdAt, key.revokedAt,
      ]);
      return key;
    },
    async findByHash(keyHash) {
      // Hot: every request whose key is not remembered.
      const [row] = await db.read<KeyRow>('find_api_key', `SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = ?`, [keyHash]);
      return row && toKey(row);
    },
    async list(accountId) {
      return (await db.all<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = ? ORDER BY created_at, id`, [accountId])).map(toKey);
    },
    async revoke(id, revokedAt) {
      // COALESCE keeps the first revocation time, so revoking again changes nothing.
      const row = await db.get<KeyRow>(`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? RETURNING ${KEY_COLUMNS}`, [revokedAt, id]);
      return row && toKey(row);
    },
    ...(watch ? { watch } : {}),
  };
}
