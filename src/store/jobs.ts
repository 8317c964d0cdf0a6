// The durable job queue (the jobs table): units of background work, leased to one worker at a
// time. Message deliveries use it through this repository; webhook deliveries keep their own
// statements on the same table (their claims join the deliveries they are about).
import type { Sql } from './core/sql.js';

export type JobKind = 'message.deliver' | 'webhook.deliver';

export interface Job {
  id: number;
  kind: JobKind;
  accountId: string;
  /** What the job is about, within the account (a message's seq). */
  ref: number;
  /** Attempts so far, this one included. */
  attempts: number;
}

export interface JobRow {
  id: number;
  kind: JobKind;
  account_id: string;
  ref: number;
  attempts: number;
}

export const JOB_COLUMNS = 'id, kind, account_id, ref, attempts';

export const toJob = (row: JobRow): Job => ({ id: row.id, kind: row.kind, accountId: row.account_id, ref: row.ref, attempts: row.attempts });

/** The job queue (src/store/<backend>/jobs.ts). */
export interface JobRepository {
  /** A job of `kind` about the account's `ref`, due at `now` (epoch ms). */
  add(tx: Sql, kind: JobKind, accountId: string, ref: number, now: number): Promise<void>;
  /**
   * Leases up to `max` due jobs of `kind` until `now + leaseMs` and counts an attempt on each,
   * oldest due first. Jobs leased by someone else are skipped (PostgreSQL: SKIP LOCKED;
   * SQLite: the write lock).
   */
  claim(kind: JobKind, now: number, leaseMs: number, max: number): Promise<Job[]>;
  /** Gives the job back, due again at `retryAt` (epoch ms), with the reason kept for the record. */
  retry(job: Job, error: string, retryAt: number): Promise<void>;
  /** The jobs are done. */
  remove(tx: Sql, ids: readonly number[]): Promise<void>;
}
