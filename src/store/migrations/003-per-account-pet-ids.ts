// Pet ids were one global sequence, which told every account how many pets the others
// created. Now each account numbers its own (1, 2, 3, …) from accounts.last_pet_id, which
// only grows. Existing pets keep their ids; each account continues after its highest.
import type { Migration } from './migration.js';

export const perAccountPetIds: Migration = {
  version: 3,
  name: 'per-account pet ids',
  // The table is rebuilt because its key changes: WITHOUT ROWID, clustered by (account, id),
  // so a page is one contiguous range. The new tables get temporary names first so that the
  // foreign key from idempotency_keys already points at the new pets table when the old ones
  // are dropped (RENAME rewrites such references).
  sqlite: `
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
  // The store takes a range of ids from the counter in the statement that inserts the pets.
  // The trigger serves writers that send no id (the previous release, during a rolling
  // upgrade): it numbers their pets from the same counter. Writers that send the id skip
  // it (the WHEN clause is checked without calling the function).
  postgres: `
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
};
