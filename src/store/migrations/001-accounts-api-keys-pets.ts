import type { Migration } from './migration.js';

export const accountsApiKeysPets: Migration = {
  version: 1,
  name: 'accounts, api keys, pets',
  sqlite: `
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
  // COLLATE "C" on text keys: byte order like SQLite's BINARY, whatever the database locale,
  // so ties in ORDER BY ... id sort the same on both backends.
  postgres: `
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
};
