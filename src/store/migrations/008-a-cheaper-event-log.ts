// A change now writes only its event, into its key alone; the worker fans the log out to
// endpoints: fanned_seq is the last event seq an endpoint has deliveries for (or has passed
// over), and existing endpoints have deliveries for every event written so far. Event ids
// now carry their sequence (rows.ts, eventId): the index on ids is kept only for those made
// before, and pruning walks each account's key instead of an index on created_at.
import type { Migration } from './migration.js';

export const aCheaperEventLog: Migration = {
  version: 8,
  name: 'a cheaper event log',
  // SQLite numbered it 7 before the numbering was shared (it had no version 7 of its own).
  formerly: { sqlite: 7 },
  // SQLite drops a UNIQUE constraint only with its table: rebuilt.
  sqlite: `
    ALTER TABLE webhook_endpoints ADD COLUMN fanned_seq INTEGER NOT NULL DEFAULT 0;
    UPDATE webhook_endpoints SET fanned_seq = (SELECT last_event_seq FROM accounts WHERE accounts.id = webhook_endpoints.account_id);

    CREATE TABLE events_v7 (
      account_id TEXT NOT NULL REFERENCES accounts (id),
      seq        INTEGER NOT NULL CHECK (seq >= 1),
      id         TEXT NOT NULL,
      type       TEXT NOT NULL,
      created_at TEXT NOT NULL,
      data       TEXT NOT NULL,
      PRIMARY KEY (account_id, seq)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO events_v7 (account_id, seq, id, type, created_at, data) SELECT account_id, seq, id, type, created_at, data FROM events;
    DROP TABLE events;
    ALTER TABLE events_v7 RENAME TO events;
    CREATE INDEX events_by_legacy_id ON events (id) WHERE substr(id, 1, 6) <> 'evt_00';
  `,
  // No foreign key either (below).
  postgres: `
    ALTER TABLE webhook_endpoints ADD COLUMN fanned_seq bigint NOT NULL DEFAULT 0;
    UPDATE webhook_endpoints w SET fanned_seq = a.last_event_seq FROM accounts a WHERE a.id = w.account_id;
    CREATE INDEX events_by_legacy_id ON events (id) WHERE substr(id, 1, 6) <> 'evt_00';
    ALTER TABLE events DROP CONSTRAINT events_id_key;
    DROP INDEX events_by_created;
    -- Its trigger cost more than the insert itself inside the batch that holds the account's
    -- lock; every writer of events updates the account's counter row in the same statement,
    -- which proves the account.
    ALTER TABLE events DROP CONSTRAINT events_account_id_fkey;
  `,
};
