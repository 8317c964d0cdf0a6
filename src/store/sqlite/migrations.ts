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
  {
    version: 3,
    name: 'per-account pet ids',
    // Pet ids were one global sequence, which told every account how many pets the others
    // created. Now each account numbers its own (1, 2, 3, …) from accounts.last_pet_id, which
    // only grows. Existing pets keep their ids; each account continues after its highest.
    // The table is rebuilt because its key changes: WITHOUT ROWID, clustered by (account, id),
    // so a page is one contiguous range. The new tables get temporary names first so that the
    // foreign key from idempotency_keys already points at the new pets table when the old ones
    // are dropped (RENAME rewrites such references).
    sql: `
      ALTER TABLE accounts ADD COLUMN last_pet_id INTEGER NOT NULL DEFAULT 0;
      UPDATE accounts SET last_pet_id = COALESCE((SELECT MAX(id) FROM pets WHERE pets.account_id = accounts.id), 0);

      CREATE TABLE pets_v3 (
        account_id  TEXT NOT NULL REFERENCES accounts (id),
        id          INTEGER NOT NULL CHECK (id >= 1),
        name        TEXT NOT NULL,
        category_id INTEGER NOT NULL,
        status      TEXT CHECK (status IN ('available', 'pending', 'sold')),
        created_at  TEXT NOT NULL,
        PRIMARY KEY (account_id, id)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO pets_v3 (account_id, id, name, category_id, status, created_at)
        SELECT account_id, id, name, category_id, status, created_at FROM pets ORDER BY account_id, id;

      CREATE TABLE idempotency_keys_v3 (
        account_id   TEXT NOT NULL REFERENCES accounts (id),
        key          TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        pet_id       INTEGER,
        created_at   INTEGER NOT NULL,
        locked_at    INTEGER NOT NULL,
        PRIMARY KEY (account_id, key),
        FOREIGN KEY (account_id, pet_id) REFERENCES pets_v3 (account_id, id)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO idempotency_keys_v3 SELECT account_id, key, request_hash, pet_id, created_at, locked_at FROM idempotency_keys;

      DROP TABLE idempotency_keys;
      DROP TABLE pets;
      ALTER TABLE pets_v3 RENAME TO pets;
      ALTER TABLE idempotency_keys_v3 RENAME TO idempotency_keys;
      -- The primary key serves get and the unfiltered list; this serves the status filter.
      CREATE INDEX pets_by_account_status ON pets (account_id, status, id);
      CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);
    `,
  },
  {
    version: 4,
    name: 'orders',
    // Orders move pets between statuses (placed: pending; delivered: sold; cancelled:
    // available). Numbered per account like pets. An idempotency key now completes with a pet
    // or an order: the table is rebuilt to reference both (a composite foreign key cannot be
    // added in place); it holds 24 hours of keys.
    sql: `
      ALTER TABLE accounts ADD COLUMN last_order_id INTEGER NOT NULL DEFAULT 0;

      CREATE TABLE orders (
        account_id TEXT NOT NULL REFERENCES accounts (id),
        id         INTEGER NOT NULL CHECK (id >= 1),
        pet_id     INTEGER NOT NULL,
        status     TEXT NOT NULL CHECK (status IN ('placed', 'delivered', 'cancelled')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (account_id, id),
        FOREIGN KEY (account_id, pet_id) REFERENCES pets (account_id, id)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX orders_by_account_status ON orders (account_id, status, id);
      -- A pet has at most one open order (the pending status already says so; this makes it a rule).
      CREATE UNIQUE INDEX orders_one_placed_per_pet ON orders (account_id, pet_id) WHERE status = 'placed';

      CREATE TABLE idempotency_keys_v4 (
        account_id   TEXT NOT NULL REFERENCES accounts (id),
        key          TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        pet_id       INTEGER,
        order_id     INTEGER,
        created_at   INTEGER NOT NULL,
        locked_at    INTEGER NOT NULL,
        PRIMARY KEY (account_id, key),
        FOREIGN KEY (account_id, pet_id) REFERENCES pets (account_id, id),
        FOREIGN KEY (account_id, order_id) REFERENCES orders (account_id, id),
        CHECK (pet_id IS NULL OR order_id IS NULL)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO idempotency_keys_v4 (account_id, key, request_hash, pet_id, order_id, created_at, locked_at)
        SELECT account_id, key, request_hash, pet_id, NULL, created_at, locked_at FROM idempotency_keys;
      DROP TABLE idempotency_keys;
      ALTER TABLE idempotency_keys_v4 RENAME TO idempotency_keys;
      CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);
    `,
  },
  {
    version: 5,
    name: 'messages and jobs',
    // The example API's messages, numbered per account (seq: what cursors and jobs refer to;
    // the public id is random). jobs is the durable background queue: a row per unit of work,
    // leased by one worker at a time, deleted in the transaction that finishes the work.
    // Idempotency keys may now complete with a message: the table is rebuilt once more for the
    // composite foreign key (it holds 24 hours of keys).
    sql: `
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
  },
  {
    version: 6,
    name: 'events and webhooks',
    // The account's event log (the transactional outbox: each change writes its event in its own
    // transaction), webhook endpoints, and one delivery per (endpoint, event), attempted through
    // the same jobs table as messages (kind webhook.deliver, ref the event's seq, grp the
    // endpoint: a process skips endpoints at their concurrency limit when it claims). Every
    // index costs each outbox write: deliveries have only their key and the status listing's
    // (pruning deletes them by created_at, which is their event's; the backlog is read from jobs).
    sql: `
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
  },
  {
    version: 7,
    name: 'a cheaper event log',
    // A change now writes only its event, into its key alone; the worker fans the log out to
    // endpoints: fanned_seq is the last event seq an endpoint has deliveries for (or has passed
    // over), and existing endpoints have deliveries for every event written so far. Event ids
    // now carry their sequence (rows.ts, eventId): the index on ids is kept only for those made
    // before (SQLite drops a UNIQUE constraint only with its table: rebuilt), and pruning walks
    // each account's key instead of an index on created_at.
    sql: `
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
  },
  {
    version: 8,
    name: 'event runs',
    // A row of the log may hold a run of events (rows.ts, EventRow): a group commit's pets write
    // one row for their pet.created events instead of one each. Rows made before are runs of one.
    sql: `
      ALTER TABLE events ADD COLUMN span INTEGER NOT NULL DEFAULT 1 CHECK (span BETWEEN 1 AND 256);
      ALTER TABLE events ADD COLUMN more_ids TEXT;
    `,
  },
];
