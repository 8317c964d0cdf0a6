// The store backends the contract suites run against. SQLite always; PostgreSQL when
// PETSTORE_TEST_POSTGRES_URL points at a server (a fresh database is created per store).
// A test that only needs the latest schema gets a copy of a database migrated once
// (createMigratedDatabase): migrating afresh for each store the suite opens cost CI time.
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
  /** An empty database. */
  createDatabase(): Promise<BackendDatabase>;
  /** A database at the latest schema, as `petstore migrate` leaves an empty one (a copy of a template migrated once). */
  createMigratedDatabase(): Promise<BackendDatabase>;
}

/** Migrates the database at `url` with the store's own migrator, and closes it. */
async function migrateOnce(url: string): Promise<void> {
  const { createStore } = await import('../../src/store/index.js');
  const { storeConfig } = await import('./store-config.js');
  const store = await createStore(storeConfig(url, { pgPoolMax: 1 }));
  try {
    await store.migrate();
  } finally {
    await store.close();
  }
}

/** What a template's schema depends on: the migrations and the code that applies them. */
function schemaFingerprint(migrations: unknown): string {
  const hash = createHash('sha256').update(JSON.stringify(migrations));
  for (const file of ['core/migrator.ts', 'postgres/migration-dialect.ts', 'sqlite/migration-dialect.ts']) {
    hash.update(readFileSync(path.join('src', 'store', file))); // tests run from the repository's root
  }
  return hash.digest('hex').slice(0, 16);
}

const emptySqliteDatabase = (): BackendDatabase => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-test-'));
  return { url: path.join(dir, 'petstore.db'), drop: async () => rmSync(dir, { recursive: true, force: true }) };
};

/** This process's migrated SQLite file (closed: its WAL checkpointed and removed). */
let sqliteTemplate: Promise<string> | undefined;

export const sqliteBackend: Backend = {
  name: 'sqlite',
  async createDatabase() {
    return emptySqliteDatabase();
  },
  async createMigratedDatabase() {
    sqliteTemplate ??= (async () => {
      const template = emptySqliteDatabase();
      process.once('exit', () => void template.drop());
      await migrateOnce(template.url);
      if (existsSync(`${template.url}-wal`)) throw new Error('the SQLite template kept a WAL file after closing');
      return template.url;
    })();
    const template = await sqliteTemplate;
    const database = emptySqliteDatabase();
    copyFileSync(template, database.url);
    return database;
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

const postgresUrlOf = (name: string): string => {
  const url = new URL(postgresAdminUrl!);
  url.pathname = `/${name}`;
  return url.toString();
};

/** A new database, empty or copied from `template`; dropped by `drop`. */
async function createPostgresDatabase(template?: string): Promise<BackendDatabase> {
  const name = `petstore_test_${randomBytes(8).toString('hex')}`;
  // Identifiers cannot be parameters; the names are generated here and quoted anyway.
  const from = template === undefined ? '' : ` TEMPLATE ${pg.escapeIdentifier(template)}`;
  await withPostgresAdmin((admin) => admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${from}`));
  return {
    url: postgresUrlOf(name),
    // FORCE: a test that failed midway may still hold connections.
    drop: async () => {
      await withPostgresAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
    },
  };
}

const TEMPLATE_PREFIX = 'petstore_test_template_';
/** pg_advisory_lock's key for building a template (any fixed number of our own). */
const TEMPLATE_LOCK = 772_211_028;

/**
 * The server's migrated template for this schema, built once by whichever test process asks
 * first (the others wait on the lock) and kept for later runs; one for an older schema is
 * dropped then. Nobody connects to it: PostgreSQL copies a template only while it has no sessions.
 */
async function postgresTemplate(): Promise<string> {
  const { migrations } = await import('../../src/store/migrations/index.js');
  const name = TEMPLATE_PREFIX + schemaFingerprint(migrations);
  return withPostgresAdmin(async (admin) => {
    await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    try {
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (rowCount === 0) await buildPostgresTemplate(admin, name);
    } finally {
      await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
    }
    return name;
  });
}

async function buildPostgresTemplate(admin: pg.Client, name: string): Promise<void> {
  const building = `${name}_building`;
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(building)} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(building)}`);
  await migrateOnce(postgresUrlOf(building));
  // Renamed only when complete, and without sessions (the store's have just closed; any left are ended).
  await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, [building]);
  await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(building)} RENAME TO ${pg.escapeIdentifier(name)}`);
  const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE starts_with(datname, $1) AND datname <> $2`, [TEMPLATE_PREFIX, name]);
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
}

let postgresTemplateName: Promise<string> | undefined;

export const postgresBackend: Backend = {
  name: 'postgres',
  createDatabase: () => createPostgresDatabase(),
  async createMigratedDatabase() {
    postgresTemplateName ??= postgresTemplate();
    return createPostgresDatabase(await postgresTemplateName);
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
