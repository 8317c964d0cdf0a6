// Categories: per account, named or not. A category exists while a pet uses its id or it has a
// name (createPet still takes any categoryId, as v1 clients rely on); petCount is exact, kept
// with every change of a pet. Names are unique per account, compared case-insensitively. A
// category's strong ETag covers what its representation shows (id, name, petCount); PUT and DELETE
// ask their precondition (If-Match, If-None-Match) against the category as locked.
import { CategoryInUseError, CategoryNameTakenError, NotFoundError } from '../errors.js';
import type { Category, CategoryRepository } from '../store/categories.js';
import type { SqlDatabase } from '../store/core/sql.js';
import type { TimeOperation } from '../store/instrumented.js';
import { type CursorCodec, pageBounds, pageOf } from './cursor.js';
import { type Precondition, strongEtag } from './preconditions.js';

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
 * What two names are compared by: a case folding of the NFC form, so names that differ only in
 * case are one name. Lower, upper, then lower case maps "ß", "ẞ" and "SS" (and "ſ" and "s")
 * alike, which one round does not for "ẞ"; NFC again after it, since case mapping can leave a
 * decomposed form ("ΐ" upper-cased) that a composed spelling of the same name would not.
 */
export function categoryNameKey(name: string): string {
  return name.normalize('NFC').toLowerCase().toUpperCase().toLowerCase().normalize('NFC');
}

/** The category's strong entity-tag: it changes when its name or petCount does. */
export function categoryEtag(category: Category): string {
  return strongEtag([category.id, category.name ?? null, category.petCount]);
}

/** Throws the precondition's refusal for the category as it is (undefined: it does not exist). */
function check(precondition: Precondition | undefined, current: Category | undefined): void {
  const refused = precondition?.(current && categoryEtag(current));
  if (refused) throw refused;
}

const notFound = (id: number) => new NotFoundError(`No category with id ${id}. List your categories with GET /v1/categories.`);
const untimed: TimeOperation = (_operation, work) => work();

export function createCategoryService(deps: CategoryServiceDeps) {
  const { db, categories, cursors } = deps;
  const timed = deps.timed ?? untimed;
  return {
    /** Names or renames the category if `precondition` allows; `created` when it did not exist before. */
    put(accountId: string, id: number, name: string, precondition?: Precondition): Promise<{ category: Category; created: boolean }> {
      return timed('putCategory', () =>
        db.transaction(async (tx) => {
          // Claimed: two creates of one id (If-None-Match: *) are decided one after the other.
          const current = await categories.lock(tx, accountId, id, { claim: true });
          check(precondition, current);
          const category = await categories.put(tx, accountId, id, name, categoryNameKey(name));
          if (!category) throw new CategoryNameTakenError(name);
          return { category, created: current === undefined };
        }),
      );
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

    /** Deletes a category no pet uses, if `precondition` allows (asked last: a missing or used category is 404 or 409 whatever it says). */
    async remove(accountId: string, id: number, precondition?: Precondition): Promise<void> {
      await timed('deleteCategory', () =>
        db.transaction(async (tx) => {
          const current = await categories.lock(tx, accountId, id);
          if (!current) throw notFound(id);
          if (current.petCount > 0) throw new CategoryInUseError(id);
          check(precondition, current);
          await categories.remove(tx, accountId, id);
        }),
      );
    },
  };
}

export type CategoryService = ReturnType<typeof createCategoryService>;
