// Times every store call for the store latency histogram, and (operationTimer) the services'
// transactions, under the operation names the flat store had. Methods are looked up at call
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

/** Runs `work`, timed under `operation` in the store histogram (a rule's whole transaction, say). */
export type TimeOperation = <T>(operation: string, work: () => Promise<T>) => Promise<T>;

/** Calls `work` with `args` and tells `observe` how long its promise took. */
function timedCall<A extends unknown[], T>(observe: (seconds: number) => void, work: (...args: A) => Promise<T>, args: A): Promise<T> {
  const start = performance.now();
  const done = () => observe((performance.now() - start) / 1000);
  let result: Promise<T>;
  try {
    result = work(...args);
  } catch (error) {
    done();
    return Promise.reject(error);
  }
  // One promise hop instead of an async wrapper's two; rejections pass through untouched.
  result.then(done, done);
  return result;
}

export function operationTimer(observer: Observer): TimeOperation {
  const observers = new Map<string, (seconds: number) => void>();
  return (operation, work) => {
    let observe = observers.get(operation);
    if (!observe) observers.set(operation, (observe = observer(operation)));
    return timedCall(observe, work, []);
  };
}

type Method = (...args: unknown[]) => Promise<unknown>;

// Repository methods timed under the operation names the flat store had (the metric's labels
// stay what they were). Methods that run in a service's transaction are timed with it.
const REPOSITORY_OPERATIONS = {
  orders: { get: 'getOrder', list: 'listOrders' },
  messages: { get: 'getMessage', getBySeq: 'getMessageBySeq', list: 'listMessages', queueStats: 'messageQueueStats' },
  jobs: { claim: 'claimJobs', retry: 'retryJob' },
} as const satisfies { [K in 'orders' | 'messages' | 'jobs']: Partial<Record<keyof Store[K], string>> };

/** The repository's methods, those named in `operations` timed; each looked up at call time. */
function timedRepository<K extends keyof typeof REPOSITORY_OPERATIONS>(store: Store, name: K, observer: Observer): Store[K] {
  const operations: Readonly<Record<string, string>> = REPOSITORY_OPERATIONS[name];
  const wrapped: Record<string, Method> = {};
  for (const method of Object.keys(store[name])) {
    const call: Method = (...args) => (store[name] as unknown as Record<string, Method>)[method]!(...args);
    const operation = operations[method];
    if (operation === undefined) wrapped[method] = call;
    else {
      const observe = observer(operation);
      wrapped[method] = (...args) => timedCall(observe, call, args);
    }
  }
  return wrapped as unknown as Store[K];
}

export function instrumentStore(store: Store, observer: Observer): Store {
  const timed = {} as Record<(typeof TIMED)[number], unknown>;
  for (const name of TIMED) {
    const observe = observer(name);
    timed[name] = (...args: unknown[]) => timedCall(observe, store[name] as Method, args);
  }
  return {
    kind: store.kind,
    db: store.db,
    pets: store.pets,
    idempotency: store.idempotency,
    events: store.events,
    orders: timedRepository(store, 'orders', observer),
    messages: timedRepository(store, 'messages', observer),
    jobs: timedRepository(store, 'jobs', observer),
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
  };
}

const PET_CREATED: readonly EventType[] = ['pet.created'];
