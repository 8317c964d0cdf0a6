// Pets can be corrected and removed: a deleted pet keeps its row (orders and idempotency keys
// still reference it, and its id is never given again) with deleted_at set, and no read shows
// it. The account's inventory (pets per status) and each category's pet count are counters
// kept in the same transaction as every change, so reading them is O(1) and always exact.
import type { Migration } from './migration.js';

/** Backfills from what exists now: each counter equals a recount (also for stores filled by SQL, as the bench seeds them). */
export const RECOUNT_INVENTORY_AND_CATEGORIES = `
  UPDATE accounts SET
    pets_available = (SELECT count(*) FROM pets p WHERE p.account_id = accounts.id AND p.status = 'available'),
    pets_pending   = (SELECT count(*) FROM pets p WHERE p.account_id = accounts.id AND p.status = 'pending'),
    pets_sold      = (SELECT count(*) FROM pets p WHERE p.account_id = accounts.id AND p.status = 'sold'),
    pets_unset     = (SELECT count(*) FROM pets p WHERE p.account_id = accounts.id AND p.status IS NULL);
  INSERT INTO categories (account_id, id, pet_count)
    SELECT account_id, category_id, count(*) FROM pets GROUP BY account_id, category_id;
`;

export const inventoryAndCategories: Migration = {
  version: 10,
  name: 'inventory and categories',
  sqlite: `
    ALTER TABLE pets ADD COLUMN deleted_at TEXT;
    CREATE INDEX pets_by_account_category ON pets (account_id, category_id, id);

    ALTER TABLE accounts ADD COLUMN pets_available INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN pets_pending INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN pets_sold INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN pets_unset INTEGER NOT NULL DEFAULT 0;

    -- A category exists while a pet uses it (pet_count > 0) or it has a name.
    CREATE TABLE categories (
      account_id TEXT NOT NULL REFERENCES accounts (id),
      id         INTEGER NOT NULL CHECK (id >= 1),
      name       TEXT,
      name_key   TEXT,
      pet_count  INTEGER NOT NULL DEFAULT 0 CHECK (pet_count >= 0),
      PRIMARY KEY (account_id, id)
    ) STRICT, WITHOUT ROWID;
    CREATE UNIQUE INDEX categories_by_name ON categories (account_id, name_key) WHERE name_key IS NOT NULL;
    ${RECOUNT_INVENTORY_AND_CATEGORIES}
  `,
  postgres: `
    ALTER TABLE pets ADD COLUMN deleted_at timestamptz;
    CREATE INDEX pets_by_account_category ON pets (account_id, category_id, id);

    ALTER TABLE accounts ADD COLUMN pets_available bigint NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN pets_pending bigint NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN pets_sold bigint NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN pets_unset bigint NOT NULL DEFAULT 0;

    -- A category exists while a pet uses it (pet_count > 0) or it has a name.
    CREATE TABLE categories (
      account_id text COLLATE "C" NOT NULL REFERENCES accounts (id),
      id         bigint NOT NULL CHECK (id >= 1),
      name       text,
      name_key   text COLLATE "C",
      pet_count  bigint NOT NULL DEFAULT 0 CHECK (pet_count >= 0),
      PRIMARY KEY (account_id, id)
    );
    CREATE UNIQUE INDEX categories_by_name ON categories (account_id, name_key) WHERE name_key IS NOT NULL;
    ${RECOUNT_INVENTORY_AND_CATEGORIES}
  `,
};
