// Categories as stored, per account: a row per category id that a pet uses or that was named,
// with the number of (live) pets using it, kept by the pets repository in the same transaction
// as every change (adjustCategories). A category exists while it has pets or a name.
import type { Dialect } from './core/dialect.js';
import type { Sql, SqlDatabase } from './core/sql.js';

export interface Category {
  id: number;
  name?: string;
  petCount: number;
}

/** Pets added to (or removed from, negative) one of an account's categories. */
export interface CategoryCount {
  accountId: string;
  categoryId: number;
  count: number;
}

export interface ListCategoriesQuery {
  accountId: string;
  limit: number;
  /** Keyset position: only categories with a greater id. */
  afterId?: number | undefined;
}

export interface CategoryRepository {
  get(accountId: string, id: number): Promise<Category | undefined>;
  list(query: ListCategoriesQuery): Promise<Category[]>;
  /**
   * The category (undefined when it does not exist), its row locked until the caller's
   * transaction ends. With `claim`, a missing row is inserted (unnamed, no pets: still not
   * existing) and locked, so a concurrent put of the same id waits for this transaction and then
   * sees what it did.
   */
  lock(tx: Sql, accountId: string, id: number, options?: { claim?: boolean }): Promise<Category | undefined>;
  /** Names (or renames) the category, in the caller's transaction; names compare by `nameKey`. Undefined: the name is taken. */
  put(tx: Sql, accountId: string, id: number, name: string, nameKey: string): Promise<Category | undefined>;
  /** Deletes the category's row, in the caller's transaction (the caller checked it has no pets). */
  remove(tx: Sql, accountId: string, id: number): Promise<void>;
}

interface CategoryRow {
  id: number;
  name: string | null;
  pet_count: number;
}

function toCategory(row: CategoryRow): Category {
  const category: Category = { id: row.id, petCount: Number(row.pet_count) };
  if (row.name !== null) category.name = row.name;
  // Property order as the schema lists it: id, name, petCount.
  return row.name === null ? category : { id: category.id, name: row.name, petCount: category.petCount };
}

const EXISTS = '(name IS NOT NULL OR pet_count > 0)';
const exists = (row: CategoryRow) => row.name !== null || Number(row.pet_count) > 0;
const COLUMNS = 'id, name, pet_count';

/**
 * Adds each count to its category, creating the row when a pet first uses it. Rows in one
 * call are distinct (account, category) pairs (see categoryCounts in pets.ts).
 */
export async function adjustCategories(tx: Sql, counts: readonly CategoryCount[]): Promise<void> {
  // Issued at once, in the order given (which is the order their rows are locked in).
  await Promise.all(
    counts.map(({ accountId, categoryId, count }) =>
      count < 0
        ? tx.run('UPDATE categories SET pet_count = pet_count + ? WHERE account_id = ? AND id = ?', [count, accountId, categoryId])
        : count > 0
          ? tx.run(
              'INSERT INTO categories (account_id, id, pet_count) VALUES (?, ?, ?) ON CONFLICT (account_id, id) DO UPDATE SET pet_count = categories.pet_count + excluded.pet_count',
              [accountId, categoryId, count],
            )
          : undefined,
    ),
  );
}

export function createCategoryRepository(db: SqlDatabase, dialect: Dialect): CategoryRepository {
  return {
    async get(accountId, id) {
      if (!Number.isSafeInteger(id)) return undefined;
      const row = await db.get<CategoryRow>(`SELECT ${COLUMNS} FROM categories WHERE account_id = ? AND id = ? AND ${EXISTS}`, [accountId, id]);
      return row && toCategory(row);
    },
    async list({ accountId, limit, afterId = 0 }) {
      const rows = await db.all<CategoryRow>(`SELECT ${COLUMNS} FROM categories WHERE account_id = ? AND id > ? AND ${EXISTS} ORDER BY id LIMIT ?`, [
        accountId,
        Math.floor(afterId),
        limit < 0 ? dialect.noLimit : limit,
      ]);
      return rows.map(toCategory);
    },
    async lock(tx, accountId, id, { claim = false } = {}) {
      if (claim) await tx.run(dialect.insertIgnore('categories (account_id, id, pet_count) VALUES (?, ?, 0)', 'account_id, id'), [accountId, id]);
      const row = await tx.get<CategoryRow>(`SELECT ${COLUMNS} FROM categories WHERE account_id = ? AND id = ?${dialect.forUpdate}`, [accountId, id]);
      return row && exists(row) ? toCategory(row) : undefined;
    },
    async put(tx, accountId, id, name, nameKey) {
      const holder = await tx.get<{ id: number }>(`SELECT id FROM categories WHERE account_id = ? AND name_key = ? AND id <> ?`, [accountId, nameKey, id]);
      if (holder) return undefined;
      let row: CategoryRow | undefined;
      try {
        row = await tx.get<CategoryRow>(
          `INSERT INTO categories (account_id, id, name, name_key, pet_count) VALUES (?, ?, ?, ?, 0)
           ON CONFLICT (account_id, id) DO UPDATE SET name = excluded.name, name_key = excluded.name_key RETURNING ${COLUMNS}`,
          [accountId, id, name, nameKey],
        );
      } catch (error) {
        // A concurrent PUT (PostgreSQL) took the name between the check and this write.
        if (dialect.isUniqueViolation(error)) return undefined;
        throw error;
      }
      return toCategory(row!);
    },
    async remove(tx, accountId, id) {
      await tx.run('DELETE FROM categories WHERE account_id = ? AND id = ?', [accountId, id]);
    },
  };
}
