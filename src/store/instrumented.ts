// Times every store call for the store latency histogram. Methods are looked up at call
// time, so the wrapper always delegates to the store's current behaviour.
import type { EventType } from '../schemas/events.js';
import type { EventRepository } from './events.js';
import type { WebhookRepository } from './webhooks.js';
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
  'ping',
] as const satisfies ReadonlyArray<keyof Store>;

/** The operation names (metric labels) of the event log's timed methods; append runs inside another operation. */
const EVENT_OPERATIONS = { list: 'listEvents', get: 'getEvent', prune: 'pruneEvents' } as const satisfies Partial<Record<keyof EventRepository, string>>;
/** The same for webhooks: every method, under the names the metric has always had. */
const WEBHOOK_OPERATIONS = {
  createEndpoint: 'createWebhookEndpoint',
  getEndpoint: 'getWebhookEndpoint',
  listEndpoints: 'listWebhookEndpoints',
  updateEndpoint: 'updateWebhookEndpoint',
  deleteEndpoint: 'deleteWebhookEndpoint',
  rotateSecret: 'rotateWebhookSecret',
  listDeliveries: 'listWebhookDeliveries',
  retryDelivery: 'retryWebhookDelivery',
  fanOut: 'fanOutWebhookEvents',
  claim: 'claimWebhookDeliveries',
  record: 'recordWebhookAttempts',
  stats: 'webhookStats',
} as const satisfies Record<keyof WebhookRepository, string>;

/** `method` of `target`, timed under `operation` (looked up at call time). */
function timedCall(target: object, method: string, operation: string, observer: Observer): (...args: unknown[]) => Promise<unknown> {
  const observe = observer(operation);
  return (...args: unknown[]) => {
    const start = performance.now();
    const done = () => observe((performance.now() - start) / 1000);
    let result: Promise<unknown>;
    try {
      result = ((target as Record<string, unknown>)[method] as (...a: unknown[]) => Promise<unknown>)(...args);
    } catch (error) {
      done();
      return Promise.reject(error);
    }
    // One promise hop instead of an async wrapper's two; rejections pass through untouched.
    result.then(done, done);
    return result;
  };
}

/** A repository whose methods named in `operations` are timed under those names; the others pass through. */
export function timeRepository<R extends object>(repository: R, operations: Partial<Record<keyof R, string>>, observer: Observer): R {
  const timed: Record<string, unknown> = { ...(repository as Record<string, unknown>) };
  for (const [method, operation] of Object.entries(operations) as Array<[string, string]>) timed[method] = timedCall(repository, method, operation, observer);
  return timed as R;
}

export function instrumentStore(store: Store, observer: Observer): Store {
  const timed = {} as Record<(typeof TIMED)[number], unknown>;
  for (const name of TIMED) timed[name] = timedCall(store, name, name, observer);
  return {
    kind: store.kind,
    events: timeRepository(store.events, EVENT_OPERATIONS, observer),
    webhooks: timeRepository(store.webhooks, WEBHOOK_OPERATIONS, observer),
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
