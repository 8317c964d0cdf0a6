// `petstore.categories`: the names and pet counts of the account's categories, and
// `petstore.inventory`: how many pets are in each status. Experimental.
import type { Core, Page } from '../core.js';
import type { components, operations } from '../generated/petstore.js';

/** @experimental A category: its id (the pets' `categoryId`), its name if given, and its exact `petCount`. */
export type Category = components['schemas']['Category'];
/** @experimental The query of `listCategories`: `limit` (1–100, default 20) and `cursor`. */
export type ListCategoriesParams = NonNullable<operations['listCategories']['parameters']['query']>;
/** @experimental The account's pets counted by status (`withoutStatus`: pets without one), and the `total`. */
export type Inventory = components['schemas']['Inventory'];

const CATEGORIES = '/categories';
const categoryPath = (id: number) => `${CATEGORIES}/${encodeURIComponent(String(id))}`;

/** @experimental `x-stability: experimental` in the API document: the shape may still change. */
export class Categories {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Names or renames a category (`putCategory`), creating it if needed. Fails with 409
   * `category_name_taken` when another of your categories has the name (in any case). Repeatable.
   */
  async put(id: number, name: string): Promise<Category> {
    return (await this.#core.request<Category>({ method: 'PUT', path: categoryPath(id), body: { name } })).body;
  }

  /** One category by id (`getCategory`); 404 `not_found` when no pet uses it and it has no name. */
  async get(id: number): Promise<Category> {
    return (await this.#core.request<Category>({ method: 'GET', path: categoryPath(id) })).body;
  }

  /** One page of categories in ascending id order; pass `nextCursor` back as `cursor` for the next. */
  list(params: ListCategoriesParams = {}): Promise<Page<Category>> {
    return this.#core.page<Category>(CATEGORIES, { limit: params.limit, cursor: params.cursor });
  }

  /** Every category, fetching page after page (of `limit`) as you iterate. */
  listAll(params: Omit<ListCategoriesParams, 'cursor'> = {}): AsyncIterableIterator<Category> {
    return this.#core.all<Category>(CATEGORIES, { limit: params.limit });
  }

  /** Deletes a category no pet uses (204); 409 `category_in_use` otherwise. A retry after a lost answer may fail with 404. */
  async delete(id: number): Promise<void> {
    await this.#core.request<undefined>({ method: 'DELETE', path: categoryPath(id) });
  }
}

/** @experimental `x-stability: experimental` in the API document: the shape may still change. */
export class InventoryResource {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /** The account's pets counted by status, exact as of the answer (`getInventory`). */
  async get(): Promise<Inventory> {
    return (await this.#core.request<Inventory>({ method: 'GET', path: '/store/inventory' })).body;
  }
}
