// Fresh store: schema and accounts/keys through the real CLI, pets straight into SQLite.
// 100 000 POSTs with synchronous=FULL would take minutes; one transaction takes about a second.
import Database from 'better-sqlite3';
import { runNode } from './procs.js';

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
  const key = JSON.parse(await runNode([...cli, 'keys', 'create', '--account', account.id, '--json'], env)) as { key: string };
  return { name, accountId: account.id, key: key.key };
}

export async function seedStore(opts: {
  cli: string[];
  env: NodeJS.ProcessEnv;
  dbFile: string;
  catalogPets: number;
  otherPets: number;
}): Promise<SeedResult> {
  const { cli, env, dbFile } = opts;
  const t0 = Date.now();
  await runNode([...cli, 'migrate', '--json'], env);
  // Sequential: each CLI call takes the SQLite write lock anyway.
  const catalog = await createAccount(cli, env, 'bench-catalog');
  const writer = await createAccount(cli, env, 'bench-writer');
  const others = [await createAccount(cli, env, 'bench-other-a'), await createAccount(cli, env, 'bench-other-b')];

  const db = new Database(dbFile);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    // Ids are numbered per account, as the service numbers them (accounts.last_pet_id).
    const insertRow = db.prepare('INSERT INTO pets (account_id, id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?, ?)');
    const lastIds = new Map<string, number>();
    const insert = (accountId: string, name: string, categoryId: number, status: string | null, createdAt: string) => {
      const id = (lastIds.get(accountId) ?? 0) + 1;
      lastIds.set(accountId, id);
      insertRow.run(accountId, id, name, categoryId, status, createdAt);
    };
    const createdAt = new Date().toISOString();
    db.transaction(() => {
      let other = 0;
      for (let i = 0; i < opts.catalogPets; i++) {
        insert(catalog.accountId, `${NAMES[i % NAMES.length]} ${i + 1}`, 1 + (i % 25), STATUSES[i % STATUSES.length] ?? null, createdAt);
        // Interleave other tenants' rows, as real traffic would.
        if (i % 50 === 49 && other < opts.otherPets * others.length) {
          const owner = others[other % others.length]!;
          insert(owner.accountId, `Other ${other}`, 1 + (other % 7), STATUSES[other % STATUSES.length] ?? null, createdAt);
          other++;
        }
      }
      const setLast = db.prepare('UPDATE accounts SET last_pet_id = ? WHERE id = ?');
      for (const [accountId, last] of lastIds) setLast.run(last, accountId);
    })();
    const catalogIds = db
      .prepare<[string], { id: number }>('SELECT id FROM pets WHERE account_id = ? ORDER BY id')
      .all(catalog.accountId)
      .map((r) => r.id);
    const catalogStatusCounts: Record<string, number> = {};
    for (const row of db
      .prepare<[string], { status: string | null; n: number }>('SELECT status, COUNT(*) AS n FROM pets WHERE account_id = ? GROUP BY status')
      .all(catalog.accountId)) {
      catalogStatusCounts[row.status ?? '(none)'] = row.n;
    }
    // Leave the file as the service expects it: everything checkpointed into the main db file.
    db.pragma('wal_checkpoint(TRUNCATE)');
    return { catalog, writer, others, catalogIds, catalogStatusCounts, seedMs: Date.now() - t0 };
  } finally {
    db.close();
  }
}
