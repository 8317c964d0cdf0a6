// `petstore.categories`: the names and pet counts of the account's categories, and
// `petstore.inventory`: how many pets are in each status. Experimental.
import type { Core, Page } from '../core.js';
import { conditional, tagged } from '../etags.js';
import type { components, operations } from '../generated/petstore.js';

/** @experimental A category: its id (the pets' `categoryId`), its name if given, and its exact `petCount`. */
export type Category = components['schemas']['Category'];
/** @experimental The query of `listCategories`: `limit` (1–100, default 20) and `cursor`. */
export type ListCategoriesParams = NonNullable<operations['listCategories']['parameters']['query']>;
/** @experimental The account's pets counted by status (`withoutStatus`: pets without one), and the `total`. */
export type Inventory = components['schemas']['Inventory'];

/** @experimental Options of a conditional `categories.put` or `categories.delete`. */
export interface CategoryConditions {
  /**
   * Apply the change only if the category's current ETag is this one (`etagOf(category)`), or
   * `'*'` for any existing category; otherwise 412 `precondition_failed` and nothing changes.
   */
  ifMatch?: string | undefined;
  /** `'*'` on `put`: create only; 412 `precondition_failed` when the category exists already. */
  ifNoneMatch?: '*' | undefined;
}

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
   * `category_name_taken` when another of your categories has the name (in any case). Repeatable
   * unless conditional. Its ETag: `etagOf(category)`.
   */
  async put(id: number, name: string, options: CategoryConditions = {}): Promise<Category> {
    const answer = await this.#core.request<Category>({ method: 'PUT', path: categoryPath(id), body: { name }, ...conditional(options) });
    return tagged(answer.body, answer.headers.get('etag'));
  }

  /** One category by id (`getCategory`); 404 `not_found` when no pet uses it and it has no name. Its ETag: `etagOf(category)`. */
  async get(id: number): Promise<Category> {
    const answer = await this.#core.request<Category>({ method: 'GET', path: categoryPath(id) });
    return tagged(answer.body, answer.headers.get('etag'));
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
  async delete(id: number, options: Pick<CategoryConditions, 'ifMatch'> = {}): Promise<void> {
    await this.#core.request<undefined>({ method: 'DELETE', path: categoryPath(id), ...conditional(options) });
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
