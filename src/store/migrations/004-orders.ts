// Orders move pets between statuses (placed: pending; delivered: sold; cancelled:
// available). Numbered per account like pets. An idempotency key now completes with a pet
// or an order.
import type { Migration } from './migration.js';

export const orders: Migration = {
  version: 4,
  name: 'orders',
  // The idempotency table is rebuilt to reference both (a composite foreign key cannot be
  // added in place); it holds 24 hours of keys.
  sqlite: `
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
  postgres: `
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
};
