// Picks the backend from the database URL.
import type { DatabaseConfig, EventsConfig } from '../config.js';
import { createSqliteStore } from './sqlite/index.js';
import type { Store } from './types.js';

export type { Store } from './types.js';

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export interface StoreRole {
  /** A long-running server or worker (not a CLI command): SQLite checkpoints from a thread. */
  server?: boolean;
}

export async function createStore({ database, events }: { database: DatabaseConfig; events: Pick<EventsConfig, 'enabled'> }, role: StoreRole = {}): Promise<Store> {
  if (isPostgresUrl(database.url)) {
    // Loaded on demand so SQLite deployments never load pg.
    const { createPostgresStore } = await import('./postgres/index.js');
    return createPostgresStore(database.url, { poolMax: database.pgPoolMax, pipelineConnections: database.pgPipelineConnections, events: events.enabled });
  }
  return createSqliteStore(database.url, { readCache: database.readCache, events: events.enabled, checkpointThread: role.server === true });
}
