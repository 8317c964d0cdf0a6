// Pet business rules. Every operation is scoped to the caller's account: another
// account's pet is indistinguishable from a missing one.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError, NotFoundError } from '../errors.js';
import type { NewPet, Pet, PetStatus } from '../schemas/index.js';
import type { ListPetsQuery, Store } from '../store/types.js';
import type { CursorCodec } from './cursor.js';

export interface PageQuery {
  limit: number;
  status?: PetStatus | undefined;
  cursor?: string | undefined;
}

export interface PetPage {
  pets: readonly Pet[];
  /** Present when more pets follow this page. */
  nextCursor: string | undefined;
}

/** Idempotency keys are kept this long (and at least this long), then may be reused. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** An unfinished request holding a key this long is presumed crashed; a retry may take over. */
export const IDEMPOTENCY_LEASE_MS = 60 * 1000;

/** Same request ⇔ same fields and values, whatever the key order or whitespace of the JSON. */
export function requestHash(pet: NewPet): string {
  const canonical = JSON.stringify([pet.name, pet.categoryId, pet.status ?? null]);
  return createHash('sha256').update(canonical).digest('hex');
}

export function createPetService(deps: { store: Store; clock: Clock; cursors: CursorCodec }) {
  const { store, clock, cursors } = deps;
  // A store that caches returns the same frozen rows for the same query: derive the page
  // (and its signed cursor) once per such result, not once per request.
  const pagesOf = new WeakMap<readonly Pet[], PetPage>();

  /** The store query for a page: after the cursor's id, one extra row to tell whether a next page exists without a COUNT. */
  function rowsQuery(accountId: string, query: PageQuery): ListPetsQuery {
    const afterId = query.cursor === undefined ? 0 : cursors.decode(accountId, query.cursor, query.status);
    return { accountId, limit: query.limit + 1, status: query.status, afterId };
  }

  /** The page of `query.limit` pets (and the cursor after it) from `limit + 1` rows. */
  function pageOf(accountId: string, query: PageQuery, rows: readonly Pet[]): PetPage {
    const shared = Object.isFrozen(rows);
    if (shared) {
      const page = pagesOf.get(rows);
      if (page) return page;
    }
    const pets = rows.slice(0, query.limit);
    const last = pets[pets.length - 1];
    const nextCursor =
      rows.length > query.limit && last ? cursors.encode(accountId, { afterId: last.id, status: query.status }) : undefined;
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
      const hash = requestHash(pet);
      for (;;) {
        const now = clock.now();
        const claim = await store.claimIdempotencyKey({
          accountId, key, requestHash: hash, now, ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS,
        });
        if (claim.outcome !== 'claimed' && claim.requestHash !== hash) throw new IdempotencyKeyReusedError();
        if (claim.outcome === 'in_flight') throw new IdempotencyKeyInUseError();
        if (claim.outcome === 'completed') {
          const first = await store.getPet(accountId, claim.petId);
          if (first) return { pet: first, replayed: true };
          throw new Error(`idempotency key completed with missing pet ${claim.petId}`);
        }
        let created: Pet | undefined;
        try {
          created = await store.createPetWithIdempotencyKey(accountId, pet, new Date(now).toISOString(), key);
        } catch (err) {
          // Let the client retry with the same key; nothing was created.
          await store.releaseIdempotencyKey(accountId, key).catch(() => undefined);
          throw err;
        }
        if (created) return { pet: created, replayed: false };
        // A takeover race: another request completed the key first. Loop to replay its pet.
      }
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
      return pageOf(accountId, query, await store.listPets(rowsQuery(accountId, query)));
    },

    /** The page when the store can answer from memory right now (see Store.cachedPage), else undefined. */
    listCached(accountId: string, query: PageQuery): PetPage | undefined {
      if (!store.cachedPage) return undefined;
      const rows = store.cachedPage(rowsQuery(accountId, query));
      return rows && pageOf(accountId, query, rows);
    },
  };
}

export type PetService = ReturnType<typeof createPetService>;
