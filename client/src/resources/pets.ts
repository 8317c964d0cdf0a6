// `petstore.pets`: the animals of the API key's account (operations tagged `animals`).
import type { Core, Page, WriteOptions } from '../core.js';
import type { components, operations } from '../generated/petstore.js';

export type Pet = components['schemas']['Pet'];
export type NewPet = components['schemas']['NewPet'];
export type PetStatus = components['schemas']['PetStatus'];
export type ListPetsParams = NonNullable<operations['listPets']['parameters']['query']>;
/** As {@link ListPetsParams}, without the cursor: `limit` is the size of each page fetched. */
export type ListAllPetsParams = Omit<ListPetsParams, 'cursor'>;

export class Pets {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /** One page of pets in ascending `id` order (`listPets`); pass `nextCursor` back as `cursor` for the next. */
  list(params: ListPetsParams = {}): Promise<Page<Pet>> {
    return this.#core.page<Pet>('/pets', { limit: params.limit, status: params.status, cursor: params.cursor });
  }

  /** Every pet (optionally only those with `status`), fetching page after page as you iterate. */
  listAll(params: ListAllPetsParams = {}): AsyncIterableIterator<Pet> {
    return this.#core.all<Pet>('/pets', { limit: params.limit, status: params.status });
  }

  /** Adds a pet (`createPet`); safe to retry: see {@link WriteOptions.idempotencyKey}. */
  async create(newPet: NewPet, options: WriteOptions = {}): Promise<Pet> {
    return (await this.#core.request<Pet>({ method: 'POST', path: '/pets', body: newPet, idempotencyKey: options.idempotencyKey })).body;
  }

  /**
   * One pet by id (`getPet`).
   * @deprecated `GET /v1/pets/{petId}` is removed on 5 December 2030 (sunset; from then on it
   * fails with 410 `gone`). Use {@link Pets.list} with the `status` filter instead.
   */
  async get(id: number): Promise<Pet> {
    return (await this.#core.request<Pet>({ method: 'GET', path: `/pets/${encodeURIComponent(String(id))}` })).body;
  }
}
