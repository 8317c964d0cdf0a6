// The one migration runner for both backends (after Kysely's Migrator): which versions are
// pending, in what order they apply, and how rows recorded under a backend's former numbering
// are moved to the shared one. A backend supplies only a MigrationDialect: its lock, its
// schema_migrations SQL and its transactions (sqlite/ and postgres/migration-dialect.ts).
import { migrations as allMigrations, type Migration, type MigrationBackend } from '../migrations/index.js';

/** A schema_migrations row. */
export interface RecordedMigration {
  version: number;
  name: string;
}

/** One migration as a backend runs it: its version, its name and that backend's SQL. */
export interface MigrationStep {
  version: number;
  name: string;
  sql: string;
}

/** Moves the row recorded as (`from`, `name`) to version `to`. */
export interface Renumbering {
  name: string;
  from: number;
  to: number;
}

/** What the runner does while it holds the migration lock. */
export interface MigrationSession {
  recorded(): Promise<RecordedMigration[]>;
  /**
   * In one transaction: the step's SQL and its schema_migrations row. False, with nothing
   * done, when another migrator recorded the version first.
   */
  apply(step: MigrationStep): Promise<boolean>;
  /** In one transaction, in the order given: each move (a row that does not match stays). */
  renumber(moves: readonly Renumbering[]): Promise<void>;
}

/** The differences between backends that migrating depends on. */
export interface MigrationDialect {
  readonly backend: MigrationBackend;
  /** The rows of schema_migrations, none when it does not exist yet; takes no lock. */
  recorded(): Promise<RecordedMigration[]>;
  /**
   * Runs `run` under the lock that makes concurrent migrators, in other processes too, take
   * turns, with schema_migrations created if missing.
   */
  exclusive<T>(run: (session: MigrationSession) => Promise<T>): Promise<T>;
}

/** Applies the pending migrations in order, each in its own transaction; returns the versions this call applied. */
export function migrate(dialect: MigrationDialect, list: readonly Migration[] = allMigrations): Promise<number[]> {
  const moves = formerNumbering(list, dialect.backend);
  return dialect.exclusive(async (session) => {
    const recorded = await session.recorded();
    // Idempotent: a concurrent migrator that moved them first leaves nothing to match.
    if (recorded.some((row) => moved(row, moves) !== row.version)) await session.renumber(moves);
    const applied: number[] = [];
    for (const m of pending(list, recorded, moves)) {
      if (await session.apply({ version: m.version, name: m.name, sql: m[dialect.backend] })) applied.push(m.version);
    }
    return applied;
  });
}

/** The versions migrate would apply, without applying (or renumbering) anything. */
export async function pendingMigrations(dialect: MigrationDialect, list: readonly Migration[] = allMigrations): Promise<number[]> {
  const recorded = await dialect.recorded();
  return pending(list, recorded, formerNumbering(list, dialect.backend)).map((m) => m.version);
}

/**
 * The moves from the versions `backend` recorded before the numbering was shared. Highest
 * target first: versions only moved up, so each move lands on a version already vacated.
 */
export function formerNumbering(list: readonly Migration[], backend: MigrationBackend): Renumbering[] {
  return list
    .flatMap((m) => {
      const from = m.formerly?.[backend];
      return from === undefined ? [] : [{ name: m.name, from, to: m.version }];
    })
    .sort((a, b) => b.to - a.to);
}

/** The shared version of a recorded row: a former number is known by its version and name together. */
function moved(row: RecordedMigration, moves: readonly Renumbering[]): number {
  return moves.find((m) => m.from === row.version && m.name === row.name)?.to ?? row.version;
}

function pending(list: readonly Migration[], recorded: readonly RecordedMigration[], moves: readonly Renumbering[]): Migration[] {
  const done = new Set(recorded.map((row) => moved(row, moves)));
  return list.filter((m) => !done.has(m.version));
}
