// The store backends the contract suites run against. SQLite always; PostgreSQL when
// PETSTORE_TEST_POSTGRES_URL points at a server (a fresh database is created per store).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface BackendDatabase {
  /** Value for PETSTORE_DATABASE_URL. */
  url: string;
  /** Deletes the database. */
  drop(): Promise<void>;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  createDatabase(): Promise<BackendDatabase>;
}

export const sqliteBackend: Backend = {
  name: 'sqlite',
  async createDatabase() {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-test-'));
    return { url: path.join(dir, 'petstore.db'), drop: async () => rmSync(dir, { recursive: true, force: true }) };
  },
};

/** Admin URL of the PostgreSQL server used by the tests, or undefined to skip them. */
export const postgresAdminUrl: string | undefined = process.env.PETSTORE_TEST_POSTGRES_URL || undefined;

/** Runs `work` on a short-lived connection to the admin database. */
export async function withPostgresAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  if (!postgresAdminUrl) throw new Error('PETSTORE_TEST_POSTGRES_URL is not set');
  const client = new pg.Client({ connectionString: postgresAdminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export const postgresBackend: Backend = {
  name: 'postgres',
  async createDatabase() {
    const name = `petstore_test_${randomBytes(8).toString('hex')}`;
    // Identifiers cannot be parameters; the name is generated here and quoted anyway.
    await withPostgresAdmin((admin) => admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
    const url = new URL(postgresAdminUrl!);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      // FORCE: a test that failed midway may still hold connections.
      drop: async () => {
        await withPostgresAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
      },
    };
  },
};

if (!postgresAdminUrl && process.env.PETSTORE_TEST_REQUIRE_POSTGRES) {
  // CI sets this: skipping PostgreSQL there would hide a broken backend.
  throw new Error('PETSTORE_TEST_REQUIRE_POSTGRES is set but PETSTORE_TEST_POSTGRES_URL is not.');
}
if (!postgresAdminUrl) {
  process.stderr.write(
    'PostgreSQL store tests skipped: set PETSTORE_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres) to run them.\n',
  );
}

export const backends: Backend[] = postgresAdminUrl ? [sqliteBackend, postgresBackend] : [sqliteBackend];
