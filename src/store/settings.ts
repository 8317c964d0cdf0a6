// Installation-wide settings (the cursor signing secret), shared by every process.
import type { Sql } from './core/sql.js';
import type { Dialect } from './core/dialect.js';

export interface SettingsRepository {
  /** The stored value, or stores and returns `create()` when absent (the first writer wins). */
  getOrCreate(key: string, create: () => string): Promise<string>;
}

export function createSettingsRepository(db: Sql, dialect: Dialect): SettingsRepository {
  return {
    async getOrCreate(key, create) {
      // Two statements on purpose: on PostgreSQL the SELECT takes a fresh snapshot, so it sees
      // a row a concurrent writer committed after our INSERT gave way to it.
      await db.run(dialect.insertIgnore('settings (key, value) VALUES (?, ?)', 'key'), [key, create()]);
      return (await db.get<{ value: string }>('SELECT value FROM settings WHERE key = ?', [key]))!.value;
    },
  };
}
