// Pet business rules. Every operation is scoped to the caller's account: another
// account's pet is indistinguishable from a missing one.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { NotFoundError } from '../errors.js';
import type { NewPet, Pet, PetStatus } from '../schemas/index.js';
import type { ListPetsQuery, Store } from '../store/types.js';
import { type CursorCodec, pageBounds, pageOf, type PageRequest } from './cursor.js';
import { IDEMPOTENCY_TTL_MS, runIdempotent } from './idempotency.js';

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

export function createPetService(deps: { store: Store; clock: Clock; cursors: CursorCodec<PetStatus> }) {
  const { store, clock, cursors } = deps;
  // A store that caches returns the same frozen rows for the same query: derive the page
  // (and its signed cursor) once per such result, not once per request.
  const pagesOf = new WeakMap<readonly Pet[], PetPage>();

  function rowsQuery(accountId: string, query: PageQuery): ListPetsQuery {
    return { accountId, status: query.status, ...pageBounds(cursors, accountId, query) };
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
    create(accountId: string, pet: NewPet): Promise<Pet> {
      return store.createPet(accountId, pet, new Date(clock.now()).toISOString());
    },

    /**
     * Creates at most one pet per (account, key): a retry with the same body replays the
     * first result; a different body is refused (422); a retry while the first runs, 409.
     */
    async createIdempotent(accountId: string, pet: NewPet, key: string): Promise<{ pet: Pet; replayed: boolean }> {
      const { value, replayed } = await runIdempotent(deps, accountId, key, requestHash(pet), {
        replay: async (petId) => {
          const first = await store.getPet(accountId, petId);
          if (!first) throw new Error(`idempotency key completed with missing pet ${petId}`);
          return first;
        },
        create: (now) => store.createPetWithIdempotencyKey(accountId, pet, new Date(now).toISOString(), key),
      });
      return { pet: value, replayed };
    },

    /** Forgets idempotency keys past their retention. */
    purgeExpiredIdempotencyKeys(): Promise<number> {
      return store.purgeIdempotencyKeys(clock.now() - IDEMPOTENCY_TTL_MS);
    },

    /** The pet when the store can answer from memory right now (see Store.cachedPet), else undefined. */
    getCached(accountId: string, id: number): Pet | undefined {
      return store.cachedPet?.(accountId, id);
    },

    async get(accountId: string, id: number): Promise<Pet> {
      const pet = await store.getPet(accountId, id);
      if (!pet) throw new NotFoundError(`No pet with id ${id}. List your pets with GET /v1/pets.`);
      return pet;
    },

    async list(accountId: string, query: PageQuery): Promise<PetPage> {
      return pageFrom(accountId, query, await store.listPets(rowsQuery(accountId, query)));
    },

    /** The page when the store can answer from memory right now (see Store.cachedPage), else undefined. */
    listCached(accountId: string, query: PageQuery): PetPage | undefined {
      if (!store.cachedPage) return undefined;
      const rows = store.cachedPage(rowsQuery(accountId, query));
      return rows && pageFrom(accountId, query, rows);
    },
  };
}

export type PetService = ReturnType<typeof createPetService>;
