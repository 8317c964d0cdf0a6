// The store calls tests make that are rules now (written once, in services): the same
// transactions the services run, over a store's repositories.
import { systemClock } from '../../src/clock.js';
import type { NewPet, Pet } from '../../src/schemas/index.js';
import { claimKey, IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS, type IdempotencyClaim } from '../../src/services/idempotency.js';
import { createPetWithKey } from '../../src/services/pets.js';
import { StoreConflictError } from '../../src/store/errors.js';
import type { Store } from '../../src/store/types.js';

export const createPet = (store: Pick<Store, 'pets'>, accountId: string, pet: NewPet, createdAt: string): Promise<Pet> =>
  store.pets.create({ accountId, pet, createdAt });

/** The claim runIdempotent makes (its retention and lease are the service's constants). */
export const claimIdempotencyKey = (
  store: Pick<Store, 'db' | 'idempotency'>,
  claim: { accountId: string; key: string; requestHash: string; now: number; ttlMs?: number; leaseMs?: number },
): Promise<IdempotencyClaim> => {
  // The retention and lease are the service's; a test that means others cannot have them.
  if ((claim.ttlMs ?? IDEMPOTENCY_TTL_MS) !== IDEMPOTENCY_TTL_MS || (claim.leaseMs ?? IDEMPOTENCY_LEASE_MS) !== IDEMPOTENCY_LEASE_MS) {
    throw new Error('claims use IDEMPOTENCY_TTL_MS and IDEMPOTENCY_LEASE_MS');
  }
  return claimKey({ db: store.db, idempotency: store.idempotency, clock: systemClock }, claim.accountId, claim.key, claim.requestHash, claim.now);
};

/** The idempotent create's transaction; undefined when another request completed the key first. */
export async function createPetWithIdempotencyKey(store: Store, accountId: string, pet: NewPet, createdAt: string, key: string): Promise<Pet | undefined> {
  try {
    return await createPetWithKey(store, { accountId, pet, createdAt }, key);
  } catch (error) {
    if (error instanceof StoreConflictError) return undefined;
    throw error;
  }
}
