// Fresh store: schema and accounts/keys through the real CLI, pets straight into the database
// (SQLite or PostgreSQL, the same catalogue on both). 100 000 POSTs with durable commits would
// take minutes; one transaction takes seconds.
import Database from 'better-sqlite3';
import pg from 'pg';
import { RECOUNT_INVENTORY_AND_CATEGORIES } from '../../src/store/migrations/010-inventory-and-categories.js';
import { runNode } from './procs.js';

// A service with inventory counters (migration 10) keeps them with every change; pets inserted
// by SQL here are counted once afterwards. Older services (a side-by-side "before") have none.
const HAS_CATEGORIES_SQLITE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'categories'";
const HAS_CATEGORIES_POSTGRES = "SELECT 1 FROM pg_tables WHERE tablename = 'categories'";

export interface Credentials {
  name: string;
  accountId: string;
  key: string;
}

export interface SeedResult {
  /** 100 000 pets: the account every read scenario uses. */
  catalog: Credentials;
  /** No seeded pets: POSTs go here so the catalog's pages stay the same all run. */
  writer: Credentials;
  others: Credentials[];
  /** An account with 10 pets (the inventory row "as fast with 10 pets as with 100 000"). */
  tiny: Credentials;
  /** The catalog's pet ids, ascending. */
  catalogIds: number[];
  catalogStatusCounts: Record<string, number>;
  seedMs: number;
}

const NAMES = ['Rex', 'Bella', 'Max', 'Luna', 'Charlie', 'Lucy', 'Cooper', 'Daisy', 'Milo', 'Sir Fluffington III', 'Kiwi', 'Oreo'];
// Mostly available, every status present, and about one in six with none (NULL).
const STATUSES: (string | null)[] = ['available', 'available', 'pending', 'sold', null, 'available'];

async function createAccount(cli: string[], env: NodeJS.ProcessEnv, name: string): Promise<Credentials> {
  const account = JSON.parse(await runNode([...cli, 'accounts', 'create', '--name', name, '--json'], env)) as { id: string };
  // PETSTORE_BENCH_KEY_SCOPES=pets:read,pets:write: restricted keys (their scope check measured too).
  const scopes = process.env.PETSTORE_BENCH_KEY_SCOPES ? ['--scopes', process.env.PETSTORE_BENCH_KEY_SCOPES] : [];
  const key = JSON.parse(await runNode([...cli, 'keys', 'create', '--account', account.id, ...scopes, '--json'], env)) as { key: string };
  return { name, accountId: account.id, key: key.key };
}

interface PetSeedRow {
  accountId: string;
  id: number;
  name: string;
  categoryId: number;
  status: string | null;
}

/** The catalogue, in insertion order: the same rows for both stores. */
function catalogueRows(catalog: Credentials, others: Credentials[], catalogPets: number, otherPets: number): PetSeedRow[] {
  // Ids are numbered per account, as the service numbers them (accounts.last_pet_id).
  const lastIds = new Map<string, number>();
  const rows: PetSeedRow[] = [];
  const add = (accountId: string, name: string, categoryId: number, status: string | null) => {
    const id = (lastIds.get(accountId) ?? 0) + 1;
    lastIds.set(accountId, id);
    rows.push({ accountId, id, name, categoryId, status });
  };
  let other = 0;
  for (let i = 0; i < catalogPets; i++) {
    add(catalog.accountId, `${NAMES[i % NAMES.length]} ${i + 1}`, 1 + (i % 25), STATUSES[i % STATUSES.length] ?? null);
    // Interleave other tenants' rows, as real traffic would.
    if (i % 50 === 49 && other < otherPets * others.length) {
      const owner = others[other % others.length]!;
      add(owner.accountId, `Other ${other}`, 1 + (other % 7), STATUSES[other % STATUSES.length] ?? null);
      other++;
    }
  }
  return rows;
}

const lastIdsOf = (rows: PetSeedRow[]) => {
  const last = new Map<string, number>();
  for (const row of rows) last.set(row.accountId, row.id);
  return last;
};

export async function seedStore(opts: {
  cli: string[];
  env: NodeJS.ProcessEnv;
  /** The SQLite file, or a postgres:// URL (a fresh, empty database). */
  database: string;
  catalogPets: number;
  otherPets: number;
}): Promise<SeedResult> {
  const { cli, env, database } = opts;
  const t0 = Date.now();
  await runNode([...cli, 'migrate', '--json'], env);
  // Sequential: each CLI call takes the SQLite write lock anyway.
  const catalog = await createAccount(cli, env, 'bench-catalog');
  const writer = await createAccount(cli, env, 'bench-writer');
  const others = [await createAccount(cli, env, 'bench-other-a'), await createAccount(cli, env, 'bench-other-b')];
  const tiny = await createAccount(cli, env, 'bench-tiny');
  const rows = catalogueRows(catalog, others, opts.catalogPets, opts.otherPets);
  for (let i = 0; i < 10; i++) rows.push({ accountId: tiny.accountId, id: i + 1, name: `Tiny ${i + 1}`, categoryId: 1 + (i % 3), status: STATUSES[i % STATUSES.length] ?? null });
  const createdAt = new Date().toISOString();
  const seeded = database.startsWith('postgres://') || database.startsWith('postgresql://')
    ? await seedPostgres(database, rows, createdAt, catalog.accountId)
    : seedSqlite(database, rows, createdAt, catalog.accountId);
  return { catalog, writer, others, tiny, ...seeded, seedMs: Date.now() - t0 };
}

type Seeded = Pick<SeedResult, 'catalogIds' | 'catalogStatusCounts'>;

async function seedPostgres(url: string, rows: PetSeedRow[], createdAt: string, catalogId: string): Promise<Seeded> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    for (let i = 0; i < rows.length; i += 10_000) {
      const chunk = rows.slice(i, i + 10_000);
      await client.query(
        `INSERT INTO pets (account_id, id, name, category_id, status, created_at)
         SELECT a, i, n, c, s, $6 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::text[]) AS t(a, i, n, c, s)`,
        [chunk.map((r) => r.accountId), chunk.map((r) => r.id), chunk.map((r) => r.name), chunk.map((r) => r.categoryId), chunk.map((r) => r.status), createdAt],
      );
    }
    for (const [accountId, last] of lastIdsOf(rows)) await client.query('UPDATE accounts SET last_pet_id = $1 WHERE id = $2', [last, accountId]);
    if ((await client.query(HAS_CATEGORIES_POSTGRES)).rowCount) await client.query(RECOUNT_INVENTORY_AND_CATEGORIES);
    await client.query('COMMIT');
    // Fresh statistics, so the planner sees the catalogue as it is (autovacuum may not have run yet).
    await client.query('VACUUM ANALYZE pets');
    await client.query('VACUUM ANALYZE accounts');
    await client.query('VACUUM ANALYZE api_keys');
    const ids = await client.query<{ id: string }>('SELECT id FROM pets WHERE account_id = $1 ORDER BY id', [catalogId]);
    const counts = await client.query<{ status: string | null; n: string }>('SELECT status, count(*) AS n FROM pets WHERE account_id = $1 GROUP BY status', [catalogId]);
    const catalogStatusCounts: Record<string, number> = {};
    for (const row of counts.rows) catalogStatusCounts[row.status ?? '(none)'] = Number(row.n);
    return { catalogIds: ids.rows.map((r) => Number(r.id)), catalogStatusCounts };
  } finally {
    await client.end();
  }
}

function seedSqlite(dbFile: string, rows: PetSeedRow[], createdAt: string, catalogId: string): Seeded {
  const db = new Database(dbFile);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    const insertRow = db.prepare('INSERT INTO pets (account_id, id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?, ?)');
    db.transaction(() => {
      for (const r of rows) insertRow.run(r.accountId, r.id, r.name, r.categoryId, r.status, createdAt);
      const setLast = db.prepare('UPDATE accounts SET last_pet_id = ? WHERE id = ?');
      for (const [accountId, last] of lastIdsOf(rows)) setLast.run(last, accountId);
      if (db.prepare(HAS_CATEGORIES_SQLITE).get()) db.exec(RECOUNT_INVENTORY_AND_CATEGORIES);
    })();
    const catalogIds = db
      .prepare<[string], { id: number }>('SELECT id FROM pets WHERE account_id = ? ORDER BY id')
      .all(catalogId)
      .map((r) => r.id);
    const catalogStatusCounts: Record<string, number> = {};
    for (const row of db
      .prepare<[string], { status: string | null; n: number }>('SELECT status, COUNT(*) AS n FROM pets WHERE account_id = ? GROUP BY status')
      .all(catalogId)) {
      catalogStatusCounts[row.status ?? '(none)'] = row.n;
    }
    // Leave the file as the service expects it: everything checkpointed into the main db file.
    db.pragma('wal_checkpoint(TRUNCATE)');
    return { catalogIds, catalogStatusCounts };
  } finally {
    db.close();
  }
}
