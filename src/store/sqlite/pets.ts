// What SQLite adds to pets: the group commit's batch as multi-row INSERTs, and the exact
// in-memory read cache (read-cache.ts) in front of get and list.
import type { Pet } from '../../schemas/index.js';
import type { Sql, SqlDatabase } from '../core/sql.js';
import { adjustCategories } from '../categories.js';
import type { NewEvent } from '../events.js';
import { categoryCounts, inventoryDelta, type ListPetsQuery, nextPetIds, PET_COLUMN_VALUES, type PetBackend, type PetCreate, type PetMemory, type PetRepository, toPet } from '../pets.js';
import { petCreatedEvent } from '../../services/domain-events.js';
import type { ReadCache } from './read-cache.js';

/** Appends events of several accounts in the caller's transaction (a group commit's). */
export type AppendMany = (tx: Sql, writes: ReadonlyArray<{ accountId: string; event: NewEvent; createdAt: string; trace?: string | undefined }>) => Promise<void>;

const insertSqls: string[] = [];
const insertSql = (rows: number) =>
  (insertSqls[rows] ??= `INSERT INTO pets (account_id, id, name, category_id, status, created_at) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`);

/** Each item's id, in call order within its account: one counter update (ids and inventory) per account. */
async function idsFor(tx: Sql, batch: readonly PetCreate[]): Promise<number[]> {
  const statuses = new Map<string, Array<PetCreate['pet']['status']>>();
  for (const { accountId, pet } of batch) {
    const list = statuses.get(accountId);
    if (list) list.push(pet.status);
    else statuses.set(accountId, [pet.status]);
  }
  const next = new Map<string, number>();
  for (const [accountId, list] of statuses) next.set(accountId, await nextPetIds(tx, accountId, list.length, inventoryDelta(list)));
  return batch.map(({ accountId }) => {
    const id = next.get(accountId)!;
    next.set(accountId, id + 1);
    return id;
  });
}

/**
 * The batch as multi-row INSERTs of power-of-two sizes (42 pets: 32 + 8 + 2: a few statement
 * shapes, each prepared once), then the pets' events. No RETURNING: the values are validated
 * and the columns plain, so each pet is what a SELECT would return.
 */
export function sqlitePetBatches(db: SqlDatabase, appendMany: AppendMany, cache: ReadCache | undefined): PetBackend {
  return {
    writeBatch: (batch) =>
      db.transaction(async (tx) => {
        const ids = await idsFor(tx, batch);
        await adjustCategories(tx, categoryCounts(batch));
        for (let start = 0; start < batch.length; ) {
          const size = 2 ** Math.floor(Math.log2(batch.length - start));
          const values: unknown[] = [];
          for (let i = start; i < start + size; i++) {
            const { accountId, pet, createdAt } = batch[i]!;
            values.push(accountId, ids[i], pet.name, pet.categoryId, pet.status ?? null, createdAt);
          }
          await tx.run(insertSql(size), values);
          start += size;
        }
        const pets = batch.map(({ pet }, i) => toPet({ id: ids[i]!, name: pet.name, category_id: pet.categoryId, status: pet.status ?? null }));
        await appendMany(tx, batch.map(({ accountId, createdAt, trace }, i) => ({ accountId, event: petCreatedEvent(pets[i]!), createdAt, trace })));
        return pets;
      }),
    // A statement per pet: an UPDATE … FROM a VALUES list is planned as a scan of the account's
    // pets (milliseconds for 100 000), while a primary-key update costs microseconds in-process.
    async writeColumns(tx, accountId, columns, pets) {
      const sql = `UPDATE pets SET ${columns.map((column) => `${column} = ?`).join(', ')} WHERE account_id = ? AND id = ?`;
      for (const pet of pets) await tx.run(sql, [...columns.map((column) => PET_COLUMN_VALUES[column](pet)), accountId, pet.id]);
    },
    wrote: (accountId, petId) => {
      if (!cache) return;
      if (petId === undefined) cache.wrote(accountId);
      else cache.petChanged(accountId, petId);
    },
  };
}

/**
 * get and list answered from the read cache when it holds the answer; `fresh()` first asks
 * whether another connection committed (which clears the cache).
 */
export function withReadCache(pets: PetRepository, cache: ReadCache, fresh: () => void): PetRepository {
  const memory: PetMemory = {
    pet(accountId, id) {
      fresh();
      return cache.getPet(accountId, id);
    },
    page({ accountId, limit, status, categoryId, afterId = 0 }: ListPetsQuery) {
      fresh();
      return cache.getPage(accountId, { status, categoryId }, afterId, limit);
    },
  };
  return {
    ...pets,
    memory,
    async get(accountId, id) {
      const hit = memory.pet(accountId, id);
      if (hit) return hit;
      const generation = cache.generation(accountId);
      const pet = await pets.get(accountId, id);
      return pet && cache.setPet(accountId, pet, generation);
    },
    async inventory(accountId) {
      fresh();
      const hit = cache.getInventory(accountId);
      if (hit) return { ...hit };
      const generation = cache.generation(accountId);
      return { ...cache.setInventory(accountId, await pets.inventory(accountId), generation) };
    },
    async list(query) {
      const hit = memory.page(query);
      if (hit) return hit;
      // Read before the query: a commit while it runs leaves the entry stale, never wrong.
      const generation = cache.generation(query.accountId);
      const rows = (await pets.list(query)) as Pet[];
      return cache.setPage(query.accountId, { status: query.status, categoryId: query.categoryId }, query.afterId ?? 0, query.limit, rows, generation);
    },
  };
}
