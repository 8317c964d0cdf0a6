// `petstore.pets`: the animals of the API key's account (operations tagged `animals`).
import type { Core, Page, WriteOptions } from '../core.js';
import { conditional, tagged } from '../etags.js';
import type { components, operations } from '../generated/petstore.js';

export type Pet = components['schemas']['Pet'];
export type NewPet = components['schemas']['NewPet'];
export type PetStatus = components['schemas']['PetStatus'];
/** @experimental A JSON Merge Patch of a pet: the fields given change; `status: null` removes the status. */
export type PetPatch = components['schemas']['PetPatch'];
export type ListPetsParams = NonNullable<operations['listPets']['parameters']['query']>;
/** As {@link ListPetsParams}, without the cursor: `limit` is the size of each page fetched. */
export type ListAllPetsParams = Omit<ListPetsParams, 'cursor'>;

/** Options of a conditional change. */
export interface ConditionalOptions {
  /**
   * Apply the change only if the pet's current ETag is this one (`etagOf(pet)`), or `'*'` for
   * any existing pet; otherwise the call fails with 412 `precondition_failed` and nothing changes.
   * A conditional call is not repeated after a network error or timeout (a repeat of a change
   * that did apply would fail with 412): read the pet again and decide. Given as `undefined`
   * (`etagOf` of a list item, which has no ETag) the call throws a TypeError and sends nothing.
   */
  ifMatch?: string | undefined;
}

export class Pets {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /** One page of pets in ascending `id` order (`listPets`); pass `nextCursor` back as `cursor` for the next. */
  list(params: ListPetsParams = {}): Promise<Page<Pet>> {
    const { limit, status, categoryId, cursor } = params;
    return this.#core.page<Pet>('/pets', { limit, status, categoryId, cursor });
  }

  /** Every pet (optionally only those with `status` and/or `categoryId`), fetching page after page as you iterate. */
  listAll(params: ListAllPetsParams = {}): AsyncIterableIterator<Pet> {
    const { limit, status, categoryId } = params;
    return this.#core.all<Pet>('/pets', { limit, status, categoryId });
  }

  /** Adds a pet (`createPet`); safe to retry: see {@link WriteOptions.idempotencyKey}. Its ETag: `etagOf(pet)`. */
  async create(newPet: NewPet, options: WriteOptions = {}): Promise<Pet> {
    const answer = await this.#core.request<Pet>({ method: 'POST', path: '/pets', body: newPet, idempotencyKey: options.idempotencyKey });
    return tagged(answer.body, answer.headers.get('etag'));
  }

  /**
   * One pet by id (`getPet`). Its ETag: `etagOf(pet)`.
   * @deprecated `GET /v1/pets/{petId}` is removed on 5 December 2030 (sunset; from then on it
   * fails with 410 `gone`). Use {@link Pets.list} with the `status` filter instead.
   */
  async get(id: number): Promise<Pet> {
    const answer = await this.#core.request<Pet>({ method: 'GET', path: petPath(id) });
    return tagged(answer.body, answer.headers.get('etag'));
  }

  /**
   * Changes the fields given (`updatePet`, a JSON Merge Patch) and returns the pet after; its new
   * ETag: `etagOf(pet)`. A status change while the pet has a placed order fails with 409
   * `pet_has_open_order`. Without `ifMatch` a repeat is harmless and the call is retried.
   * @experimental `x-stability: experimental`.
   */
  async update(id: number, patch: PetPatch, options: ConditionalOptions = {}): Promise<Pet> {
    const answer = await this.#core.request<Pet>({ method: 'PATCH', path: petPath(id), body: patch, ...conditional(options) });
    return tagged(answer.body, answer.headers.get('etag'));
  }

  /**
   * Deletes the pet (`deletePet`, 204); fails with 409 `pet_has_open_order` while it has a placed
   * order. A retry after a lost answer may fail with 404 `not_found` (the first attempt deleted it).
   * @experimental `x-stability: experimental`.
   */
  async delete(id: number, options: ConditionalOptions = {}): Promise<void> {
    await this.#core.request<undefined>({ method: 'DELETE', path: petPath(id), ...conditional(options) });
  }
}

function petPath(id: number): string {
  return `/pets/${encodeURIComponent(String(id))}`;
}
