// The account's event log (the transactional outbox: each change writes its event in its own
// transaction), webhook endpoints, and one delivery per (endpoint, event), attempted through
// the same jobs table as messages (kind webhook.deliver, ref the event's seq, grp the
// endpoint: a process skips endpoints at their concurrency limit when it claims). Every
// index costs each outbox write: deliveries have only their key and the status listing's
// (pruning deletes them by created_at, which is their event's; the backlog is read from jobs).
import type { Migration } from './migration.js';

export const eventsAndWebhooks: Migration = {
  version: 6,
  name: 'events and webhooks',
  sqlite: `
    ALTER TABLE accounts ADD COLUMN last_event_seq INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN last_endpoint_seq INTEGER NOT NULL DEFAULT 0;

    CREATE TABLE events (
      account_id TEXT NOT NULL REFERENCES accounts (id),
      seq        INTEGER NOT NULL CHECK (seq >= 1),
      id         TEXT NOT NULL UNIQUE,
      type       TEXT NOT NULL,
      created_at TEXT NOT NULL,
      data       TEXT NOT NULL,
      PRIMARY KEY (account_id, seq)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX events_by_created ON events (created_at);

    -- event_mask: bit i for EVENT_TYPES[i]; -1 for every kind, including kinds added later.
    CREATE TABLE webhook_endpoints (
      account_id                 TEXT NOT NULL REFERENCES accounts (id),
      seq                        INTEGER NOT NULL CHECK (seq >= 1),
      id                         TEXT NOT NULL UNIQUE,
      url                        TEXT NOT NULL,
      event_mask                 INTEGER NOT NULL,
      description                TEXT,
      disabled                   INTEGER NOT NULL DEFAULT 0,
      disabled_reason            TEXT,
      secret                     TEXT NOT NULL,
      previous_secret            TEXT,
      previous_secret_expires_at INTEGER,
      created_at                 TEXT NOT NULL,
      PRIMARY KEY (account_id, seq)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE webhook_deliveries (
      account_id           TEXT NOT NULL,
      endpoint_id          TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      event_seq            INTEGER NOT NULL,
      id                   TEXT NOT NULL UNIQUE,
      status               TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempts             INTEGER NOT NULL DEFAULT 0,
      single_attempt       INTEGER NOT NULL DEFAULT 0,
      last_attempt_at      TEXT,
      last_response_status INTEGER,
      last_error           TEXT,
      next_attempt_at      INTEGER,
      created_at           TEXT NOT NULL,
      PRIMARY KEY (endpoint_id, event_seq)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX webhook_deliveries_by_status ON webhook_deliveries (endpoint_id, status, event_seq);

    ALTER TABLE jobs ADD COLUMN grp TEXT;
  `,
  postgres: `
    ALTER TABLE accounts ADD COLUMN last_event_seq bigint NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN last_endpoint_seq bigint NOT NULL DEFAULT 0;

    CREATE TABLE events (
      account_id text COLLATE "C" NOT NULL REFERENCES accounts (id),
      seq        bigint NOT NULL CHECK (seq >= 1),
      id         text COLLATE "C" NOT NULL UNIQUE,
      type       text NOT NULL,
      created_at timestamptz NOT NULL,
      data       text NOT NULL,
      PRIMARY KEY (account_id, seq)
    );
    CREATE INDEX events_by_created ON events (created_at);

    -- event_mask: bit i for EVENT_TYPES[i]; -1 for every kind, including kinds added later.
    CREATE TABLE webhook_endpoints (
      account_id                 text COLLATE "C" NOT NULL REFERENCES accounts (id),
      seq                        bigint NOT NULL CHECK (seq >= 1),
      id                         text COLLATE "C" NOT NULL UNIQUE,
      url                        text NOT NULL,
      event_mask                 integer NOT NULL,
      description                text,
      disabled                   boolean NOT NULL DEFAULT false,
      disabled_reason            text,
      secret                     text NOT NULL,
      previous_secret            text,
      previous_secret_expires_at bigint,
      created_at                 timestamptz NOT NULL,
      PRIMARY KEY (account_id, seq)
    );

    CREATE TABLE webhook_deliveries (
      account_id           text COLLATE "C" NOT NULL,
      endpoint_id          text COLLATE "C" NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      event_seq            bigint NOT NULL,
      id                   text COLLATE "C" NOT NULL UNIQUE,
      status               text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempts             integer NOT NULL DEFAULT 0,
      single_attempt       boolean NOT NULL DEFAULT false,
      last_attempt_at      timestamptz,
      last_response_status integer,
      last_error           text,
      next_attempt_at      bigint,
      created_at           timestamptz NOT NULL,
      PRIMARY KEY (endpoint_id, event_seq)
    );
    CREATE INDEX webhook_deliveries_by_status ON webhook_deliveries (endpoint_id, status, event_seq);

    ALTER TABLE jobs ADD COLUMN grp text COLLATE "C";
  `,
};
