// A stand-in for a `petstore serve` process caught between claiming an Idempotency-Key and
// committing its create: the real runIdempotent (claim, renewals) with a create that never
// ends. Prints "claimed" once the key is claimed; the test then kills it (SIGKILL).
// Usage: node --import tsx test/helpers/claim-and-hang.ts <database url> <account id> <key> <pet name>
import { systemClock } from '../../src/clock.js';
import { runIdempotent } from '../../src/services/idempotency.js';
import { requestHash } from '../../src/services/pets.js';
import { createStore } from '../../src/store/index.js';
import { storeConfig } from './store-config.js';

const [databaseUrl, accountId, key, name] = process.argv.slice(2) as [string, string, string, string];
// Stays up (the renewal timer is unref'd) until killed.
setInterval(() => {}, 1 << 30);
const store = await createStore(storeConfig(databaseUrl, { pgPoolMax: 2 }));
// The create step runs only once the key is claimed (new, or taken over).
await runIdempotent({ db: store.db, idempotency: store.idempotency, clock: systemClock }, accountId, key, requestHash({ name, categoryId: 1 }), {
  replay: async () => undefined,
  create: () => {
    process.stdout.write('claimed\n');
    return new Promise<undefined>(() => {});
  },
});
