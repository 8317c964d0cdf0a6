// The audit log: one immutable row per security-relevant change (keys made, rolled, revoked; an
// expired key's use refused, at most once an hour per key; webhook endpoints made, changed,
// deleted, their secret rotated), written in the transaction of the change. Numbered per account
// (accounts.last_audit_seq) for keyset pages and `after`; pruned after a year by created_at.
// api_keys.expired_use_audited_at is when a refusal of the key was last written.
import type { Migration } from './migration.js';

export const auditLog: Migration = {
  version: 12,
  name: 'audit log',
  sqlite: `
    ALTER TABLE accounts ADD COLUMN last_audit_seq INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE api_keys ADD COLUMN expired_use_audited_at TEXT;
    CREATE TABLE audit_log (
      account_id     TEXT NOT NULL REFERENCES accounts (id),
      seq            INTEGER NOT NULL CHECK (seq >= 1),
      id             TEXT NOT NULL UNIQUE,
      action         TEXT NOT NULL,
      actor_type     TEXT NOT NULL CHECK (actor_type IN ('api_key', 'cli')),
      actor_key_id   TEXT,
      target_type    TEXT NOT NULL,
      target_id      TEXT NOT NULL,
      new_key_id     TEXT,
      request_id     TEXT,
      client_address TEXT,
      created_at     TEXT NOT NULL,
      PRIMARY KEY (account_id, seq)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX audit_log_by_created_at ON audit_log (created_at);
  `,
  postgres: `
    ALTER TABLE accounts ADD COLUMN last_audit_seq bigint NOT NULL DEFAULT 0;
    ALTER TABLE api_keys ADD COLUMN expired_use_audited_at timestamptz;
    CREATE TABLE audit_log (
      account_id     text COLLATE "C" NOT NULL REFERENCES accounts (id),
      seq            bigint NOT NULL CHECK (seq >= 1),
      id             text COLLATE "C" NOT NULL UNIQUE,
      action         text NOT NULL,
      actor_type     text NOT NULL CHECK (actor_type IN ('api_key', 'cli')),
      actor_key_id   text,
      target_type    text NOT NULL,
      target_id      text NOT NULL,
      new_key_id     text,
      request_id     text,
      client_address text,
      created_at     timestamptz NOT NULL,
      PRIMARY KEY (account_id, seq)
    );
    CREATE INDEX audit_log_by_created_at ON audit_log (created_at);
  `,
};
