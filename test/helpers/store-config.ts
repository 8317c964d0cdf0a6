// The store slices of the default configuration for a database URL, as a test opens a store.
import { type Config, type DatabaseConfig, loadConfig } from '../../src/config.js';

export function storeConfig(url: string, database: Partial<DatabaseConfig> = {}): Pick<Config, 'database' | 'events'> {
  // 10 s to connect, as the suites' apps have: CI's busy cores have taken over the default 2 s.
  const config = loadConfig({ PETSTORE_DATABASE_URL: url, PETSTORE_PG_CONNECT_TIMEOUT_MS: '10000' });
  return { database: { ...config.database, ...database }, events: config.events };
}
