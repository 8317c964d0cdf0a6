// The store slices of the default configuration for a database URL, as a test opens a store.
import { type Config, type DatabaseConfig, loadConfig } from '../../src/config.js';

export function storeConfig(url: string, database: Partial<DatabaseConfig> = {}): Pick<Config, 'database' | 'events'> {
  const config = loadConfig({ PETSTORE_DATABASE_URL: url });
  return { database: { ...config.database, ...database }, events: config.events };
}
