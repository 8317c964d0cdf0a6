// Pets as stored, numbered per account.
import type { NewPet, Pet, PetStatus } from '../schemas/index.js';
import { petCreatedEvent } from '../services/domain-events.js';
import type { Dialect } from './core/dialect.js';
import { createGroupCommit } from './core/group-commit.js';
import { hooks as tracingHooks } from '../tracing/switch.js';
import type { Sql, SqlDatabase } from './core/sql.js';
import { adjustCategories, type CategoryCount } from './categories.js';
import type { EventRepository } from './events.js';

export interface PetRow {
  id: number;
  name: string;
  category_id: number;
  status: PetStatus | null;
}

export const PET_COLUMNS = 'id, name, category_id, status';

/** `status` NULL becomes an absent property, never `null`. */
export function toPet(row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, categoryId: row.category_id };
  if (row.status !== null) pet.status = row.status;
  return pet;
}

export interface ListPetsQuery {
  accountId: string;
  limit: number;
  status?: PetStatus | undefined;
  categoryId?: number | undefined;
  /** Keyset position: only pets with id greater than this. */
  afterId?: number | undefined;
}

/** T with each optional key required (its value may still be undefined): a literal of it names every field. */
type EveryKey<T> = { [K in keyof Required<T>]: T[K] };

/** A pet to create, with the time of its creation. */
export interface PetCreate {
  accountId: string;
  pet: NewPet;
  createdAt: string;
  /** The creating request's traceparent (tracing on), stored with its pet.created event. */
  trace?: string | undefined;
}

/** The account's pets per status, kept with every change (accounts.pets_*). */
export interface Inventory {
  available: number;
  pending: number;
  sold: number;
  withoutStatus: number;
}

/** A change to the inventory: pets per status added (or removed, negative). */
export type InventoryDelta = Inventory;

const NO_CHANGE: InventoryDelta = Object.freeze({ available: 0, pending: 0, sold: 0, withoutStatus: 0 });

/** The counter a status is kept in. */
function inventoryKey(status: PetStatus | null | undefined): keyof Inventory {
  return status ?? 'withoutStatus';
}

/** The delta of pets entering (+1) and leaving (-1) statuses. */
export function inventoryDelta(entering: ReadonlyArray<PetStatus | null | undefined>, leaving: ReadonlyArray<PetStatus | null | undefined> = []): InventoryDelta {
  const delta = { ...NO_CHANGE };
  for (const status of entering) delta[inventoryKey(status)] += 1;
  for (const status of leaving) delta[inventoryKey(status)] -= 1;
  return delta;
}

const INVENTORY_SET = 'pets_available = pets_available + ?, pets_pending = pets_pending + ?, pets_sold = pets_sold + ?, pets_unset = pets_unset + ?';
const inventoryParams = (d: InventoryDelta) => [d.available, d.pending, d.sold, d.withoutStatus];

/**
 * Takes `count` pet ids from the account's counter and adds `delta` to its inventory, in one
 * statement: the first id taken.
 */
export async function nextPetIds(tx: Sql, accountId: string, count: number, delta: InventoryDelta): Promise<number> {
  const row = await tx.get<{ last: number }>(`UPDATE accounts SET last_pet_id = last_pet_id + ?, ${INVENTORY_SET} WHERE id = ? RETURNING last_pet_id AS last`, [
    count,
    ...inventoryParams(delta),
    accountId,
  ]);
  if (!row) throw new Error(`no account ${accountId}`);
  return row.last - count + 1;
}

/** Adds `delta` to the account's inventory; with `lock`, takes the account's row even when the delta is zero. */
async function adjustInventory(tx: Sql, accountId: string, delta: InventoryDelta, lock = false): Promise<void> {
  if (!lock && delta.available === 0 && delta.pending === 0 && delta.sold === 0 && delta.withoutStatus === 0) return;
  await tx.run(`UPDATE accounts SET ${INVENTORY_SET} WHERE id = ?`, [...inventoryParams(delta), accountId]);
}

/** Each (account, category) of the pets with how many of them use it. */
export function categoryCounts(items: ReadonlyArray<{ accountId: string; pet: { categoryId: number } }>): CategoryCount[] {
  const counts = new Map<string, CategoryCount>();
  for (const { accountId, pet } of items) {
    const key = `${accountId}\u0000${pet.categoryId}`;
    const entry = counts.get(key);
    if (entry) entry.count += 1;
    else counts.set(key, { accountId, categoryId: pet.categoryId, count: 1 });
  }
  return [...counts.values()];
}

/** Pets beyond the SQL that reads and writes them: how the backend keeps answers in memory. */
export interface PetMemory {
  /** The pet when an exact in-memory copy is at hand (SQLite's read cache), else undefined. */
  pet(accountId: string, id: number): Pet | undefined;
  /** The same for a page of `list`. */
  page(query: ListPetsQuery): readonly Pet[] | undefined;
}

export interface PetRepository {
  /**
   * Creates a pet with the account's next id and records its pet.created event, in a group
   * commit (core/group-commit.ts): the creates of one event-loop turn share one transaction.
   */
  create(item: PetCreate): Promise<Pet>;
  /** Creates one pet in the caller's transaction (no event: the caller records it). */
  insert(tx: Sql, item: PetCreate): Promise<Pet>;
  /** The pet, unless it does not exist or was deleted. */
  get(accountId: string, id: number): Promise<Pet | undefined>;
  /** Pets of one account in ascending id order, at most `limit`. */
  list(query: ListPetsQuery): Promise<readonly Pet[]>;
  /** The pet, its row locked until `tx` ends; undefined when there is no such pet (or it was deleted). */
  lock(tx: Sql, accountId: string, id: number): Promise<Pet | undefined>;
  /** The pet's status becomes `to` if it is `from`: the pet after the change, or undefined. */
  setStatus(tx: Sql, accountId: string, id: number, from: PetStatus, to: PetStatus): Promise<Pet | undefined>;
  /** The existing pets among `ids` (ascending), their rows locked until `tx` ends, in id order. */
  lockMany(tx: Sql, accountId: string, ids: readonly number[]): Promise<Map<number, Pet>>;
  /** Writes each `after` over its locked `before` (same id) in one statement, with the inventory and category counts. */
  updateMany(tx: Sql, accountId: string, changes: ReadonlyArray<{ before: Pet; after: Pet }>): Promise<void>;
  /** Deletes the locked pet: no read shows it again; its id is never reused. */
  remove(tx: Sql, accountId: string, pet: Pet, deletedAt: string): Promise<void>;
  /** The account's pets per status: counters, not a count. */
  inventory(accountId: string): Promise<Inventory>;
  /** Present when the backend can answer from memory (SQLite's read cache). */
  readonly memory?: PetMemory;
  /** Settles every create submitted so far. */
  drain(): Promise<void>;
}

/** A pets row selected as an array, in PET_COLUMNS order; `status` NULL becomes absent, as in toPet. */
export function petOfArray(row: unknown[]): Pet {
  const pet: Pet = { id: row[0] as number, name: row[1] as string, categoryId: row[2] as number };
  if (row[3] !== null) pet.status = row[3] as NonNullable<Pet['status']>;
  return pet;
}

/** What a backend adds to the pets written once here. */
export interface PetBackend {
  /** Writes a group commit's batch in one transaction, with the pets' pet.created events (see GroupCommitOptions). */
  writeBatch(items: readonly PetCreate[]): Promise<Array<Pet | Error>>;
  /** Writes these columns of each pet (rows locked in `tx`): the SQL that performs best differs. */
  writeColumns(tx: Sql, accountId: string, columns: readonly PetColumn[], pets: readonly Pet[]): Promise<void>;
  /** Told before any caller hears back that a commit added pets to these accounts, or changed one pet. */
  wrote?(accountId: string, petId?: number): void;
}

/** The columns a PATCH can change, and each one's value in a pet. */
export const PET_COLUMN_VALUES = {
  name: (pet: Pet) => pet.name,
  category_id: (pet: Pet) => pet.categoryId,
  status: (pet: Pet) => pet.status ?? null,
} as const;
export type PetColumn = keyof typeof PET_COLUMN_VALUES;

/** Each category's net change of pets for these moves, in ascending id (a fixed lock order), zeros left out. */
function netCategoryCounts(accountId: string, moves: ReadonlyArray<{ before: Pet; after: Pet }>) {
  const net = new Map<number, number>();
  for (const { before, after } of moves) {
    net.set(after.categoryId, (net.get(after.categoryId) ?? 0) + 1);
    net.set(before.categoryId, (net.get(before.categoryId) ?? 0) - 1);
  }
  return [...net]
    .filter(([, count]) => count !== 0)
    .sort(([a], [b]) => a - b)
    .map(([categoryId, count]) => ({ accountId, categoryId, count }));
}

/** PetRepository.updateMany: one write of every changed pet, then the account's counters. */
async function updatePets(tx: Sql, accountId: string, changes: ReadonlyArray<{ before: Pet; after: Pet }>, backend: PetBackend): Promise<void> {
  if (changes.length === 0) return;
  const statusMoves = changes.filter(({ before, after }) => before.status !== after.status);
  const categoryMoves = changes.filter(({ before, after }) => before.categoryId !== after.categoryId);
  // Only the columns some pet changes: an index entry is rewritten for every indexed column set.
  const columns = ([
    changes.some(({ before, after }) => before.name !== after.name) && 'name',
    categoryMoves.length > 0 && 'category_id',
    statusMoves.length > 0 && 'status',
  ] as const).filter((column): column is PetColumn => column !== false);
  // Issued at once, in this order (PostgreSQL runs them as issued): one write of the batch.
  const writes: Array<Promise<void>> = [];
  if (columns.length > 0) writes.push(backend.writeColumns(tx, accountId, columns, changes.map(({ after }) => after)));
  // The account's row before any category's, as creates and deletes take them: otherwise two
  // changes can each hold what the other waits for (PostgreSQL aborts one: deadlock detected).
  if (statusMoves.length > 0 || categoryMoves.length > 0) {
    writes.push(adjustInventory(tx, accountId, inventoryDelta(statusMoves.map((c) => c.after.status), statusMoves.map((c) => c.before.status)), categoryMoves.length > 0));
  }
  if (categoryMoves.length > 0) writes.push(adjustCategories(tx, netCategoryCounts(accountId, categoryMoves)));
  await Promise.all(writes);
  for (const { after } of changes) backend.wrote?.(accountId, after.id);
}

/** The most creates one group commit takes. */
export const GROUP_COMMIT_MAX = 256;

export interface PetDeps {
  db: SqlDatabase;
  dialect: Dialect;
  events: Pick<EventRepository, 'append'>;
  backend: PetBackend;
}

export function createPetRepository({ db, dialect, events, backend }: PetDeps): PetRepository {
  const insert = async (tx: Sql, { accountId, pet, createdAt }: PetCreate): Promise<Pet> => {
    const id = await nextPetIds(tx, accountId, 1, inventoryDelta([pet.status]));
    await adjustCategories(tx, [{ accountId, categoryId: pet.categoryId, count: 1 }]);
    const row = await tx.get<PetRow>(
      `INSERT INTO pets (account_id, id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING ${PET_COLUMNS}`,
      [accountId, id, pet.name, pet.categoryId, pet.status ?? null, createdAt],
    );
    return toPet(row!);
  };
  const tracing = tracingHooks;
  const commits = createGroupCommit<PetCreate, Pet>({
    max: GROUP_COMMIT_MAX,
    overlap: db.remote,
    writeBatch: backend.writeBatch,
    writeOne: (item) =>
      db.transaction(async (tx) => {
        const pet = await insert(tx, item);
        await events.append(tx, item.accountId, [petCreatedEvent(pet)], item.createdAt, [item.trace]);
        return pet;
      }),
    written: (items) => {
      for (const item of items) backend.wrote?.(item.accountId);
    },
    // The batch runs outside the request's context: a sampled request's trace goes with its item.
    // A literal, not `{ ...item, trace }`: that gives each traced item a hidden class of its own
    // in V8, and the batch's code turned megamorphic for every item (docs/performance.md).
    // Typed with every key required, so a field added to PetCreate cannot be dropped here unseen.
    ...(tracing ? { traced: (item: PetCreate, link: unknown): EveryKey<PetCreate> => ({ accountId: item.accountId, pet: item.pet, createdAt: item.createdAt, trace: tracing.traceparentOf(link) }) } : {}),
  });
  const live = 'deleted_at IS NULL';
  const INVENTORY_SQL =
    `SELECT ${dialect.int('pets_available')} AS available, ${dialect.int('pets_pending')} AS pending, ${dialect.int('pets_sold')} AS sold, ` +
    `${dialect.int('pets_unset')} AS "withoutStatus" FROM accounts WHERE id = ?`;
  const byStatus = `SELECT ${PET_COLUMNS} FROM ${dialect.indexed('pets', 'pets_by_account_status')} WHERE account_id = ? AND status = ? AND id > ? AND ${live} ORDER BY id LIMIT ?`;
  const byCategory = `SELECT ${PET_COLUMNS} FROM ${dialect.indexed('pets', 'pets_by_account_category')} WHERE account_id = ? AND category_id = ? AND id > ? AND ${live} ORDER BY id LIMIT ?`;
  const byCategoryAndStatus = `SELECT ${PET_COLUMNS} FROM ${dialect.indexed('pets', 'pets_by_account_category')} WHERE account_id = ? AND category_id = ? AND status = ? AND id > ? AND ${live} ORDER BY id LIMIT ?`;
  const all = `SELECT ${PET_COLUMNS} FROM pets WHERE account_id = ? AND id > ? AND ${live} ORDER BY id LIMIT ?`;

  function listRows({ accountId, limit, status, categoryId, afterId = 0 }: ListPetsQuery): Promise<unknown[][]> {
    // Integer ids: "id > 1.5" equals "id > 1". A negative limit means none (as SQLite reads it).
    const after = Math.floor(afterId);
    const max = limit < 0 ? dialect.noLimit : limit;
    if (categoryId !== undefined) {
      return status
        ? db.readArrays('list_pets_by_category_status', byCategoryAndStatus, [accountId, categoryId, status, after, max])
        : db.readArrays('list_pets_by_category', byCategory, [accountId, categoryId, after, max]);
    }
    return status ? db.readArrays('list_pets_by_status', byStatus, [accountId, status, after, max]) : db.readArrays('list_pets', all, [accountId, after, max]);
  }

  return {
    create: (item) => commits.submit(item),
    insert: async (tx, item) => {
      const pet = await insert(tx, item);
      backend.wrote?.(item.accountId);
      return pet;
    },
    async get(accountId, id) {
      // No pet has a fractional or unsafe id (a PostgreSQL bigint parameter would reject it).
      if (!Number.isSafeInteger(id)) return undefined;
      const [row] = await db.readArrays('get_pet', `SELECT ${PET_COLUMNS} FROM pets WHERE account_id = ? AND id = ? AND ${live}`, [accountId, id]);
      return row && petOfArray(row);
    },
    async list(query) {
      if (query.categoryId !== undefined && !Number.isSafeInteger(query.categoryId)) return [];
      return (await listRows(query)).map(petOfArray);
    },
    async lock(tx, accountId, id) {
      const row = await tx.get<PetRow>(`SELECT ${PET_COLUMNS} FROM pets WHERE account_id = ? AND id = ? AND ${live}${dialect.forUpdate}`, [accountId, id]);
      return row && toPet(row);
    },
    async setStatus(tx, accountId, id, from, to) {
      const row = await tx.get<PetRow>(`UPDATE pets SET status = ? WHERE account_id = ? AND id = ? AND status = ? AND ${live} RETURNING ${PET_COLUMNS}`, [to, accountId, id, from]);
      if (row) await adjustInventory(tx, accountId, inventoryDelta([to], [from]));
      backend.wrote?.(accountId, id);
      return row && toPet(row);
    },
    async lockMany(tx, accountId, ids) {
      const sorted = [...new Set(ids)].sort((a, b) => a - b);
      // Ascending ids: concurrent batches lock shared pets in one order (no deadlock).
      const among = dialect.anyId('id', sorted);
      const rows = await tx.all<PetRow>(`SELECT ${PET_COLUMNS} FROM pets WHERE account_id = ? AND ${among.sql} AND ${live} ORDER BY id${dialect.forUpdate}`, [
        accountId,
        ...among.params,
      ]);
      return new Map(rows.map((row) => [row.id, toPet(row)]));
    },
    updateMany: (tx, accountId, changes) => updatePets(tx, accountId, changes, backend),
    async remove(tx, accountId, pet, deletedAt) {
      await tx.run(`UPDATE pets SET deleted_at = ? WHERE account_id = ? AND id = ?`, [deletedAt, accountId, pet.id]);
      await adjustInventory(tx, accountId, inventoryDelta([], [pet.status]));
      await adjustCategories(tx, [{ accountId, categoryId: pet.categoryId, count: -1 }]);
      backend.wrote?.(accountId, pet.id);
    },
    async inventory(accountId) {
      // A hot read: pipelined on PostgreSQL, as the pet reads are.
      const [row] = await db.read<Inventory>('get_inventory', INVENTORY_SQL, [accountId]);
      return row ?? { ...NO_CHANGE };
    },
    drain: () => commits.drain(),
  };
}
