// Correcting the inventory: updatePet (a JSON Merge Patch) and deletePet. A change commits with
// its counters (kept by the pets repository) and its events, or not at all. The PATCHes of one
// event-loop turn share one transaction (pet-patches.ts: the rules, decided patch by patch);
// a DELETE is a transaction of its own.
//
// Rules: while a pet has a placed order its status is the order's (PATCH of status and DELETE
// refused with pet_has_open_order; name and category may change); a change that changes
// nothing writes nothing; a precondition (If-Match, If-None-Match) is asked against the pet as
// locked (a pet's ETag is a hash of its JSON).
import type { Clock } from '../clock.js';
import { PetHasOpenOrderError } from '../errors.js';
import type { EventType } from '../schemas/events.js';
import type { Pet } from '../schemas/index.js';
import type { SqlDatabase } from '../store/core/sql.js';
import { createGroupCommit } from '../store/core/group-commit.js';
import type { EventRepository } from '../store/events.js';
import type { OrderRepository } from '../store/orders.js';
import type { PetRepository } from '../store/pets.js';
import type { TimeOperation } from '../store/instrumented.js';
import { hooks as tracingHooks } from '../tracing/switch.js';
import { petDeletedEvent } from './domain-events.js';
import { applyPatches, type PatchItem, type PetPatch, petNotFound, refusal } from './pet-patches.js';
import type { Precondition } from './preconditions.js';

export { patched, type PetPatch, petEtag, previousAttributes } from './pet-patches.js';

export interface PetChangeDeps {
  db: Pick<SqlDatabase, 'transaction' | 'remote'>;
  pets: Pick<PetRepository, 'lock' | 'remove' | 'lockMany' | 'updateMany'>;
  orders: Pick<OrderRepository, 'hasPlaced' | 'placedAmong'>;
  events: Pick<EventRepository, 'append'>;
  clock: Clock;
  published?: ((types: readonly EventType[]) => void) | undefined;
  timed?: TimeOperation | undefined;
}

/** A sampled request's item with its traceparent (a literal: one hidden class for every item). */
const traced =
  (tracing: NonNullable<typeof tracingHooks>) =>
  (item: PatchItem, link: unknown): PatchItem => ({ accountId: item.accountId, id: item.id, patch: item.patch, precondition: item.precondition, trace: tracing.traceparentOf(link) });

/** The most PATCHes one transaction takes. */
const PATCH_BATCH_MAX = 256;
const untimed: TimeOperation = (_operation, work) => work();

export function createPetChangeService(deps: PetChangeDeps) {
  const { db, pets, orders, events, clock } = deps;
  const timed = deps.timed ?? untimed;
  const now = () => new Date(clock.now()).toISOString();

  /** One batch in one transaction; the events it recorded are announced once it committed. */
  async function writePatches(items: readonly PatchItem[]): Promise<Array<Pet | Error>> {
    // One time for the batch (its events commit together), not one per request.
    const at = now();
    const { results, recorded } = await timed('updatePet', () => db.transaction((tx) => applyPatches(tx, { pets, orders, events }, items, at)));
    if (recorded.length > 0) deps.published?.(recorded.map((event) => event.type));
    return results;
  }

  const patches = createGroupCommit<PatchItem, Pet>({
    max: PATCH_BATCH_MAX,
    overlap: db.remote,
    writeBatch: writePatches,
    writeOne: async (item) => {
      const [result] = await writePatches([item]);
      if (result instanceof Error) throw result;
      return result!;
    },
    // The batch runs in its own span: each sampled request's trace goes with its item (its
    // events'), never the batch's, which may belong to another account's request.
    ...(tracingHooks ? { traced: traced(tracingHooks) } : {}),
  });

  return {
    /** Applies the merge patch; the pet unchanged (and nothing written) when it changes nothing. */
    update(accountId: string, id: number, patch: PetPatch, precondition?: Precondition): Promise<Pet> {
      return patches.submit({ accountId, id, patch, precondition, trace: undefined });
    },

    /** Deletes the pet: 404 from then on; its id is never reused; its orders stay readable. */
    async remove(accountId: string, id: number, precondition?: Precondition): Promise<void> {
      const at = now();
      const recorded = await timed('deletePet', () =>
        db.transaction(async (tx) => {
          const pet = await pets.lock(tx, accountId, id);
          if (!pet) throw petNotFound(id);
          if (await orders.hasPlaced(tx, accountId, id)) throw new PetHasOpenOrderError(id, 'delete');
          const refused = refusal(pet, precondition);
          if (refused) throw refused;
          await pets.remove(tx, accountId, pet, at);
          const list = [petDeletedEvent(pet)];
          await events.append(tx, accountId, list, at);
          return list;
        }),
      );
      deps.published?.(recorded.map((event) => event.type));
    },

    /** Settles every PATCH submitted so far. */
    drain: () => patches.drain(),
  };
}

export type PetChangeService = ReturnType<typeof createPetChangeService>;
