// Categories: per account, named or not. A category exists while a pet uses its id or it has a
// name (createPet still takes any categoryId, as v1 clients rely on); petCount is exact, kept
// with every change of a pet. Names are unique per account, compared case-insensitively.
import { CategoryInUseError, CategoryNameTakenError, NotFoundError } from '../errors.js';
import type { Category, CategoryRepository } from '../store/categories.js';
import type { SqlDatabase } from '../store/core/sql.js';
import type { TimeOperation } from '../store/instrumented.js';
import { type CursorCodec, pageBounds, pageOf } from './cursor.js';

export interface CategoryServiceDeps {
  db: Pick<SqlDatabase, 'transaction'>;
  categories: CategoryRepository;
  cursors: CursorCodec<string>;
  timed?: TimeOperation | undefined;
}

export interface CategoryPage {
  categories: Category[];
  nextCursor: string | undefined;
}

/**
 * What two names are compared by: a case folding (upper then lower case maps "ß" and "SS",
 * "ſ" and "s" alike) of the NFC form, so names that differ only in case are one name.
 */
export function categoryNameKey(name: string): string {
  return name.normalize('NFC').toUpperCase().toLowerCase();
}

const notFound = (id: number) => new NotFoundError(`No category with id ${id}. List your categories with GET /v1/categories.`);
const untimed: TimeOperation = (_operation, work) => work();

export function createCategoryService(deps: CategoryServiceDeps) {
  const { db, categories, cursors } = deps;
  const timed = deps.timed ?? untimed;
  return {
    /** Names or renames the category; `created` when it did not exist before. */
    async put(accountId: string, id: number, name: string): Promise<{ category: Category; created: boolean }> {
      const result = await timed('putCategory', () => db.transaction((tx) => categories.put(tx, accountId, id, name, categoryNameKey(name))));
      if (result.outcome === 'name_taken') throw new CategoryNameTakenError(name);
      return { category: result.category, created: result.outcome === 'created' };
    },

    async get(accountId: string, id: number): Promise<Category> {
      const category = await categories.get(accountId, id);
      if (!category) throw notFound(id);
      return category;
    },

    async list(accountId: string, query: { limit: number; cursor?: string | undefined }): Promise<CategoryPage> {
      const rows = await categories.list({ accountId, ...pageBounds(cursors, accountId, query) });
      const { items, nextCursor } = pageOf(cursors, accountId, query, rows);
      return { categories: items, nextCursor };
    },

    /** Deletes a category no pet uses. */
    async remove(accountId: string, id: number): Promise<void> {
      const outcome = await timed('deleteCategory', () => db.transaction((tx) => categories.remove(tx, accountId, id)));
      if (outcome === 'missing') throw notFound(id);
      if (outcome === 'in_use') throw new CategoryInUseError(id);
    },
  };
}

export type CategoryService = ReturnType<typeof createCategoryService>;
