// Pet business rules. Every operation is scoped to the caller's account: another
// account's pet is indistinguishable from a missing one.
import type { Clock } from '../clock.js';
import { NotFoundError } from '../errors.js';
import type { NewPet, Pet, PetStatus } from '../schemas/index.js';
import type { Store } from '../store/types.js';
import type { CursorCodec } from './cursor.js';

export interface PetPage {
  pets: Pet[];
  /** Present when more pets follow this page. */
  nextCursor: string | undefined;
}

export function createPetService(deps: { store: Store; clock: Clock; cursors: CursorCodec }) {
  const { store, clock, cursors } = deps;
  return {
    create(accountId: string, pet: NewPet): Promise<Pet> {
      return store.createPet(accountId, pet, new Date(clock.now()).toISOString());
    },

    async get(accountId: string, id: number): Promise<Pet> {
      const pet = await store.getPet(accountId, id);
      if (!pet) throw new NotFoundError(`No pet with id ${id}. List your pets with GET /v1/pets.`);
      return pet;
    },

    async list(
      accountId: string,
      query: { limit: number; status?: PetStatus | undefined; cursor?: string | undefined },
    ): Promise<PetPage> {
      const afterId = query.cursor === undefined ? 0 : cursors.decode(accountId, query.cursor, query.status);
      // One extra row tells whether a next page exists without a COUNT.
      const rows = await store.listPets({ accountId, limit: query.limit + 1, status: query.status, afterId });
      const pets = rows.slice(0, query.limit);
      const last = pets[pets.length - 1];
      const nextCursor =
        rows.length > query.limit && last ? cursors.encode(accountId, { afterId: last.id, status: query.status }) : undefined;
      return { pets, nextCursor };
    },
  };
}

export type PetService = ReturnType<typeof createPetService>;
