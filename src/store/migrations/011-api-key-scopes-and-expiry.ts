// Keys as a product: a key may be restricted to scopes (NULL: full access), expire, carry a
// name, and say when it was last used (written at most once a minute per key and process).
// Keys are numbered per account (seq, from accounts.last_key_seq) for keyset pages, existing
// keys in creation order. On PostgreSQL the change notification (migration 7) now fires only
// for the columns authentication reads: a last-use write does not make every instance forget
// the key.
import type { Migration } from './migration.js';

/** Numbers existing keys 1, 2, 3, … per account in creation order, and sets each account's counter. */
const NUMBER_EXISTING_KEYS = `
  UPDATE api_keys SET seq = (
    SELECT count(*) FROM api_keys k
    WHERE k.account_id = api_keys.account_id AND (k.created_at < api_keys.created_at OR (k.created_at = api_keys.created_at AND k.id <= api_keys.id))
  );
  UPDATE accounts SET last_key_seq = (SELECT count(*) FROM api_keys k WHERE k.account_id = accounts.id);
`;

export const apiKeyScopesAndExpiry: Migration = {
  version: 11,
  name: 'api key scopes and expiry',
  sqlite: `
    ALTER TABLE api_keys ADD COLUMN name TEXT;
    ALTER TABLE api_keys ADD COLUMN scopes TEXT;
    ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
    ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
    ALTER TABLE api_keys ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN last_key_seq INTEGER NOT NULL DEFAULT 0;
    ${NUMBER_EXISTING_KEYS}
    CREATE INDEX api_keys_by_account_seq ON api_keys (account_id, seq);
  `,
  postgres: `
    ALTER TABLE api_keys ADD COLUMN name text;
    ALTER TABLE api_keys ADD COLUMN scopes text;
    ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
    ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
    ALTER TABLE api_keys ADD COLUMN seq bigint NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN last_key_seq bigint NOT NULL DEFAULT 0;
    ${NUMBER_EXISTING_KEYS}
    CREATE INDEX api_keys_by_account_seq ON api_keys (account_id, seq);
    DROP TRIGGER api_keys_notify ON api_keys;
    CREATE TRIGGER api_keys_notify AFTER UPDATE OF revoked_at, expires_at, scopes, key_hash, account_id, environment OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION api_keys_notify();
  `,
};
