// Versioned schema for the PostgreSQL backend. Append new versions; never edit applied ones.
// It mirrors the SQLite schema (same tables, columns, checks and indexes) so both backends
// behave the same through the Store interface.
import type { Migration } from '../rows.js';

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'accounts, api keys, pets',
    // COLLATE "C" on text keys: byte order like SQLite's BINARY, whatever the database locale,
    // so ties in ORDER BY ... id sort the same on both backends.
    sql: `
      CREATE TABLE accounts (
        id         text COLLATE "C" PRIMARY KEY,
        name       text NOT NULL,
        created_at timestamptz NOT NULL
      );

      CREATE TABLE api_keys (
        id          text COLLATE "C" PRIMARY KEY,
        account_id  text COLLATE "C" NOT NULL REFERENCES accounts (id),
        environment text NOT NULL CHECK (environment IN ('production', 'staging')),
        key_hash    text COLLATE "C" NOT NULL UNIQUE,
        hint        text NOT NULL,
        created_at  timestamptz NOT NULL,
        revoked_at  timestamptz
      );
      CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at, id);

      -- Identity values are never reused, so keyset cursors stay valid forever.
      CREATE TABLE pets (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account_id  text COLLATE "C" NOT NULL REFERENCES accounts (id),
        name        text NOT NULL,
        category_id bigint NOT NULL,
        status      text CHECK (status IN ('available', 'pending', 'sold')),
        created_at  timestamptz NOT NULL
      );
      -- Every pet query starts with the account: these serve list (with and without status) and get.
      CREATE INDEX pets_by_account ON pets (account_id, id);
      CREATE INDEX pets_by_account_status ON pets (account_id, status, id);

      CREATE TABLE settings (
        key   text COLLATE "C" PRIMARY KEY,
        value text NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'idempotency keys',
    sql: `
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
  },
];
