// Times every store call for the store latency histogram. Methods are looked up at call
// time, so the wrapper always delegates to the store's current behaviour.
import type { EventType } from '../schemas/events.js';
import type { ListPetsQuery, Store } from './types.js';

/** Returns the recorder for one operation (bound once, so the hot path does no label lookup). */
type Observer = (operation: string) => (seconds: number) => void;

const TIMED = [
  'getOrCreateSetting',
  'createAccount',
  'getAccount',
  'createApiKey',
  'findApiKeyByHash',
  'listApiKeys',
  'revokeApiKey',
  'createPet',
  'getPet',
  'listPets',
  'claimIdempotencyKey',
  'createPetWithIdempotencyKey',
  'renewIdempotencyKey',
  'releaseIdempotencyKey',
  'purgeIdempotencyKeys',
  'placeOrder',
  'getOrder',
  'listOrders',
  'moveOrder',
  'enqueueMessage',
  'getMessage',
  'getMessageBySeq',
  'listMessages',
  'claimJobs',
  'completeMessageDeliveries',
  'retryJob',
  'failMessage',
  'messageQueueStats',
  'listEvents',
  'getEvent',
  'pruneEvents',
  'createWebhookEndpoint',
  'getWebhookEndpoint',
  'listWebhookEndpoints',
  'updateWebhookEndpoint',
  'deleteWebhookEndpoint',
  'rotateWebhookSecret',
  'listWebhookDeliveries',
  'retryWebhookDelivery',
  'fanOutWebhookEvents',
  'claimWebhookDeliveries',
  'recordWebhookAttempts',
  'webhookStats',
  'ping',
] as const satisfies ReadonlyArray<keyof Store>;

export function instrumentStore(store: Store, observer: Observer): Store {
  const timed = {} as Record<(typeof TIMED)[number], unknown>;
  for (const name of TIMED) {
    const observe = observer(name);
    timed[name] = (...args: unknown[]) => {
      const start = performance.now();
      const done = () => observe((performance.now() - start) / 1000);
      let result: Promise<unknown>;
      try {
        result = (store[name] as (...a: unknown[]) => Promise<unknown>)(...args);
      } catch (error) {
        done();
        return Promise.reject(error);
      }
      // One promise hop instead of an async wrapper's two; rejections pass through untouched.
      result.then(done, done);
      return result;
    };
  }
  return {
    kind: store.kind,
    migrate: () => store.migrate(),
    pendingMigrations: () => store.pendingMigrations(),
    close: () => store.close(),
    poolStats: () => store.poolStats?.() ?? { total: 0, idle: 0, waiting: 0 },
    ...(store.externalChangeCounter ? { externalChangeCounter: () => store.externalChangeCounter!() } : {}),
    ...(store.watchApiKeys ? { watchApiKeys: (onChange: (keyId: string | undefined) => void) => store.watchApiKeys!(onChange) } : {}),
    // Not timed: a Map lookup, not a query (the store histogram times calls that may query).
    ...(store.cachedPet ? { cachedPet: (accountId: string, id: number) => store.cachedPet!(accountId, id) } : {}),
    ...(store.cachedPage ? { cachedPage: (query: ListPetsQuery) => store.cachedPage!(query) } : {}),
    ...(timed as Pick<Store, (typeof TIMED)[number]>),
  };
}

/**
 * Tells `written` the kinds of the events each successful change wrote (the store writes them
 * in the change's transaction; see the outbox in store/<backend>/events.ts): for the events
 * metric, and to wake the webhook worker.
 */
export function observeEvents(store: Store, written: (types: readonly EventType[]) => void): Store {
  return {
    ...store,
    createPet: (...args) =>
      store.createPet(...args).then((pet) => {
        written(PET_CREATED);
        return pet;
      }),
    createPetWithIdempotencyKey: (...args) =>
      store.createPetWithIdempotencyKey(...args).then((pet) => {
        if (pet) written(PET_CREATED);
        return pet;
      }),
    placeOrder: (...args) =>
      store.placeOrder(...args).then((result) => {
        if (result.outcome === 'placed') written(['order.placed', 'pet.status_changed']);
        return result;
      }),
    moveOrder: (...args) =>
      store.moveOrder(...args).then((result) => {
        if (result.outcome === 'moved') written([result.order.status === 'delivered' ? 'order.delivered' : 'order.cancelled', 'pet.status_changed']);
        return result;
      }),
  };
}

const PET_CREATED: readonly EventType[] = ['pet.created'];
