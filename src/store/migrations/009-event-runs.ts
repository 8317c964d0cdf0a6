// A row of the log may hold a run of events (rows.ts, EventRow): a group commit's pets write
// one row for their pet.created events instead of one each. Rows made before are runs of one.
import type { Migration } from './migration.js';

export const eventRuns: Migration = {
  version: 9,
  name: 'event runs',
  // SQLite numbered it 8 before the numbering was shared.
  formerly: { sqlite: 8 },
  sqlite: `
    ALTER TABLE events ADD COLUMN span INTEGER NOT NULL DEFAULT 1 CHECK (span BETWEEN 1 AND 256);
    ALTER TABLE events ADD COLUMN more_ids TEXT;
  `,
  postgres: `
    ALTER TABLE events ADD COLUMN span integer NOT NULL DEFAULT 1 CHECK (span BETWEEN 1 AND 256);
    ALTER TABLE events ADD COLUMN more_ids text;
  `,
};
