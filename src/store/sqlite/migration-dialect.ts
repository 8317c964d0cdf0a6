// How SQLite migrates (core/migrator.ts runs it). Its cross-process lock is the database's
// write lock, which lives only as long as a transaction: each step is its own BEGIN IMMEDIATE
// transaction and reads, inside it, whether another migrator got there first. better-sqlite3
// is synchronous, so nothing else on this connection runs inside a step.
import type Database from 'better-sqlite3';
import type { MigrationDialect, MigrationSession, MigrationStep, RecordedMigration, Renumbering } from '../core/migrator.js';

const CREATE_TABLE = 'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)';

export function createSqliteMigrationDialect(db: Database.Database): MigrationDialect {
  const recorded = async (): Promise<RecordedMigration[]> => {
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
    return exists ? db.prepare<[], RecordedMigration>('SELECT version, name FROM schema_migrations').all() : [];
  };
  const applyStep = db.transaction((step: MigrationStep): boolean => {
    if (db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(step.version)) return false;
    db.exec(step.sql);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(step.version, step.name, new Date().toISOString());
    return true;
  });
  const renumberRows = db.transaction((moves: readonly Renumbering[]) => {
    const update = db.prepare('UPDATE schema_migrations SET version = ? WHERE version = ? AND name = ?');
    for (const m of moves) update.run(m.to, m.from, m.name);
  });
  const session: MigrationSession = {
    recorded,
    apply: async (step) => applyStep.immediate(step),
    renumber: async (moves) => renumberRows.immediate(moves),
  };
  return {
    backend: 'sqlite',
    recorded,
    async exclusive(run) {
      db.exec(CREATE_TABLE);
      return run(session);
    },
  };
}
