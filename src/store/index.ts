// Picks the backend from the database URL.
import { type Config, ConfigError } from '../config.js';
import { createSqliteStore } from './sqlite/index.js';
import type { Store } from './types.js';

export type { Store } from './types.js';

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export async function createStore(config: Pick<Config, 'databaseUrl' | 'pgPoolMax'>): Promise<Store> {
  if (isPostgresUrl(config.databaseUrl)) {
    throw new ConfigError('PostgreSQL URLs are not supported yet; use a SQLite file path.');
  }
  return createSqliteStore(config.databaseUrl);
}
