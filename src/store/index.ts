// Picks the backend from the database URL.
import type { Config } from '../config.js';
import { createSqliteStore } from './sqlite/index.js';
import type { Store } from './types.js';

export type { Store } from './types.js';

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export async function createStore(config: Pick<Config, 'databaseUrl' | 'pgPoolMax'> & Partial<Pick<Config, 'pgPipelineConnections' | 'readCache' | 'events'>>): Promise<Store> {
  if (isPostgresUrl(config.databaseUrl)) {
    // Loaded on demand so SQLite deployments never load pg.
    const { createPostgresStore } = await import('./postgres/index.js');
    return createPostgresStore(config.databaseUrl, { poolMax: config.pgPoolMax, pipelineConnections: config.pgPipelineConnections ?? 1, events: config.events ?? true });
  }
  return createSqliteStore(config.databaseUrl, { readCache: config.readCache ?? true, events: config.events ?? true });
}
