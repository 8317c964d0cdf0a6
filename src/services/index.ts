// Builds every service from a store; shared by the HTTP app and the CLI.
import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Environment } from '../config.js';
import type { Store } from '../store/types.js';
import { createAccountService } from './accounts.js';
import { createApiKeyService } from './api-keys.js';
import { createCursorCodec } from './cursor.js';
import { createMessageService } from './messages.js';
import { createOrderService } from './orders.js';
import { MESSAGE_STATUSES } from '../schemas/messages.js';
import { createPetService } from './pets.js';
import { createEventService, EVENT_FILTERS } from './events.js';
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
}) {
  const { store, clock, environment } = deps;
  // Stored in the database so every instance (and restart) signs cursors alike.
  const cursorSecret = await store.getOrCreateSetting('cursor_secret', () => randomBytes(32).toString('base64url'));
  return {
    accounts: createAccountService({ store, clock }),
    apiKeys: createApiKeyService({ store, clock, environment }),
    pets: createPetService({ store, clock, cursors: createCursorCodec(cursorSecret, PET_STATUSES) }),
    orders: createOrderService({ store, clock, cursors: createCursorCodec(cursorSecret, ORDER_STATUSES, 'orders') }),
    events: createEventService({ events: store.events, cursors: createCursorCodec(cursorSecret, EVENT_FILTERS, 'events') }),
    webhooks: createWebhookService({
      webhooks: store.webhooks,
      clock,
      endpointCursors: createCursorCodec<string>(cursorSecret, [], 'webhook-endpoints'),
      deliveryCursors: createCursorCodec(cursorSecret, DELIVERY_STATUSES, 'webhook-deliveries'),
      checkUrl: deps.checkWebhookUrl ?? (() => undefined),
      secretOverlapSeconds: deps.webhookSecretOverlapSeconds ?? 86_400,
      ...(deps.onDeliveryDue ? { due: deps.onDeliveryDue } : {}),
    }),
    messages: createMessageService({
      store,
      clock,
      cursors: createCursorCodec(cursorSecret, MESSAGE_STATUSES, 'messages'),
      ...(deps.onMessageQueued ? { queued: deps.onMessageQueued } : {}),
    }),
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
