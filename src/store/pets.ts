// Pets as stored, numbered per account.
import type { NewPet, Pet, PetStatus } from '../schemas/index.js';
import { petCreatedEvent } from '../services/domain-events.js';
import type { Dialect } from './core/dialect.js';
import { createGroupCommit } from './core/group-commit.js';
import type { Sql, SqlDatabase } from './core/sql.js';
import { nextIds } from './accounts.js';
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
  /** Keyset position: only pets with id greater than this. */
  afterId?: number | undefined;
}

/** A pet to create, with the time of its creation. */
export interface PetCreate {
  accountId: string;
  pet: NewPet;
  createdAt: string;
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
  get(accountId: string, id: number): Promise<Pet | undefined>;
  /** Pets of one account in ascending id order, at most `limit`. */
  list(query: ListPetsQuery): Promise<readonly Pet[]>;
  /** The pet's status, its row locked until `tx` ends; undefined when there is no such pet. */
  lockStatus(tx: Sql, accountId: string, id: number): Promise<{ status: PetStatus | null } | undefined>;
  /** The pet's status becomes `to` if it is `from`: the pet after the change, or undefined. */
  setStatus(tx: Sql, accountId: string, id: number, from: PetStatus, to: PetStatus): Promise<Pet | undefined>;
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
  /** Told before any caller hears back that a commit added pets to these accounts, or changed one pet. */
  wrote?(accountId: string, petId?: number): void;
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
    const id = await nextIds(tx, 'last_pet_id', accountId, 1);
    const row = await tx.get<PetRow>(
      `INSERT INTO pets (account_id, id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING ${PET_COLUMNS}`,
      [accountId, id, pet.name, pet.categoryId, pet.status ?? null, createdAt],
    );
    return toPet(row!);
  };
  const commits = createGroupCommit<PetCreate, Pet>({
    max: GROUP_COMMIT_MAX,
    writeBatch: backend.writeBatch,
    writeOne: (item) =>
      db.transaction(async (tx) => {
        const pet = await insert(tx, item);
        await events.append(tx, item.accountId, [petCreatedEvent(pet)], item.createdAt);
        return pet;
      }),
    written: (items) => {
      for (const item of items) backend.wrote?.(item.accountId);
    },
  });
  const byStatus = `SELECT ${PET_COLUMNS} FROM ${dialect.indexed('pets', 'pets_by_account_status')} WHERE account_id = ? AND status = ? AND id > ? ORDER BY id LIMIT ?`;
  const all = `SELECT ${PET_COLUMNS} FROM pets WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?`;

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
      const [row] = await db.readArrays('get_pet', `SELECT ${PET_COLUMNS} FROM pets WHERE account_id = ? AND id = ?`, [accountId, id]);
      return row && petOfArray(row);
    },
    async list({ accountId, limit, status, afterId = 0 }) {
      // Integer ids: "id > 1.5" equals "id > 1". A negative limit means none (as SQLite reads it).
      const after = Math.floor(afterId);
      const max = limit < 0 ? dialect.noLimit : limit;
      const rows = status
        ? await db.readArrays('list_pets_by_status', byStatus, [accountId, status, after, max])
        : await db.readArrays('list_pets', all, [accountId, after, max]);
      return rows.map(petOfArray);
    },
    async lockStatus(tx, accountId, id) {
      return tx.get<{ status: PetStatus | null }>(`SELECT status FROM pets WHERE account_id = ? AND id = ?${dialect.forUpdate}`, [accountId, id]);
    },
    async setStatus(tx, accountId, id, from, to) {
      const row = await tx.get<PetRow>(`UPDATE pets SET status = ? WHERE account_id = ? AND id = ? AND status = ? RETURNING ${PET_COLUMNS}`, [to, accountId, id, from]);
      backend.wrote?.(accountId, id);
      return row && toPet(row);
    },
    drain: () => commits.drain(),
  };
}
