// The job queue on PostgreSQL. Workers on any number of instances take due jobs with
// FOR UPDATE SKIP LOCKED (each row to one taker, nobody waits) and lease them.
import { JOB_COLUMNS, type JobRepository, type JobRow, toJob } from '../jobs.js';
import type { PostgresDatabase } from './driver.js';

export function createPostgresJobs(db: PostgresDatabase): JobRepository {
  return {
    async add(tx, kind, accountId, ref, now) {
      await tx.run('INSERT INTO jobs (kind, account_id, ref, run_at, created_at) VALUES ($1, $2, $3, $4, $4)', [kind, accountId, ref, now]);
    },

    async claim(kind, now, leaseMs, max) {
      const rows = await db.all<JobRow>(
        `UPDATE jobs SET leased_until = $1, attempts = attempts + 1
         WHERE id IN (
           SELECT id FROM jobs WHERE kind = $2 AND run_at <= $3 AND leased_until <= $3
           ORDER BY run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
         )
         RETURNING ${JOB_COLUMNS}`,
        [now + leaseMs, kind, now, max],
      );
      return rows.map(toJob);
    },

    async retry(job, error, retryAt) {
      await db.run('UPDATE jobs SET run_at = $1, leased_until = 0, last_error = $2 WHERE id = $3', [retryAt, error, job.id]);
    },

    async remove(tx, ids) {
      if (ids.length > 0) await tx.run('DELETE FROM jobs WHERE id = ANY($1::bigint[])', [ids]);
    },
  };
}
