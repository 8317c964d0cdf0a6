// SQLite backend (better-sqlite3). WAL lets the CLI and servers share one file;
// synchronous=FULL makes every commit durable before we answer 201.
import { openSqlite, sqlitePath, storeError } from './driver.js';
import type { NewPet, Pet } from '../../schemas/index.js';
import type { IdempotencyClaim, ListPetsQuery, Store } from '../types.js';
import { migrations } from './migrations.js';
import { KEY_IN_FLIGHT, KEY_RESULT, type KeyRow, type PetRow, petCreatedEvent, toKey, toPet } from '../rows.js';
import { createChangeCheck } from './change-check.js';
import { createReadCache, type ReadCache } from './read-cache.js';
import { createSqliteOrders, IdempotencyRace, type IdCounter } from './orders.js';
import { createSqliteMessages } from './messages.js';
import { createSqliteEvents, createSqliteEventWriter } from './events.js';
import { createSqliteWebhooks } from './webhooks.js';


/** Most createPet calls one group-commit transaction takes; the rest wait for the next one. */
const GROUP_COMMIT_MAX = 256;

interface PendingPet {
  accountId: string;
  pet: NewPet;
  createdAt: string;
  resolve(pet: Pet): void;
  reject(error: unknown): void;
}

type Inserted = { pet: Pet } | { error: unknown };

/** Wraps every method so those failures surface as StoreUnavailableError (HTTP 503). */
function guardUnavailable(store: Store): Store {
  const guarded: Record<string, unknown> = { ...store };
  for (const [name, value] of Object.entries(store)) {
    if (typeof value !== 'function') continue;
    const method = value as (...args: unknown[]) => unknown;
    const unavailable = (error: unknown): never => {
      throw storeError(error);
    };
    guarded[name] = (...args: unknown[]) => {
      try {
        const result = method(...args);
        return result instanceof Promise ? result.catch(unavailable) : result;
      } catch (error) {
        return unavailable(error);
      }
    };
  }
  return guarded as unknown as Store;
}

export { sqlitePath };

export interface SqliteStoreOptions {
  /** Cache pages and pets in memory, invalidated exactly (see read-cache.ts). Default true. */
  readCache?: boolean;
  /** Write the event log (and webhook deliveries) with every change. Default true. */
  events?: boolean;
}

export function createSqliteStore(url: string, options: SqliteStoreOptions = {}): Store {
  const sqlite = openSqlite(url);
  const { file, connection: db } = sqlite;
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');

  const appliedVersions = () =>
    new Set(db.prepare<[], { version: number }>('SELECT version FROM schema_migrations').all().map((r) => r.version));

  // Statements are prepared lazily (tables may not exist before migrate) and reused.
  const stmt = sqlite.statement;
  const statements = { clear: sqlite.forgetStatements };

  const petColumns = 'id, name, category_id, status';

  // Another connection's commits are detected by change-check.ts (the wal-index header, then
  // data_version). The answer is reused for the rest of one synchronous run (one socket read's
  // worth of requests: the auth check and the lookup of a request share it), which is exact:
  // anything committed before those bytes were read is seen.
  const changes = createChangeCheck(db, file);
  let dataVersion: number | undefined;
  let dataVersionFresh = false;
  const forgetDataVersion = () => {
    dataVersionFresh = false;
  };
  const cache: ReadCache | undefined = options.readCache === false ? undefined : createReadCache();
  /** A number that changes when another connection has committed; clears the read cache then. */
  const externalChanges = (): number => {
    if (dataVersionFresh) return dataVersion!;
    const current = changes.current();
    if (dataVersion !== undefined && current !== dataVersion) cache?.clear();
    dataVersion = current;
    dataVersionFresh = true;
    queueMicrotask(forgetDataVersion);
    return current;
  };

  /** Cache reads, after asking whether another connection committed (which clears the cache). */
  const cachedPet = (readCache: ReadCache, accountId: string, id: number): Pet | undefined => {
    externalChanges();
    return readCache.getPet(accountId, id);
  };
  const cachedPage = (readCache: ReadCache, { accountId, limit, status, afterId = 0 }: ListPetsQuery): readonly Pet[] | undefined => {
    externalChanges();
    return readCache.getPage(accountId, status, afterId, limit);
  };

  // Pet and order ids are numbered per account (migrations 3 and 4): a batch takes, for each
  // account in it, one contiguous range from the account's counter (one UPDATE per account,
  // under the write lock of the batch's transaction), in the order the calls were made. A pet
  // that then fails leaves a gap; the counter never goes back, so an id is never handed out
  // twice. An unknown account has no counter: its pets get ids from 1 and fail on the foreign key.
  const nextIds = (counter: IdCounter, accountId: string, count: number): number => {
    const row = stmt<[number, string], { last: number }>(
      `UPDATE accounts SET ${counter} = ${counter} + ? WHERE id = ? RETURNING ${counter} AS last`,
    ).get(count, accountId);
    return row ? row.last - count + 1 : 1;
  };
  const writeEvents = createSqliteEventWriter({ stmt, nextIds }, options.events !== false);
  const context = { db, stmt, cache, nextIds, writeEvents };

  // Group commit for createPet: calls made while a batch is pending join it, and the batch
  // is written by one BEGIN IMMEDIATE … COMMIT, so one WAL fsync (synchronous=FULL) makes all
  // of it durable before any caller hears back. Rows go in by multi-row INSERTs of
  // power-of-two sizes (42 pets: 32 + 8 + 2), each in its own savepoint: a chunk that fails
  // (a constraint, say) is rolled back and retried one pet per savepoint, so only the pets
  // that fail reject their callers and the others still commit. Multi-row statements cost
  // about two thirds of one statement and one savepoint per pet (issue 5's bench).
  const insertSqls: string[] = [];
  const insertSql = (rows: number) =>
    (insertSqls[rows] ??= `INSERT INTO pets (account_id, id, name, category_id, status, created_at) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`);
  const insertChunk = db.transaction((chunk: PendingPet[], ids: number[], offset: number): Pet[] => {
    const values: unknown[] = [];
    chunk.forEach(({ accountId, pet, createdAt }, i) => values.push(accountId, ids[offset + i], pet.name, pet.categoryId, pet.status ?? null, createdAt));
    stmt<unknown[], never>(insertSql(chunk.length)).run(values);
    // No RETURNING (it costs a quarter of the insert): the columns are TEXT and INTEGER and
    // the values validated, so the pet is what a SELECT would return.
    const pets = chunk.map(({ pet }, i) => toPet({ id: ids[offset + i]!, name: pet.name, category_id: pet.categoryId, status: pet.status ?? null }));
    // In the chunk's savepoint: a pet rolled back takes its event with it.
    writeEvents.writeMany(chunk.map(({ accountId, createdAt }, i) => ({ accountId, event: petCreatedEvent(pets[i]!), createdAt })));
    return pets;
  });
  /** Inserts `chunk` (ids from `ids[offset]` on) in a savepoint; on failure, one pet per savepoint. */
  const insertChunkOrEach = (chunk: PendingPet[], ids: number[], offset: number, results: Inserted[]) => {
    try {
      for (const pet of insertChunk(chunk, ids, offset)) results.push({ pet });
    } catch (error) {
      // Some errors (SQLITE_FULL, SQLITE_IOERR…) roll back the whole transaction: then
      // nothing of the batch is committed, and every caller gets the error.
      if (!db.inTransaction) throw error;
      if (chunk.length === 1) results.push({ error });
      else chunk.forEach((item, i) => insertChunkOrEach([item], ids, offset + i, results));
    }
  };
  const insertBatch = db.transaction((batch: PendingPet[]): Inserted[] => {
    // Each call's id, in call order within its account.
    const counts = new Map<string, number>();
    for (const { accountId } of batch) counts.set(accountId, (counts.get(accountId) ?? 0) + 1);
    const next = new Map<string, number>();
    for (const [accountId, count] of counts) next.set(accountId, nextIds('last_pet_id', accountId, count));
    const ids = batch.map(({ accountId }) => {
      const id = next.get(accountId)!;
      next.set(accountId, id + 1);
      return id;
    });
    const results: Inserted[] = [];
    let start = 0;
    while (start < batch.length) {
      const size = 2 ** Math.floor(Math.log2(batch.length - start));
      insertChunkOrEach(batch.slice(start, start + size), ids, start, results);
      start += size;
    }
    return results;
  });
  const queue: PendingPet[] = [];
  let flushScheduled = false;

  /** Commits the oldest GROUP_COMMIT_MAX queued pets; settles each caller after COMMIT returned. */
  const commitBatch = () => {
    const batch = queue.splice(0, GROUP_COMMIT_MAX);
    if (batch.length === 0) return;
    let results: Inserted[];
    try {
      results = insertBatch.immediate(batch);
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    } finally {
      // Before anyone hears back: these accounts' cached pages may now be short.
      if (cache) for (const item of batch) cache.wrote(item.accountId);
    }
    results.forEach((result, i) => {
      const item = batch[i]!;
      if ('pet' in result) item.resolve(result.pet);
      else item.reject(result.error);
    });
  };
  const flush = () => {
    flushScheduled = false;
    commitBatch();
    if (queue.length > 0) scheduleFlush();
  };
  // setImmediate runs after the I/O callbacks of this loop turn: every request parsed in it joins.
  const scheduleFlush = () => {
    if (flushScheduled) return;
    flushScheduled = true;
    setImmediate(flush);
  };

  const store: Store = {
    kind: 'sqlite',
    events: createSqliteEvents(sqlite, options.events !== false),
    webhooks: createSqliteWebhooks(sqlite),
    ...createSqliteOrders(context),
    ...createSqliteMessages(context),

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
      statements.clear();
      return applied;
    },

    async pendingMigrations() {
      const done = appliedVersions();
      return migrations.filter((m) => !done.has(m.version)).map((m) => m.version);
    },

    externalChangeCounter: externalChanges,

    ...(cache
      ? {
          cachedPet: (accountId: string, id: number) => cachedPet(cache, accountId, id),
          cachedPage: (query: ListPetsQuery) => cachedPage(cache, query),
        }
      : {}),

    async ping() {
      stmt<[], unknown>('SELECT 1').get();
    },

    async close() {
      // Nobody is left waiting: what is queued is committed (or rejected, if already closed).
      while (queue.length > 0) commitBatch();
      statements.clear();
      cache?.clear();
      if (db.open) {
        changes.close();
        db.close();
      }
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

    createPet(accountId, pet: NewPet, createdAt) {
      return new Promise<Pet>((resolve, reject) => {
        queue.push({ accountId, pet, createdAt, resolve, reject });
        scheduleFlush();
      });
    },

    async getPet(accountId, id) {
      const hit = cache && cachedPet(cache, accountId, id);
      if (hit) return hit;
      const row = stmt<[string, number], PetRow>(`SELECT ${petColumns} FROM pets WHERE account_id = ? AND id = ?`).get(accountId, id);
      if (!row) return undefined;
      return cache ? cache.setPet(accountId, toPet(row)) : toPet(row);
    },

    async listPets({ accountId, limit, status, afterId = 0 }: ListPetsQuery) {
      let generation = 0;
      if (cache) {
        const hit = cachedPage(cache, { accountId, limit, status, afterId });
        if (hit) return hit;
        generation = cache.generation(accountId);
      }
      // INDEXED BY: the planner may otherwise take the primary key and filter by status, so a
      // filtered page would cost in proportion to the account's pets of other statuses. The
      // primary key (account_id, id) serves the unfiltered page.
      const rows = status
        ? stmt<[string, string, number, number], PetRow>(
            `SELECT ${petColumns} FROM pets INDEXED BY pets_by_account_status WHERE account_id = ? AND status = ? AND id > ? ORDER BY id LIMIT ?`,
          ).all(accountId, status, afterId, limit)
        : stmt<[string, number, number], PetRow>(
            `SELECT ${petColumns} FROM pets WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?`,
          ).all(accountId, afterId, limit);
      const pets = rows.map(toPet);
      return cache ? cache.setPage(accountId, status, afterId, limit, pets, generation) : pets;
    },

    async claimIdempotencyKey({ accountId, key, requestHash, now, ttlMs, leaseMs }) {
      // IMMEDIATE: the read and the claim happen under the write lock, so two processes
      // sharing the file cannot both claim the same key.
      return db.transaction((): IdempotencyClaim => {
        const row = stmt<[string, string], { request_hash: string; resource_id: number | null; created_at: number; locked_at: number }>(
          `SELECT request_hash, ${KEY_RESULT} AS resource_id, created_at, locked_at FROM idempotency_keys WHERE account_id = ? AND key = ?`,
        ).get(accountId, key);
        if (!row || row.created_at <= now - ttlMs) {
          stmt<unknown[], unknown>(
            'INSERT OR REPLACE INTO idempotency_keys (account_id, key, request_hash, created_at, locked_at) VALUES (?, ?, ?, ?, ?)',
          ).run(accountId, key, requestHash, now, now);
          return { outcome: 'claimed' };
        }
        if (row.resource_id !== null) return { outcome: 'completed', requestHash: row.request_hash, resourceId: row.resource_id };
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
            `INSERT INTO pets (account_id, id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING ${petColumns}`,
          ).get(accountId, nextIds('last_pet_id', accountId, 1), pet.name, pet.categoryId, pet.status ?? null, createdAt)!;
          const done = stmt<[number, string, string], unknown>(
            `UPDATE idempotency_keys SET pet_id = ? WHERE account_id = ? AND key = ? AND ${KEY_IN_FLIGHT}`,
          ).run(row.id, accountId, key);
          // Another request completed this key meanwhile: roll back our pet, never a duplicate.
          if (done.changes !== 1) throw new IdempotencyRace();
          const created = toPet(row);
          writeEvents.write(accountId, [petCreatedEvent(created)], createdAt);
          return created;
        }).immediate();
      } catch (err) {
        if (err instanceof IdempotencyRace) return undefined;
        throw err;
      } finally {
        cache?.wrote(accountId);
      }
    },

    async renewIdempotencyKey(accountId, key, now) {
      stmt<[number, string, string, number], unknown>(
        `UPDATE idempotency_keys SET locked_at = ? WHERE account_id = ? AND key = ? AND locked_at < ? AND ${KEY_IN_FLIGHT}`,
      ).run(now, accountId, key, now);
    },

    async releaseIdempotencyKey(accountId, key) {
      stmt<[string, string], unknown>(`DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND ${KEY_IN_FLIGHT}`).run(accountId, key);
    },

    async purgeIdempotencyKeys(before) {
      return stmt<[number], unknown>('DELETE FROM idempotency_keys WHERE created_at < ?').run(before).changes;
    },
  };
  return guardUnavailable(store);
}
