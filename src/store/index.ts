// Picks the backend from the database URL.
import type { DatabaseConfig, EventsConfig } from '../config.js';
import { type SecretsConfig, sealingFor } from '../webhooks/secret-keys.js';
import { createSqliteStore, sqlitePath } from './sqlite/index.js';
import type { Store } from './types.js';

export type { Store } from './types.js';

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export interface StoreRole {
  /** A long-running server or worker (not a CLI command): SQLite checkpoints from a thread. */
  server?: boolean;
}

/** `secrets`: the sealing keys (config.secrets); without it, as with none set (SQLite: the key file). */
export async function createStore(
  { database, events, secrets }: { database: DatabaseConfig; events: Pick<EventsConfig, 'enabled'>; secrets?: SecretsConfig },
  role: StoreRole = {},
): Promise<Store> {
  if (isPostgresUrl(database.url)) {
    const sealing = sealingFor(secrets, undefined);
    // Loaded on demand so SQLite deployments never load pg.
    const { createPostgresStore } = await import('./postgres/index.js');
    const store = createPostgresStore(database.url, {
      poolMax: database.pgPoolMax, connectTimeoutMs: database.pgConnectTimeoutMs, pipelineConnections: database.pgPipelineConnections, events: events.enabled, secrets: sealing.box,
    });
    store.secretsWarning = sealing.warning;
    return store;
  }
  const sealing = sealingFor(secrets, sqlitePath(database.url));
  return createSqliteStore(database.url, { readCache: database.readCache, events: events.enabled, secrets: sealing.box, checkpointThread: role.server === true });
}
