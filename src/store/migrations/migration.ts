// The shape of one schema change. Both backends share one numbering: a version is the same
// change on SQLite and on PostgreSQL, written in each one's SQL.

/** The backends a migration is written for (Store['kind']). */
export type MigrationBackend = 'sqlite' | 'postgres';

/** One versioned schema change. Append new versions; never edit applied ones. */
export interface Migration {
  version: number;
  name: string;
  /**
   * The version a backend recorded this change under before the numbering was shared (SQLite
   * stores of earlier releases): the runner moves such rows, found by this version and the name.
   */
  formerly?: Partial<Record<MigrationBackend, number>>;
  sqlite: string;
  postgres: string;
}

/** SQL for a backend the change does not concern: the version is still recorded, so the numbering stays shared. */
export const NO_OP = '';
