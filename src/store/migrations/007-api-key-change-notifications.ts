// Every instance remembers verified keys in memory and LISTENs on this channel: a
// revocation (or any change) by anyone (a service, the CLI, an operator's SQL) is heard
// by all of them at its commit. The payload is the key id (not secret); '' means "forget
// every key" (TRUNCATE).
import { type Migration, NO_OP } from './migration.js';

export const apiKeyChangeNotifications: Migration = {
  version: 7,
  name: 'api key change notifications',
  // SQLite has no LISTEN/NOTIFY: its processes share one file and see another's commits
  // through the file itself (sqlite/change-check.ts).
  sqlite: NO_OP,
  postgres: `
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
};
