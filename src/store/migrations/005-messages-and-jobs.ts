// The example API's messages, numbered per account (seq: what cursors and jobs refer to;
// the public id is random). jobs is the durable background queue: a row per unit of work,
// leased by one worker at a time, deleted in the transaction that finishes the work.
// Idempotency keys may now complete with a message.
import type { Migration } from './migration.js';

export const messagesAndJobs: Migration = {
  version: 5,
  name: 'messages and jobs',
  // The idempotency table is rebuilt once more for the composite foreign key (it holds 24
  // hours of keys).
  sqlite: `
    ALTER TABLE accounts ADD COLUMN last_message_seq INTEGER NOT NULL DEFAULT 0;

    CREATE TABLE messages (
      account_id     TEXT NOT NULL REFERENCES accounts (id),
      seq            INTEGER NOT NULL CHECK (seq >= 1),
      id             TEXT NOT NULL UNIQUE,
      message        TEXT NOT NULL,
      status         TEXT NOT NULL CHECK (status IN ('queued', 'delivered', 'failed')),
      created_at     TEXT NOT NULL,
      delivered_at   TEXT,
      failure_reason TEXT,
      PRIMARY KEY (account_id, seq)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX messages_by_account_status ON messages (account_id, status, seq);
    CREATE INDEX messages_queued ON messages (created_at) WHERE status = 'queued';

    CREATE TABLE jobs (
      id           INTEGER PRIMARY KEY AUTOINCREMENT,
      kind         TEXT NOT NULL,
      account_id   TEXT NOT NULL REFERENCES accounts (id),
      ref          INTEGER NOT NULL,
      attempts     INTEGER NOT NULL DEFAULT 0,
      run_at       INTEGER NOT NULL,
      leased_until INTEGER NOT NULL DEFAULT 0,
      last_error   TEXT,
      created_at   INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX jobs_due ON jobs (kind, run_at);

    CREATE TABLE idempotency_keys_v5 (
      account_id   TEXT NOT NULL REFERENCES accounts (id),
      key          TEXT NOT NULL,
      request_hash TEXT NOT NULL,
      pet_id       INTEGER,
      order_id     INTEGER,
      message_seq  INTEGER,
      created_at   INTEGER NOT NULL,
      locked_at    INTEGER NOT NULL,
      PRIMARY KEY (account_id, key),
      FOREIGN KEY (account_id, pet_id) REFERENCES pets (account_id, id),
      FOREIGN KEY (account_id, order_id) REFERENCES orders (account_id, id),
      FOREIGN KEY (account_id, message_seq) REFERENCES messages (account_id, seq),
      CHECK ((pet_id IS NOT NULL) + (order_id IS NOT NULL) + (message_seq IS NOT NULL) <= 1)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO idempotency_keys_v5 (account_id, key, request_hash, pet_id, order_id, message_seq, created_at, locked_at)
      SELECT account_id, key, request_hash, pet_id, order_id, NULL, created_at, locked_at FROM idempotency_keys;
    DROP TABLE idempotency_keys;
    ALTER TABLE idempotency_keys_v5 RENAME TO idempotency_keys;
    CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);
  `,
  // Workers take jobs with FOR UPDATE SKIP LOCKED.
  postgres: `
    ALTER TABLE accounts ADD COLUMN last_message_seq bigint NOT NULL DEFAULT 0;

    CREATE TABLE messages (
      account_id     text COLLATE "C" NOT NULL REFERENCES accounts (id),
      seq            bigint NOT NULL CHECK (seq >= 1),
      id             text COLLATE "C" NOT NULL UNIQUE,
      message        text NOT NULL,
      status         text NOT NULL CHECK (status IN ('queued', 'delivered', 'failed')),
      created_at     timestamptz NOT NULL,
      delivered_at   timestamptz,
      failure_reason text,
      PRIMARY KEY (account_id, seq)
    );
    CREATE INDEX messages_by_account_status ON messages (account_id, status, seq);
    CREATE INDEX messages_queued ON messages (created_at) WHERE status = 'queued';

    CREATE TABLE jobs (
      id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      kind         text NOT NULL,
      account_id   text COLLATE "C" NOT NULL REFERENCES accounts (id),
      ref          bigint NOT NULL,
      attempts     integer NOT NULL DEFAULT 0,
      run_at       bigint NOT NULL,
      leased_until bigint NOT NULL DEFAULT 0,
      last_error   text,
      created_at   bigint NOT NULL
    );
    CREATE INDEX jobs_due ON jobs (kind, run_at);

    ALTER TABLE idempotency_keys ADD COLUMN message_seq bigint;
    ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_message_fkey
      FOREIGN KEY (account_id, message_seq) REFERENCES messages (account_id, seq);
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_one_result;
    ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_one_result
      CHECK ((pet_id IS NOT NULL)::int + (order_id IS NOT NULL)::int + (message_seq IS NOT NULL)::int <= 1);
  `,
};
