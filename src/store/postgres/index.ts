// PostgreSQL backend (pg). One bounded pool per process; every method is a single
// autocommit statement except getOrCreateSetting (two) and migrate (one dedicated session).
// Connection failures surface as StoreUnavailableError so the HTTP layer answers 503,
// and the pool replaces dead connections by itself once the database is back.
import type { PoolClient, QueryResultRow } from 'pg';
import { StoreUnavailableError } from '../errors.js';
import type { NewPet, Pet } from '../../schemas/index.js';
import type { IdempotencyClaim, ListPetsQuery, Store } from '../types.js';
import { migrations } from './migrations.js';
import { createPostgresOrders } from './orders.js';
import { createPostgresMessages } from './messages.js';
import { createPostgresEvents, createPostgresEventWriter, petRunsInsertSql } from './events.js';
import { petRunParams } from '../event-log.js';
import { createPostgresWebhooks } from './webhooks.js';
import { watchKeyChanges } from './key-changes.js';
import { CONNECTION_TIMEOUT_MS, guard, isConnectionError, openPostgres } from './driver.js';
import type { ApiKeyWatch } from '../types.js';
import { KEY_IN_FLIGHT, KEY_RESULT, type KeyRow, petCreatedEvent, type PetRow, toKey, toPet } from '../rows.js';

/** Key of the session-level advisory lock held while migrating ("PETS" in ASCII). */
export const MIGRATION_LOCK_KEY = 0x50455453;

/** A pets row selected as an array, in petColumns order; `status` NULL becomes absent, as in toPet. */
function petOfArray(row: unknown[]): Pet {
  const pet: Pet = { id: row[0] as number, name: row[1] as string, categoryId: row[2] as number };
  if (row[3] !== null) pet.status = row[3] as NonNullable<Pet['status']>;
  return pet;
}

export { isConnectionError };

type Queryable = Pick<PoolClient, 'query'>;

/** Ends a transaction with ROLLBACK and makes it resolve with `value`. */
class Rollback {
  constructor(readonly value: unknown) {}
}

async function appliedVersions(db: Queryable): Promise<Set<number>> {
  try {
    const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations');
    return new Set(rows.map((row) => row.version));
  } catch (error) {
    // 42P01 undefined_table: an empty database, nothing applied yet.
    if ((error as { code?: unknown }).code === '42P01') return new Set();
    throw error;
  }
}

/**
 * `pipelineConnections`: connections in pipeline mode for the hot reads (pipeline.ts), besides
 * the pool; 0 sends those reads through the pool like everything else. `events`: write the
 * event log with every change (default true).
 */
export function createPostgresStore(url: string, options: { poolMax: number; pipelineConnections?: number; events?: boolean }): Store {
  const events = options.events !== false;
  const writeEvents = createPostgresEventWriter(events);
  const database = openPostgres(url, options);
  const { pool } = database;
  const query = <R extends QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> => database.all<R>(text, values);
  const prepared = database.prepared;
  const read = database.read;
  // Pets come back as arrays (id, name, category_id, status), made into Pets directly: one
  // object per row instead of pg's row object and then ours.
  const readPets = async (name: string, text: string, values: unknown[]): Promise<Pet[]> =>
    (await database.readArrays(name, text, values)).map(petOfArray);

  const rollback = (value: unknown): never => {
    throw new Rollback(value);
  };
  /** Runs `work` in one transaction on one client; `rollback(value)` ends it quietly with that value. */
  const transaction = <T>(work: (client: PoolClient, rollback: (value: T) => never) => Promise<T>): Promise<T> =>
    guard(async () => {
      const client = await pool.connect();
      const ignore = () => {};
      client.on('error', ignore);
      let broken = false;
      try {
        await client.query('BEGIN');
        try {
          const result = await work(client, rollback);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {
            broken = true;
          });
          if (error instanceof Rollback) return error.value as T;
          broken ||= isConnectionError(error);
          throw error;
        }
      } finally {
        client.off('error', ignore);
        client.release(broken);
      }
    });

  const petColumns = 'id, name, category_id, status';
  // Pet ids are numbered per account (migration 3): the statement takes the next one from
  // accounts.last_pet_id, whose row lock orders the account's concurrent creates (other
  // accounts are not held up). In a transaction that rolls back, the counter rolls back too:
  // the id was never shown to anyone. An unknown account has no counter: the id is NULL,
  // and the insert fails on NOT NULL.
  const insertPetSql = `
    WITH next AS (UPDATE accounts SET last_pet_id = last_pet_id + 1 WHERE id = $1 RETURNING last_pet_id)
    INSERT INTO pets (account_id, id, name, category_id, status, created_at)
    VALUES ($1, (SELECT last_pet_id FROM next), $2, $3, $4, $5) RETURNING ${petColumns}`;
  const keyColumns = 'id, account_id, environment, key_hash, hint, created_at, revoked_at';
  const watches = new Set<ApiKeyWatch>();

  // Group commit for createPet, as on SQLite: the calls of one event-loop turn (and those made
  // while a batch is in flight) go in as one statement, so one commit and one WAL flush cover
  // them all, and an account's row lock (its id counter) is taken once per batch instead of
  // once per pet, which would order that account's creates one commit after another. A batch
  // that fails on a pet's own fault (a constraint) is retried one pet per statement, so only
  // that caller gets the error.
  // With events on, the same statement writes the pets' pet.created events (numbered from the
  // account's event counter, taken in the same row update), one row per account's run: the
  // outbox costs no extra round trip. The service builds the rows but the numbers (petRunData):
  // building each event's JSON in SQL cost PostgreSQL ~3.4 µs per pet, inside the batch that
  // holds the account's lock.
  const batchSql = events
    ? `
    WITH input AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[])
        WITH ORDINALITY AS t(account_id, name, category_id, status, created_at, ord)
    ),
    counts AS (SELECT account_id, count(*) AS n FROM input GROUP BY account_id),
    next AS (
      UPDATE accounts a SET last_pet_id = a.last_pet_id + c.n, last_event_seq = a.last_event_seq + c.n FROM counts c WHERE a.id = c.account_id
      RETURNING a.id AS account_id, a.last_pet_id - c.n AS base, a.last_event_seq - c.n AS event_base, c.n
    ),
    inserted AS (
      INSERT INTO pets (account_id, id, name, category_id, status, created_at)
      SELECT i.account_id, n.base + row_number() OVER (PARTITION BY i.account_id ORDER BY i.ord), i.name, i.category_id, i.status, i.created_at
      FROM input i JOIN next n ON n.account_id = i.account_id
      RETURNING 1
    ),
    -- Each account's events are one row (event-log.ts: EventRow, petRunParams), built by the
    -- service but for the numbers only this statement knows.
    ev AS (${petRunsInsertSql('next', 6)})
    SELECT account_id, base, (SELECT count(*) FROM inserted) AS inserted FROM next`
    : `
    WITH input AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[])
        WITH ORDINALITY AS t(account_id, name, category_id, status, created_at, ord)
    ),
    counts AS (SELECT account_id, count(*) AS n FROM input GROUP BY account_id),
    next AS (
      UPDATE accounts a SET last_pet_id = a.last_pet_id + c.n FROM counts c WHERE a.id = c.account_id
      RETURNING a.id AS account_id, a.last_pet_id - c.n AS base
    ),
    inserted AS (
      INSERT INTO pets (account_id, id, name, category_id, status, created_at)
      SELECT i.account_id, n.base + row_number() OVER (PARTITION BY i.account_id ORDER BY i.ord), i.name, i.category_id, i.status, i.created_at
      FROM input i JOIN next n ON n.account_id = i.account_id
      RETURNING 1
    )
    SELECT account_id, base, (SELECT count(*) FROM inserted) AS inserted FROM next`;
  interface PendingPet {
    accountId: string;
    pet: NewPet;
    createdAt: string;
    resolve(pet: Pet): void;
    reject(error: unknown): void;
  }
  const queue: PendingPet[] = [];
  let inFlight: Promise<void> | undefined;
  const GROUP_COMMIT_MAX = 256;
  /** One pet and its event in one transaction. */
  const insertPet = (client: PoolClient, accountId: string, pet: NewPet, createdAt: string) =>
    client.query<PetRow>(insertPetSql, [accountId, pet.name, pet.categoryId, pet.status ?? null, createdAt]).then(async ({ rows }) => {
      const created = toPet(rows[0]!);
      await writeEvents(client, accountId, [petCreatedEvent(created)], createdAt);
      return created;
    });
  const insertOne = async (item: PendingPet) => {
    try {
      item.resolve(await transaction((client) => insertPet(client, item.accountId, item.pet, item.createdAt)));
    } catch (error) {
      item.reject(error);
    }
  };
  const commitBatch = async (batch: PendingPet[]): Promise<void> => {
    let rows: Array<{ account_id: string; base: number }>;
    try {
      rows = await prepared<{ account_id: string; base: number }>('create_pets', batchSql, [
        batch.map((b) => b.accountId),
        batch.map((b) => b.pet.name),
        batch.map((b) => b.pet.categoryId),
        batch.map((b) => b.pet.status ?? null),
        batch.map((b) => b.createdAt),
        ...(events ? petRunParams(batch) : []),
      ]);
    } catch (error) {
      // The database is away: every caller hears so. A pet's own fault (a constraint, a
      // deadlock between two instances' batches): one statement per pet.
      if (error instanceof StoreUnavailableError) {
        for (const item of batch) item.reject(error);
        return;
      }
      for (const item of batch) await insertOne(item);
      return;
    }
    // The statement numbered each account's pets base + 1, base + 2, … in call order.
    const next = new Map(rows.map((r) => [r.account_id, r.base]));
    for (const item of batch) {
      const base = next.get(item.accountId);
      if (base === undefined) {
        item.reject(new Error(`no account ${item.accountId}: the pet was not stored`));
        continue;
      }
      next.set(item.accountId, base + 1);
      const { pet } = item;
      item.resolve(toPet({ id: base + 1, name: pet.name, category_id: pet.categoryId, status: pet.status ?? null }));
    }
  };
  const flush = () => {
    if (inFlight || queue.length === 0) return;
    inFlight = commitBatch(queue.splice(0, GROUP_COMMIT_MAX)).finally(() => {
      inFlight = undefined;
      // Whatever queued meanwhile goes in the next batch, at once.
      flush();
    });
  };

  return {
    kind: 'postgres',
    events: createPostgresEvents(database, events),
    webhooks: createPostgresWebhooks(database),
    ...createPostgresOrders({ query, transaction, writeEvents }),
    ...createPostgresMessages({ query, transaction, writeEvents }),

    async migrate() {
      return guard(async () => {
        // One session holds the lock for the whole run, so concurrent migrators (other
        // processes too) run one after another and each version is applied once.
        const client = await pool.connect();
        // A checked-out client has no pool listener; a dropped connection must not crash us.
        const ignore = () => {};
        client.on('error', ignore);
        let healthy = false;
        try {
          await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
          await client.query(
            'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)',
          );
          const done = await appliedVersions(client);
          const applied: number[] = [];
          for (const m of migrations) {
            if (done.has(m.version)) continue;
            await client.query('BEGIN');
            try {
              await client.query(m.sql);
              await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())', [
                m.version, m.name,
              ]);
              await client.query('COMMIT');
            } catch (error) {
              await client.query('ROLLBACK').catch(() => {});
              throw error;
            }
            applied.push(m.version);
          }
          await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
          healthy = true;
          return applied;
        } finally {
          client.off('error', ignore);
          // On failure the connection is destroyed, which also releases the lock.
          client.release(!healthy);
        }
      });
    },

    async pendingMigrations() {
      const done = await guard(() => appliedVersions(pool));
      return migrations.filter((m) => !done.has(m.version)).map((m) => m.version);
    },

    watchApiKeys(onChange) {
      const watch = watchKeyChanges(url, { connectionTimeoutMillis: CONNECTION_TIMEOUT_MS }, onChange);
      watches.add(watch);
      return watch;
    },

    poolStats() {
      return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
    },

    async ping() {
      await query('SELECT 1');
    },

    async close() {
      // Nobody is left waiting: what is queued is committed first.
      while (inFlight || queue.length > 0) {
        flush();
        await inFlight;
      }
      await Promise.all([...watches].map((watch) => watch.close()));
      await database.close();
    },

    async getOrCreateSetting(key, create) {
      // Two statements on purpose: the SELECT takes a fresh snapshot, so it sees a row
      // a concurrent writer committed after our INSERT gave way to it.
      await query('INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, create()]);
      return (await query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]))[0]!.value;
    },

    async createAccount(account) {
      await query('INSERT INTO accounts (id, name, created_at) VALUES ($1, $2, $3)', [
        account.id, account.name, account.createdAt,
      ]);
      return account;
    },

    async getAccount(id) {
      const [row] = await query<{ id: string; name: string; created_at: string }>(
        'SELECT id, name, created_at FROM accounts WHERE id = $1',
        [id],
      );
      return row && { id: row.id, name: row.name, createdAt: row.created_at };
    },

    async createApiKey(key) {
      await query(
        'INSERT INTO api_keys (id, account_id, environment, key_hash, hint, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [key.id, key.accountId, key.environment, key.keyHash, key.hint, key.createdAt, key.revokedAt],
      );
      return key;
    },

    async findApiKeyByHash(keyHash) {
      const [row] = await read<KeyRow>('find_api_key', `SELECT ${keyColumns} FROM api_keys WHERE key_hash = $1`, [keyHash]);
      return row && toKey(row);
    },

    async listApiKeys(accountId) {
      const rows = await query<KeyRow>(
        `SELECT ${keyColumns} FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`,
        [accountId],
      );
      return rows.map(toKey);
    },

    async revokeApiKey(id, revokedAt) {
      // COALESCE keeps the first revocation time, so revoking again changes nothing.
      const [row] = await query<KeyRow>(
        `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 RETURNING ${keyColumns}`,
        [revokedAt, id],
      );
      return row && toKey(row);
    },

    createPet(accountId, pet: NewPet, createdAt) {
      return new Promise<Pet>((resolve, reject) => {
        queue.push({ accountId, pet, createdAt, resolve, reject });
        // setImmediate: after this turn's I/O callbacks, so every request parsed in it joins.
        if (queue.length === 1) setImmediate(flush);
      });
    },

    async getPet(accountId, id) {
      // A bigint parameter rejects fractions; no pet has such an id (SQLite answers undefined too).
      if (!Number.isSafeInteger(id)) return undefined;
      const [pet] = await readPets('get_pet', `SELECT ${petColumns} FROM pets WHERE account_id = $1 AND id = $2`, [accountId, id]);
      return pet;
    },

    async listPets({ accountId, limit, status, afterId = 0 }: ListPetsQuery) {
      // Integer ids: "id > 1.5" equals "id > 1". SQLite reads a negative LIMIT as none.
      const after = Math.floor(afterId);
      const max = limit < 0 ? null : limit;
      return status
        ? readPets(
            'list_pets_by_status',
            `SELECT ${petColumns} FROM pets WHERE account_id = $1 AND status = $2 AND id > $3 ORDER BY id LIMIT $4`,
            [accountId, status, after, max],
          )
        : readPets(
            'list_pets',
            `SELECT ${petColumns} FROM pets WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
            [accountId, after, max],
          );
    },

    async claimIdempotencyKey({ accountId, key, requestHash, now, ttlMs, leaseMs }) {
      return transaction(async (client): Promise<IdempotencyClaim> => {
        const inserted = await client.query(
          `INSERT INTO idempotency_keys (account_id, key, request_hash, pet_id, created_at, locked_at)
           VALUES ($1, $2, $3, NULL, $4, $4) ON CONFLICT (account_id, key) DO NOTHING`,
          [accountId, key, requestHash, now],
        );
        if (inserted.rowCount === 1) return { outcome: 'claimed' };
        // The row exists: lock it so concurrent claimers decide one after another.
        const { rows } = await client.query<{ request_hash: string; resource_id: number | null; created_at: number; locked_at: number }>(
          `SELECT request_hash, ${KEY_RESULT} AS resource_id, created_at, locked_at FROM idempotency_keys WHERE account_id = $1 AND key = $2 FOR UPDATE`,
          [accountId, key],
        );
        const row = rows[0]!;
        if (row.created_at <= now - ttlMs) {
          await client.query(
            'UPDATE idempotency_keys SET request_hash = $3, pet_id = NULL, order_id = NULL, message_seq = NULL, created_at = $4, locked_at = $4 WHERE account_id = $1 AND key = $2',
            [accountId, key, requestHash, now],
          );
          return { outcome: 'claimed' };
        }
        if (row.resource_id !== null) return { outcome: 'completed', requestHash: row.request_hash, resourceId: row.resource_id };
        if (row.locked_at <= now - leaseMs && row.request_hash === requestHash) {
          await client.query('UPDATE idempotency_keys SET locked_at = $3 WHERE account_id = $1 AND key = $2', [accountId, key, now]);
          return { outcome: 'claimed' };
        }
        return { outcome: 'in_flight', requestHash: row.request_hash };
      });
    },

    async createPetWithIdempotencyKey(accountId, pet, createdAt, key) {
      return transaction(async (client) => {
        const created = await insertPet(client, accountId, pet, createdAt);
        const done = await client.query(
          `UPDATE idempotency_keys SET pet_id = $1 WHERE account_id = $2 AND key = $3 AND ${KEY_IN_FLIGHT}`,
          [created.id, accountId, key],
        );
        // Another request completed this key meanwhile: roll back our pet (and its event), never a duplicate.
        if (done.rowCount !== 1) rollback(undefined);
        return created;
      });
    },

    async renewIdempotencyKey(accountId, key, now) {
      await query(
        `UPDATE idempotency_keys SET locked_at = $3 WHERE account_id = $1 AND key = $2 AND locked_at < $3 AND ${KEY_IN_FLIGHT}`,
        [accountId, key, now],
      );
    },

    async releaseIdempotencyKey(accountId, key) {
      await query(`DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND ${KEY_IN_FLIGHT}`, [accountId, key]);
    },

    async purgeIdempotencyKeys(before) {
      const rows = await query<{ n: number }>(
        'WITH gone AS (DELETE FROM idempotency_keys WHERE created_at < $1 RETURNING 1) SELECT count(*)::int AS n FROM gone',
        [before],
      );
      return rows[0]!.n;
    },
  };
}
