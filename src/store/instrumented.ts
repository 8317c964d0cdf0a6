// Times every store call for the store latency histogram. Methods are looked up at call
// time, so the wrapper always delegates to the store's current behaviour.
import type { Store } from './types.js';

/** Returns the recorder for one operation (bound once, so the hot path does no label lookup). */
type Observer = (operation: string) => (seconds: number) => void;


/** The operation label of each repository method (the store's former method names, which dashboards know). */
const LABELS = {
  settings: { getOrCreate: 'getOrCreateSetting' },
  accounts: { create: 'createAccount', get: 'getAccount', lastEventSeq: 'lastEventSeq' },
  apiKeys: { create: 'createApiKey', findByHash: 'findApiKeyByHash', get: 'getApiKey', list: 'listApiKeys', page: 'pageApiKeys', revoke: 'revokeApiKey', touch: 'touchApiKey' },
  pets: { create: 'createPet', insert: 'insertPet', get: 'getPet', list: 'listPets', lock: 'lockPet', setStatus: 'setPetStatus', inventory: 'getInventory' },
  idempotency: {
    insertClaim: 'insertIdempotencyClaim',
    lock: 'lockIdempotencyKey',
    reclaim: 'reclaimIdempotencyKey',
    takeOver: 'takeOverIdempotencyKey',
    complete: 'completeIdempotencyKey',
    renew: 'renewIdempotencyKey',
    release: 'releaseIdempotencyKey',
    purge: 'purgeIdempotencyKeys',
  },
  orders: { get: 'getOrder', list: 'listOrders' },
  categories: { get: 'getCategory', list: 'listCategories' },
  messages: { get: 'getMessage', getBySeq: 'getMessageBySeq', list: 'listMessages', queueStats: 'messageQueueStats' },
  jobs: { claim: 'claimJobs', retry: 'retryJob' },
  auditLog: { list: 'listAuditLog', prune: 'pruneAuditLog' },
  // append runs inside another operation's transaction.
  eventLog: { append: 'appendEvents', list: 'listEvents', get: 'getEvent', prune: 'pruneEvents' },
  webhooks: {
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
    renewLease: 'renewWebhookLease',
    release: 'releaseWebhookDeliveries',
    record: 'recordWebhookAttempts',
    stats: 'webhookStats',
  },
} as const;

/** Times a service's transaction under its operation name (placeOrder, enqueueMessage…). */
export type TimeOperation = <T>(operation: string, work: () => Promise<T>) => Promise<T>;

export function operationTimer(observer: Observer): TimeOperation {
  const observers = new Map<string, (seconds: number) => void>();
  return (operation, work) => {
    let observe = observers.get(operation);
    if (!observe) observers.set(operation, (observe = observer(operation)));
    return timeCall(work, observe)() as ReturnType<typeof work>;
  };
}

type Method = (...args: never[]) => Promise<unknown>;

/** Times one call; one promise hop instead of an async wrapper's two, rejections untouched. */
function timeCall(method: Method, observe: (seconds: number) => void): Method {
  return (...args) => {
    const start = performance.now();
    const done = () => observe((performance.now() - start) / 1000);
    let result: Promise<unknown>;
    try {
      result = method(...args);
    } catch (error) {
      done();
      return Promise.reject(error);
    }
    result.then(done, done);
    return result;
  };
}

/** The repository with the labelled methods timed; everything else (a read cache's memory) as it is. */
function timeRepository<T extends object>(repository: T, labels: Partial<Record<keyof T, string>>, observer: Observer): T {
  const timed: Record<string, unknown> = { ...(repository as Record<string, unknown>) };
  for (const [name, label] of Object.entries(labels) as Array<[string, string]>) {
    // Looked up at call time, so the wrapper always delegates to the repository's current method.
    const method: Method = (...args) => (repository as Record<string, Method>)[name]!(...args);
    timed[name] = timeCall(method, observer(label));
  }
  return timed as T;
}

export function instrumentStore(store: Store, observer: Observer): Store {
  return {
    ...store,
    settings: timeRepository(store.settings, LABELS.settings, observer),
    accounts: timeRepository(store.accounts, LABELS.accounts, observer),
    apiKeys: timeRepository(store.apiKeys, LABELS.apiKeys, observer),
    pets: timeRepository(store.pets, LABELS.pets, observer),
    idempotency: timeRepository(store.idempotency, LABELS.idempotency, observer),
    events: timeRepository(store.events, LABELS.eventLog, observer),
    webhooks: timeRepository(store.webhooks, LABELS.webhooks, observer),
    orders: timeRepository(store.orders, LABELS.orders, observer),
    categories: timeRepository(store.categories, LABELS.categories, observer),
    messages: timeRepository(store.messages, LABELS.messages, observer),
    jobs: timeRepository(store.jobs, LABELS.jobs, observer),
    auditLog: timeRepository(store.auditLog, LABELS.auditLog, observer),
    ping: timeCall(() => store.ping(), observer('ping')) as Store['ping'],
    poolStats: () => store.poolStats?.() ?? { total: 0, idle: 0, waiting: 0 },
  };
}
