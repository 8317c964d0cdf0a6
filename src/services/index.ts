// Builds every service from a store; shared by the HTTP app and the CLI.
import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Environment } from '../config.js';
import type { EventType } from '../schemas/events.js';
import type { TimeOperation } from '../store/instrumented.js';
import type { Store } from '../store/types.js';
import { createAccountService } from './accounts.js';
import { createApiKeyService } from './api-keys.js';
import { createKeyService } from './keys.js';
import { createAuditService } from './audit.js';
import { createCursorCodec } from './cursor.js';
import { createMessageService } from './messages.js';
import { createOrderService } from './orders.js';
import { MESSAGE_STATUSES } from '../schemas/messages.js';
import { createPetService } from './pets.js';
import { createPetChangeService } from './pet-changes.js';
import { createCategoryService } from './categories.js';
import { createEventService, EVENT_FILTERS } from './events.js';
import { createEventStreams } from './event-stream.js';
import { createWebhookService, type UrlCheck } from './webhooks.js';
import { DELIVERY_STATUSES } from '../schemas/events.js';
import { ORDER_STATUSES, PET_STATUSES } from '../schemas/index.js';

export async function createServices(deps: {
  store: Store;
  clock: Clock;
  environment: Environment;
  /** Called after a message is queued (the app wakes its worker). */
  onMessageQueued?: () => void;
  /** The registration-time webhook URL check (default: refuse nothing; the app passes the address policy). */
  checkWebhookUrl?: UrlCheck;
  webhookSecretOverlapSeconds?: number;
  /** Called when a webhook delivery is due now (the app wakes its worker). */
  onDeliveryDue?: () => void;
  /** Told the kinds of the events a service's change recorded, once it committed (the app counts them and wakes its webhook worker). */
  published?: (types: readonly EventType[]) => void;
  /** Times the services' transactions under their operation names (the store histogram). */
  timed?: TimeOperation;
}) {
  const { store, clock, environment } = deps;
  const { db, idempotency } = store;
  const optional = { ...(deps.published ? { published: deps.published } : {}), ...(deps.timed ? { timed: deps.timed } : {}) };
  // Stored in the database so every instance (and restart) signs cursors alike.
  const cursorSecret = await store.settings.getOrCreate('cursor_secret', () => randomBytes(32).toString('base64url'));
  const { accounts, apiKeys, pets, auditLog } = store;
  const audit = createAuditService({ db, auditLog, cursors: createCursorCodec<string>(cursorSecret, [], 'audit-log'), clock });
  const authentication = createApiKeyService({ apiKeys, accounts, externalChangeCounter: store.externalChangeCounter, clock, environment, onExpiredUse: audit.expiredUse });
  return {
    accounts: createAccountService({ accounts, clock }),
    apiKeys: authentication,
    keys: createKeyService({ db, apiKeys, auditLog, accounts, cursors: createCursorCodec<string>(cursorSecret, [], 'api-keys'), clock, environment, forget: authentication.forget }),
    audit,
    pets: createPetService({ db, pets, idempotency, events: store.events, clock, cursors: createCursorCodec(cursorSecret, PET_STATUSES), published: deps.published }),
    petChanges: createPetChangeService({ db, pets, orders: store.orders, events: store.events, clock, ...optional }),
    categories: createCategoryService({ db, categories: store.categories, cursors: createCursorCodec<string>(cursorSecret, [], 'categories'), ...optional }),
    orders: createOrderService({
      db,
      orders: store.orders,
      pets: store.pets,
      idempotency,
      events: store.events,
      clock,
      cursors: createCursorCodec(cursorSecret, ORDER_STATUSES, 'orders'),
      ...optional,
    }),
    eventStreams: createEventStreams({ events: store.events, accounts, apiKeys, onKeyChange: authentication.onKeyChange, clock }),
    events: createEventService({ events: store.events, cursors: createCursorCodec(cursorSecret, EVENT_FILTERS, 'events') }),
    webhooks: createWebhookService({
      webhooks: store.webhooks,
      auditLog,
      clock,
      endpointCursors: createCursorCodec<string>(cursorSecret, [], 'webhook-endpoints'),
      deliveryCursors: createCursorCodec(cursorSecret, DELIVERY_STATUSES, 'webhook-deliveries'),
      checkUrl: deps.checkWebhookUrl ?? ((url) => ({ url })),
      secretOverlapSeconds: deps.webhookSecretOverlapSeconds ?? 86_400,
      ...(deps.onDeliveryDue ? { due: deps.onDeliveryDue } : {}),
    }),
    messages: createMessageService({
      db,
      messages: store.messages,
      jobs: store.jobs,
      idempotency,
      clock,
      cursors: createCursorCodec(cursorSecret, MESSAGE_STATUSES, 'messages'),
      ...(deps.onMessageQueued ? { queued: deps.onMessageQueued } : {}),
      ...(deps.timed ? { timed: deps.timed } : {}),
    }),
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
