// SQLite backend (better-sqlite3). WAL lets the CLI and servers share one file;
// synchronous=FULL makes every commit durable before we answer 201.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { NewPet, Pet, PetStatus } from '../../schemas/index.js';
import type { Account, ApiKeyRecord, IdempotencyClaim, ListPetsQuery, Store } from '../types.js';
import { migrations } from './migrations.js';

interface PetRow {
  id: number;
  name: string;
  category_id: number;
  status: PetStatus | null;
}

interface KeyRow {
  id: string;
  account_id: string;
  environment: 'production' | 'staging';
  key_hash: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

/** Thrown inside a transaction to roll it back when an idempotency key was completed by someone else. */
class IdempotencyRace extends Error {}

function toPet(row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, categoryId: row.category_id };
  if (row.status !== null) pet.status = row.status;
  return pet;
}

function toKey(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    environment: row.environment,
    keyHash: row.key_hash,
    hint: row.hint,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

/** Accepts a plain path or a file: URL. */
export function sqlitePath(url: string): string {
  if (url.startsWith('file:')) {
    return url.startsWith('file://') ? new URL(url).pathname : url.slice('file:'.length);
  }
  return url;
}

export function createSqliteStore(url: string): Store {
  const file = sqlitePath(url);
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');

  const appliedVersions = () =>
    new Set(db.prepare<[], { version: number }>('SELECT version FROM schema_migrations').all().map((r) => r.version));

  // Statements are prepared lazily (tables may not exist before migrate) and reused.
  const cache = new Map<string, Database.Statement>();
  const stmt = <P extends unknown[], R>(sql: string) => {
    let s = cache.get(sql);
    if (!s) {
      s = db.prepare(sql);
      cache.set(sql, s);
    }
    return s as Database.Statement<P, R>;
  };

  const petColumns = 'id, name, category_id, status';

  return {
    kind: 'sqlite',

    async migrate() {
      const applied: number[] = [];
      // BEGIN IMMEDIATE takes the write lock, so concurrent migrators run one after another.
      db.transaction(() => {
        const done = appliedVersions();
        for (const m of migrations) {
          if (done.has(m.version)) continue;
          db.exec(m.sql);
          db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
            m.version, m.name, new Date().toISOString(),
          );
          applied.push(m.version);
        }
      }).immediate();
      cache.clear();
      return applied;
    },

    async pendingMigrations() {
      const done = appliedVersions();
      return migrations.filter((m) => !done.has(m.version)).map((m) => m.version);
    },

    externalChangeCounter() {
      return stmt<[], { data_version: number }>('PRAGMA data_version').get()!.data_version;
    },

    async ping() {
      stmt<[], unknown>('SELECT 1').get();
    },

    async close() {
      cache.clear();
      if (db.open) db.close();
    },

    async getOrCreateSetting(key, create) {
      stmt<[string, string], unknown>('INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)').run(key, create());
      return stmt<[string], { value: string }>('SELECT value FROM settings WHERE key = ?').get(key)!.value;
    },

    async createAccount(account) {
      stmt<[string, string, string], unknown>('INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)').run(
        account.id, account.name, account.createdAt,
      );
      return account;
    },

    async getAccount(id) {
      const row = stmt<[string], { id: string; name: string; created_at: string }>(
        'SELECT id, name, created_at FROM accounts WHERE id = ?',
      ).get(id);
      return row && { id: row.id, name: row.name, createdAt: row.created_at };
    },

    async createApiKey(key) {
      stmt<unknown[], unknown>(
        'INSERT INTO api_keys (id, account_id, environment, key_hash, hint, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ).run(key.id, key.accountId, key.environment, key.keyHash, key.hint, key.createdAt, key.revokedAt);
      return key;
    },

    async findApiKeyByHash(keyHash) {
      const row = stmt<[string], KeyRow>('SELECT * FROM api_keys WHERE key_hash = ?').get(keyHash);
      return row && toKey(row);
    },

    async listApiKeys(accountId) {
      return stmt<[string], KeyRow>('SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at, id')
        .all(accountId)
        .map(toKey);
    },

    async revokeApiKey(id, revokedAt) {
      stmt<[string, string], unknown>('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(revokedAt, id);
      const row = stmt<[string], KeyRow>('SELECT * FROM api_keys WHERE id = ?').get(id);
      return row && toKey(row);
    },

    async createPet(accountId, pet: NewPet, createdAt) {
      const row = stmt<unknown[], PetRow>(
        `INSERT INTO pets (account_id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?) RETURNING ${petColumns}`,
      ).get(accountId, pet.name, pet.categoryId, pet.status ?? null, createdAt)!;
      return toPet(row);
    },

    async getPet(accountId, id) {
      const row = stmt<[string, number], PetRow>(`SELECT ${petColumns} FROM pets WHERE account_id = ? AND id = ?`).get(accountId, id);
      return row && toPet(row);
    },

    async listPets({ accountId, limit, status, afterId = 0 }: ListPetsQuery) {
      const rows = status
        ? stmt<[string, string, number, number], PetRow>(
            `SELECT ${petColumns} FROM pets WHERE account_id = ? AND status = ? AND id > ? ORDER BY id LIMIT ?`,
          ).all(accountId, status, afterId, limit)
        : stmt<[string, number, number], PetRow>(
            `SELECT ${petColumns} FROM pets WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?`,
          ).all(accountId, afterId, limit);
      return rows.map(toPet);
    },

    async claimIdempotencyKey({ accountId, key, requestHash, now, ttlMs, leaseMs }) {
      // IMMEDIATE: the read and the claim happen under the write lock, so two processes
      // sharing the file cannot both claim the same key.
      return db.transaction((): IdempotencyClaim => {
        const row = stmt<[string, string], { request_hash: string; pet_id: number | null; created_at: number; locked_at: number }>(
          'SELECT request_hash, pet_id, created_at, locked_at FROM idempotency_keys WHERE account_id = ? AND key = ?',
        ).get(accountId, key);
        if (!row || row.created_at <= now - ttlMs) {
          stmt<unknown[], unknown>(
            'INSERT OR REPLACE INTO idempotency_keys (account_id, key, request_hash, pet_id, created_at, locked_at) VALUES (?, ?, ?, NULL, ?, ?)',
          ).run(accountId, key, requestHash, now, now);
          return { outcome: 'claimed' };
        }
        if (row.pet_id !== null) return { outcome: 'completed', requestHash: row.request_hash, petId: row.pet_id };
        if (row.locked_at <= now - leaseMs && row.request_hash === requestHash) {
          stmt<[number, string, string], unknown>('UPDATE idempotency_keys SET locked_at = ? WHERE account_id = ? AND key = ?').run(
            now, accountId, key,
          );
          return { outcome: 'claimed' };
        }
        return { outcome: 'in_flight', requestHash: row.request_hash };
      }).immediate();
    },

    async createPetWithIdempotencyKey(accountId, pet, createdAt, key) {
      try {
        return db.transaction(() => {
          const row = stmt<unknown[], PetRow>(
            `INSERT INTO pets (account_id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?) RETURNING ${petColumns}`,
          ).get(accountId, pet.name, pet.categoryId, pet.status ?? null, createdAt)!;
          const done = stmt<[number, string, string], unknown>(
            'UPDATE idempotency_keys SET pet_id = ? WHERE account_id = ? AND key = ? AND pet_id IS NULL',
          ).run(row.id, accountId, key);
          // Another request completed this key meanwhile: roll back our pet, never a duplicate.
          if (done.changes !== 1) throw new IdempotencyRace();
          return toPet(row);
        }).immediate();
      } catch (err) {
        if (err instanceof IdempotencyRace) return undefined;
        throw err;
      }
    },

    async releaseIdempotencyKey(accountId, key) {
      stmt<[string, string], unknown>('DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND pet_id IS NULL').run(accountId, key);
    },

    async purgeIdempotencyKeys(before) {
      return stmt<[number], unknown>('DELETE FROM idempotency_keys WHERE created_at < ?').run(before).changes;
    },
  };
}
