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
import { ORDER_STATUSES, PET_STATUSES } from '../schemas/index.js';

export async function createServices(deps: {
  store: Store;
  clock: Clock;
  environment: Environment;
  /** Called after a message is queued (the app wakes its worker). */
  onMessageQueued?: () => void;
}) {
  const { store, clock, environment } = deps;
  // Stored in the database so every instance (and restart) signs cursors alike.
  const cursorSecret = await store.getOrCreateSetting('cursor_secret', () => randomBytes(32).toString('base64url'));
  return {
    accounts: createAccountService({ store, clock }),
    apiKeys: createApiKeyService({ store, clock, environment }),
    pets: createPetService({ store, clock, cursors: createCursorCodec(cursorSecret, PET_STATUSES) }),
    orders: createOrderService({ store, clock, cursors: createCursorCodec(cursorSecret, ORDER_STATUSES, 'orders') }),
    messages: createMessageService({
      store,
      clock,
      cursors: createCursorCodec(cursorSecret, MESSAGE_STATUSES, 'messages'),
      ...(deps.onMessageQueued ? { queued: deps.onMessageQueued } : {}),
    }),
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
