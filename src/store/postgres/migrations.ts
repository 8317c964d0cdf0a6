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
  {
    version: 3,
    name: 'per-account pet ids',
    // Pet ids were one global sequence, which told every account how many pets the others
    // created. Now each account numbers its own (1, 2, 3, …) from accounts.last_pet_id, which
    // only grows; the store takes a range from it in the statement that inserts the pets.
    // Existing pets keep their ids; each account continues after its highest.
    // The trigger serves writers that send no id (the previous release, during a rolling
    // upgrade): it numbers their pets from the same counter. Writers that send the id skip
    // it (the WHEN clause is checked without calling the function).
    sql: `
      ALTER TABLE accounts ADD COLUMN last_pet_id bigint NOT NULL DEFAULT 0;
      UPDATE accounts SET last_pet_id = m.max_id
        FROM (SELECT account_id, max(id) AS max_id FROM pets GROUP BY account_id) m
        WHERE m.account_id = accounts.id;

      ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pet_id_fkey;
      ALTER TABLE pets ALTER COLUMN id DROP IDENTITY;
      ALTER TABLE pets DROP CONSTRAINT pets_pkey;
      DROP INDEX pets_by_account;
      ALTER TABLE pets ADD CONSTRAINT pets_pkey PRIMARY KEY (account_id, id);
      ALTER TABLE pets ADD CONSTRAINT pets_id_positive CHECK (id >= 1);
      ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_pet_fkey
        FOREIGN KEY (account_id, pet_id) REFERENCES pets (account_id, id);

      CREATE FUNCTION pets_number_in_account() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE accounts SET last_pet_id = last_pet_id + 1 WHERE id = NEW.account_id RETURNING last_pet_id INTO NEW.id;
        RETURN NEW;
      END $$;
      CREATE TRIGGER pets_number_in_account BEFORE INSERT ON pets
        FOR EACH ROW WHEN (NEW.id IS NULL) EXECUTE FUNCTION pets_number_in_account();
    `,
  },
  {
    version: 4,
    name: 'orders',
    // Orders move pets between statuses (placed: pending; delivered: sold; cancelled:
    // available). Numbered per account like pets. An idempotency key now completes with a pet
    // or an order.
    sql: `
      ALTER TABLE accounts ADD COLUMN last_order_id bigint NOT NULL DEFAULT 0;

      CREATE TABLE orders (
        account_id text COLLATE "C" NOT NULL REFERENCES accounts (id),
        id         bigint NOT NULL CHECK (id >= 1),
        pet_id     bigint NOT NULL,
        status     text NOT NULL CHECK (status IN ('placed', 'delivered', 'cancelled')),
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (account_id, id),
        FOREIGN KEY (account_id, pet_id) REFERENCES pets (account_id, id)
      );
      CREATE INDEX orders_by_account_status ON orders (account_id, status, id);
      -- A pet has at most one open order (the pending status already says so; this makes it a rule).
      CREATE UNIQUE INDEX orders_one_placed_per_pet ON orders (account_id, pet_id) WHERE status = 'placed';

      ALTER TABLE idempotency_keys ADD COLUMN order_id bigint;
      ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_order_fkey
        FOREIGN KEY (account_id, order_id) REFERENCES orders (account_id, id);
      ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_one_result CHECK (pet_id IS NULL OR order_id IS NULL);
    `,
  },
  {
    version: 5,
    name: 'messages and jobs',
    // The example API's messages, numbered per account (seq: what cursors and jobs refer to;
    // the public id is random). jobs is the durable background queue: a row per unit of work,
    // taken with FOR UPDATE SKIP LOCKED and leased, deleted in the transaction that finishes it.
    sql: `
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
  },
  {
    version: 7,
    name: 'api key change notifications',
    // Every instance remembers verified keys in memory and LISTENs on this channel: a
    // revocation (or any change) by anyone (a service, the CLI, an operator's SQL) is heard
    // by all of them at its commit. The payload is the key id (not secret); '' means "forget
    // every key" (TRUNCATE).
    sql: `
      CREATE FUNCTION api_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('petstore_api_keys', CASE WHEN TG_OP = 'TRUNCATE' THEN '' ELSE OLD.id END);
        RETURN NULL;
      END $$;
      CREATE TRIGGER api_keys_notify AFTER UPDATE OR DELETE ON api_keys
        FOR EACH ROW EXECUTE FUNCTION api_keys_notify();
      CREATE TRIGGER api_keys_notify_truncate AFTER TRUNCATE ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION api_keys_notify();
    `,
  },
  {
    version: 8,
    name: 'a cheaper event log',
    // A change now writes only its event, into its key alone; the worker fans the log out to
    // endpoints: fanned_seq is the last event seq an endpoint has deliveries for (or has passed
    // over), and existing endpoints have deliveries for every event written so far. Event ids
    // now carry their sequence (rows.ts, eventId): the index on ids is kept only for those made
    // before, and pruning walks each account's key instead of an index on created_at. No foreign
    // key either (below).
    sql: `
      ALTER TABLE webhook_endpoints ADD COLUMN fanned_seq bigint NOT NULL DEFAULT 0;
      UPDATE webhook_endpoints w SET fanned_seq = a.last_event_seq FROM accounts a WHERE a.id = w.account_id;
      CREATE INDEX events_by_legacy_id ON events (id) WHERE substr(id, 1, 6) <> 'evt_00';
      ALTER TABLE events DROP CONSTRAINT events_id_key;
      DROP INDEX events_by_created;
      -- Its trigger cost ~5 µs per event inside the batch that holds the account's lock (EXPLAIN
      -- ANALYZE of the group commit's statement: more than the insert itself); every writer of
      -- events updates the account's counter row in the same statement, which proves the account.
      ALTER TABLE events DROP CONSTRAINT events_account_id_fkey;
    `,
  },
  {
    version: 9,
    name: 'event runs',
    // A row of the log may hold a run of events (rows.ts, EventRow): a group commit's pets write
    // one row for their pet.created events instead of one each (EXPLAIN ANALYZE, 25 pets: the
    // events' insert 0.16 → 0.08 ms, WAL 7.9 → 2.1 KB). Rows made before are runs of one.
    sql: `
      ALTER TABLE events ADD COLUMN span integer NOT NULL DEFAULT 1 CHECK (span BETWEEN 1 AND 256);
      ALTER TABLE events ADD COLUMN more_ids text;
    `,
  },
];
