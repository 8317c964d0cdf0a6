// The store backends the contract suites run against. SQLite always; PostgreSQL when
// PETSTORE_TEST_POSTGRES_URL points at a server (a fresh database is created per store).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

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

export const backends: Backend[] = [sqliteBackend];
