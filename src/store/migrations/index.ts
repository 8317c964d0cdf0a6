// Every schema change, in order, under the one numbering both backends share
// (core/migrator.ts applies them). Append new versions; never edit applied ones.
import type { Migration } from './migration.js';
import { accountsApiKeysPets } from './001-accounts-api-keys-pets.js';
import { idempotencyKeys } from './002-idempotency-keys.js';
import { perAccountPetIds } from './003-per-account-pet-ids.js';
import { orders } from './004-orders.js';
import { messagesAndJobs } from './005-messages-and-jobs.js';
import { eventsAndWebhooks } from './006-events-and-webhooks.js';
import { apiKeyChangeNotifications } from './007-api-key-change-notifications.js';
import { aCheaperEventLog } from './008-a-cheaper-event-log.js';
import { eventRuns } from './009-event-runs.js';
import { inventoryAndCategories } from './010-inventory-and-categories.js';
import { apiKeyScopesAndExpiry } from './011-api-key-scopes-and-expiry.js';
import { auditLog } from './012-audit-log.js';
import { sealedWebhookSecrets } from './013-sealed-webhook-secrets.js';
import { traceContext } from './014-trace-context.js';

export type { Migration, MigrationBackend } from './migration.js';

export const migrations: readonly Migration[] = [
  accountsApiKeysPets,
  idempotencyKeys,
  perAccountPetIds,
  orders,
  messagesAndJobs,
  eventsAndWebhooks,
  apiKeyChangeNotifications,
  aCheaperEventLog,
  eventRuns,
  inventoryAndCategories,
  apiKeyScopesAndExpiry,
  auditLog,
  sealedWebhookSecrets,
  traceContext,
];
