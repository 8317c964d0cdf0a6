// The job queue on SQLite. A claim runs under the write lock, so processes sharing the file
// (--workers, the CLI) take turns, and a job leased by one is skipped by the others until its
// lease ends.
import { JOB_COLUMNS, type JobRepository, type JobRow, toJob } from '../jobs.js';
import type { SqliteDatabase } from './driver.js';

export function createSqliteJobs(db: SqliteDatabase): JobRepository {
  return {
    async add(tx, kind, accountId, ref, now) {
      await tx.run('INSERT INTO jobs (kind, account_id, ref, run_at, created_at) VALUES (?, ?, ?, ?, ?)', [kind, accountId, ref, now, now]);
    },

    async claim(kind, now, leaseMs, max) {
      // An idle worker polls often: look without the write lock first, take it only for work.
      const due = await db.get('SELECT 1 FROM jobs WHERE kind = ? AND run_at <= ? AND leased_until <= ? LIMIT 1', [kind, now, now]);
      if (due === undefined) return [];
      const rows = await db.transaction((tx) =>
        tx.all<JobRow>(
          `UPDATE jobs SET leased_until = ?, attempts = attempts + 1
           WHERE id IN (SELECT id FROM jobs WHERE kind = ? AND run_at <= ? AND leased_until <= ? ORDER BY run_at, id LIMIT ?)
           RETURNING ${JOB_COLUMNS}`,
          [now + leaseMs, kind, now, now, max],
        ),
      );
      return rows.map(toJob);
    },

    async retry(job, error, retryAt) {
      await db.run('UPDATE jobs SET run_at = ?, leased_until = 0, last_error = ? WHERE id = ?', [retryAt, error, job.id]);
    },

    async remove(tx, ids) {
      for (const id of ids) await tx.run('DELETE FROM jobs WHERE id = ?', [id]);
    },
  };
}
