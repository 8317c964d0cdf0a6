// Pet business rules. Every operation is scoped to the caller's account: another
// account's pet is indistinguishable from a missing one.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { NotFoundError } from '../errors.js';
import type { NewPet, Pet, PetStatus } from '../schemas/index.js';
import type { EventType } from '../schemas/events.js';
import type { SqlDatabase } from '../store/core/sql.js';
import type { EventRepository } from '../store/events.js';
import type { IdempotencyRepository } from '../store/idempotency.js';
import type { Inventory, ListPetsQuery, PetCreate, PetRepository } from '../store/pets.js';
import { type CursorCodec, pageBounds, pageOf, type PageRequest } from './cursor.js';
import { petCreatedEvent } from './domain-events.js';
import { completeKey, IDEMPOTENCY_TTL_MS, runIdempotent } from './idempotency.js';

export type PageQuery = PageRequest<PetStatus>;

export interface PetPage {
  pets: readonly Pet[];
  /** Present when more pets follow this page. */
  nextCursor: string | undefined;
}

/** Same request ⇔ same fields and values, whatever the key order or whitespace of the JSON. */
export function requestHash(pet: NewPet): string {
  const canonical = JSON.stringify([pet.name, pet.categoryId, pet.status ?? null]);
  return createHash('sha256').update(canonical).digest('hex');
}

export interface PetServiceDeps {
  db: Pick<SqlDatabase, 'transaction'>;
  pets: PetRepository;
  idempotency: IdempotencyRepository;
  events: Pick<EventRepository, 'append'>;
  clock: Clock;
  cursors: CursorCodec<PetStatus>;
  /** Told after a change with events committed (the events metric; wakes the webhook worker). */
  published?: ((types: readonly EventType[]) => void) | undefined;
}

const PET_CREATED: readonly EventType[] = ['pet.created'];

/**
 * The pet, its idempotency key's completion and its pet.created event, in one transaction.
 * StoreConflictError (and nothing written) when another request completed the key meanwhile.
 */
export function createPetWithKey(deps: Pick<PetServiceDeps, 'db' | 'pets' | 'idempotency' | 'events'>, item: PetCreate, key: string): Promise<Pet> {
  const { db, pets, idempotency, events } = deps;
  return db.transaction(async (tx) => {
    const created = await pets.insert(tx, item);
    await completeKey(idempotency, tx, item.accountId, key, { petId: created.id });
    await events.append(tx, item.accountId, [petCreatedEvent(created)], item.createdAt);
    return created;
  });
}

export function createPetService(deps: PetServiceDeps) {
  const { pets, idempotency, clock, cursors, published } = deps;
  // A store that caches returns the same frozen rows for the same query: derive the page
  // (and its signed cursor) once per such result, not once per request.
  const pagesOf = new WeakMap<readonly Pet[], PetPage>();

  function rowsQuery(accountId: string, query: PageQuery): ListPetsQuery {
    return { accountId, status: query.status, categoryId: query.categoryId, ...pageBounds(cursors, accountId, query) };
  }

  /** The page of `query.limit` pets (and the cursor after it) from `limit + 1` rows. */
  function pageFrom(accountId: string, query: PageQuery, rows: readonly Pet[]): PetPage {
    const shared = Object.isFrozen(rows);
    if (shared) {
      const page = pagesOf.get(rows);
      if (page) return page;
    }
    const { items: pets, nextCursor } = pageOf(cursors, accountId, query, rows);
    if (!shared) return { pets, nextCursor };
    const page: PetPage = Object.freeze({ pets: Object.freeze(pets), nextCursor });
    pagesOf.set(rows, page);
    return page;
  }

  return {
    /** The pet and its pet.created event, in a group commit with the other creates of this moment. */
    async create(accountId: string, pet: NewPet): Promise<Pet> {
      const created = await pets.create({ accountId, pet, createdAt: new Date(clock.now()).toISOString() });
      published?.(PET_CREATED);
      return created;
    },

    /**
     * Creates at most one pet per (account, key): a retry with the same body replays the
     * first result; a different body is refused (422); a retry while the first runs, 409.
     */
    async createIdempotent(accountId: string, pet: NewPet, key: string): Promise<{ pet: Pet; replayed: boolean }> {
      const { value, replayed } = await runIdempotent(deps, accountId, key, requestHash(pet), {
        replay: async (petId) => {
          // The pet as it is now (a PATCH since shows); a deleted one is gone for replays too.
          const first = await pets.get(accountId, petId);
          if (!first) throw new NotFoundError(`The pet this Idempotency-Key created (id ${petId}) has since been deleted.`);
          return first;
        },
        create: (now) => createPetWithKey(deps, { accountId, pet, createdAt: new Date(now).toISOString() }, key),
      });
      if (!replayed) published?.(PET_CREATED);
      return { pet: value, replayed };
    },

    /** Forgets idempotency keys past their retention. */
    purgeExpiredIdempotencyKeys(): Promise<number> {
      return idempotency.purge(clock.now() - IDEMPOTENCY_TTL_MS);
    },

    /** The pet when the store can answer from memory right now (see PetMemory), else undefined. */
    getCached(accountId: string, id: number): Pet | undefined {
      return pets.memory?.pet(accountId, id);
    },

    async get(accountId: string, id: number): Promise<Pet> {
      const pet = await pets.get(accountId, id);
      if (!pet) throw new NotFoundError(`No pet with id ${id}. List your pets with GET /v1/pets.`);
      return pet;
    },

    async list(accountId: string, query: PageQuery): Promise<PetPage> {
      return pageFrom(accountId, query, await pets.list(rowsQuery(accountId, query)));
    },

    /** The account's pets per status, and in all: counters kept with every change, not a count. */
    async inventory(accountId: string): Promise<Inventory & { total: number }> {
      const { available, pending, sold, withoutStatus } = await pets.inventory(accountId);
      // A literal, not `{ ...counts, total }`: on Node 20 that gives every answer a hidden class of
      // its own, and the serializer and reply.send went megamorphic (docs/performance.md).
      return { available, pending, sold, withoutStatus, total: available + pending + sold + withoutStatus };
    },

    /** The page when the store can answer from memory right now (see PetMemory), else undefined. */
    listCached(accountId: string, query: PageQuery): PetPage | undefined {
      if (!pets.memory) return undefined;
      const rows = pets.memory.page(rowsQuery(accountId, query));
      return rows && pageFrom(accountId, query, rows);
    },
  };
}

export type PetService = ReturnType<typeof createPetService>;
