// Versioned schema for the SQLite backend. Append new versions; never edit applied ones.
import type { Migration } from '../rows.js';

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'accounts, api keys, pets',
    sql: `
      CREATE TABLE accounts (
        id         TEXT PRIMARY KEY,
        name       TEXT NOT NULL,
        created_at TEXT NOT NULL
      ) STRICT;

      CREATE TABLE api_keys (
        id          TEXT PRIMARY KEY,
        account_id  TEXT NOT NULL REFERENCES accounts (id),
        environment TEXT NOT NULL CHECK (environment IN ('production', 'staging')),
        key_hash    TEXT NOT NULL UNIQUE,
        hint        TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        revoked_at  TEXT
      ) STRICT;
      CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);

      -- AUTOINCREMENT: ids are never reused, so keyset cursors stay valid forever.
      CREATE TABLE pets (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        account_id  TEXT NOT NULL REFERENCES accounts (id),
        name        TEXT NOT NULL,
        category_id INTEGER NOT NULL,
        status      TEXT CHECK (status IN ('available', 'pending', 'sold')),
        created_at  TEXT NOT NULL
      ) STRICT;
      -- Every pet query starts with the account: these serve list (with and without status) and get.
      CREATE INDEX pets_by_account ON pets (account_id, id);
      CREATE INDEX pets_by_account_status ON pets (account_id, status, id);

      CREATE TABLE settings (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 2,
    name: 'idempotency keys',
    sql: `
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
  },
];
