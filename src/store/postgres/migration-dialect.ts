// How PostgreSQL migrates (core/migrator.ts runs it): one session holds an advisory lock for
// the whole run, so concurrent migrators (other processes too) take turns; each migration is
// its own transaction on that session.
import type pg from 'pg';
import type { MigrationDialect, MigrationSession, RecordedMigration } from '../core/migrator.js';
import { checkOut } from './driver.js';

/** Key of the session-level advisory lock held while migrating ("PETS" in ASCII). */
export const MIGRATION_LOCK_KEY = 0x50455453;

const CREATE_TABLE = 'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)';

type Queryable = Pick<pg.PoolClient, 'query'>;

async function recorded(db: Queryable): Promise<RecordedMigration[]> {
  try {
    return (await db.query<RecordedMigration>('SELECT version, name FROM schema_migrations')).rows;
  } catch (error) {
    // 42P01 undefined_table: an empty database, nothing applied yet.
    if ((error as { code?: unknown }).code === '42P01') return [];
    throw error;
  }
}

async function inTransaction(client: Queryable, work: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    await work();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

function lockedSession(client: Queryable): MigrationSession {
  return {
    recorded: () => recorded(client),
    async apply(step) {
      // The advisory lock keeps every other migrator out for the whole run: what the runner
      // read as pending under it is still unrecorded.
      await inTransaction(client, async () => {
        await client.query(step.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())', [step.version, step.name]);
      });
      return true;
    },
    renumber: (moves) =>
      inTransaction(client, async () => {
        for (const m of moves) {
          await client.query('UPDATE schema_migrations SET version = $1 WHERE version = $2 AND name = $3', [m.to, m.from, m.name]);
        }
      }),
  };
}

export function createPostgresMigrationDialect(pool: pg.Pool): MigrationDialect {
  return {
    backend: 'postgres',
    recorded: () => recorded(pool),
    async exclusive(run) {
      const ignore = () => {};
      const client = await checkOut(pool, ignore);
      let healthy = false;
      try {
        await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
        await client.query(CREATE_TABLE);
        const result = await run(lockedSession(client));
        await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
        healthy = true;
        return result;
      } finally {
        client.off('error', ignore);
        // On failure the connection is destroyed, which also releases the lock.
        client.release(!healthy);
      }
    },
  };
}
