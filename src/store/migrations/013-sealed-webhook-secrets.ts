// Webhook signing secrets sealed at rest (src/webhooks/secret-box.ts): the id of the key each
// secret is sealed under; NULL: stored plain (every row before this migration, and rows written
// on PostgreSQL without PETSTORE_SECRET_KEY until `petstore secrets seal`). The previous secret
// has its own, since a secret rotation moves the current one there as it is.
import type { Migration } from './migration.js';

export const sealedWebhookSecrets: Migration = {
  version: 13,
  name: 'sealed webhook secrets',
  sqlite: `
    ALTER TABLE webhook_endpoints ADD COLUMN secret_key_id TEXT;
    ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_key_id TEXT;
  `,
  postgres: `
    ALTER TABLE webhook_endpoints ADD COLUMN secret_key_id text;
    ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_key_id text;
  `,
};
