// Times every store call for the store latency histogram. Methods are looked up at call
// time, so the wrapper always delegates to the store's current behaviour.
import type { Store } from './types.js';

type Observe = (operation: string, seconds: number) => void;

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
  'releaseIdempotencyKey',
  'purgeIdempotencyKeys',
  'ping',
] as const satisfies ReadonlyArray<keyof Store>;

export function instrumentStore(store: Store, observe: Observe): Store {
  const timed = {} as Record<(typeof TIMED)[number], unknown>;
  for (const name of TIMED) {
    timed[name] = async (...args: unknown[]) => {
      const start = process.hrtime.bigint();
      try {
        return await (store[name] as (...a: unknown[]) => Promise<unknown>)(...args);
      } finally {
        observe(name, Number(process.hrtime.bigint() - start) / 1e9);
      }
    };
  }
  return {
    kind: store.kind,
    migrate: () => store.migrate(),
    pendingMigrations: () => store.pendingMigrations(),
    close: () => store.close(),
    poolStats: () => store.poolStats?.() ?? { total: 0, idle: 0, waiting: 0 },
    ...(store.externalChangeCounter ? { externalChangeCounter: () => store.externalChangeCounter!() } : {}),
    ...(timed as Pick<Store, (typeof TIMED)[number]>),
  };
}
