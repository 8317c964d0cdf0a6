import type { Migration } from './migration.js';

export const idempotencyKeys: Migration = {
  version: 2,
  name: 'idempotency keys',
  sqlite: `
    -- One row per (account, Idempotency-Key). pet_id is NULL while the first request runs.
    CREATE TABLE idempotency_keys (
      account_id   TEXT NOT NULL REFERENCES accounts (id),
      key          TEXT NOT NULL,
      request_hash TEXT NOT NULL,
      pet_id       INTEGER REFERENCES pets (id),
      created_at   INTEGER NOT NULL,
      locked_at    INTEGER NOT NULL,
      PRIMARY KEY (account_id, key)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);
  `,
  postgres: `
    -- One row per (account, Idempotency-Key). pet_id is NULL while the first request runs.
    CREATE TABLE idempotency_keys (
      account_id   text COLLATE "C" NOT NULL REFERENCES accounts (id),
      key          text COLLATE "C" NOT NULL,
      request_hash text NOT NULL,
      pet_id       bigint REFERENCES pets (id),
      created_at   bigint NOT NULL,
      locked_at    bigint NOT NULL,
      PRIMARY KEY (account_id, key)
    );
    CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);
  `,
};
