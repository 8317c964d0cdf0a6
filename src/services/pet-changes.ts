// Correcting the inventory: updatePet (a JSON Merge Patch) and deletePet. Each is one
// transaction on the locked pet: the precondition, the order rule, the write, its counters
// (kept by the pets repository) and its events commit together or not at all.
//
// Rules: while a pet has a placed order its status is the order's (PATCH of status and DELETE
// refused with pet_has_open_order; name and category may change); a change that changes
// nothing writes nothing; If-Match compares strong ETags (a pet's ETag is a hash of its JSON).
import { hash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { NotFoundError, PetHasOpenOrderError, PreconditionFailedError } from '../errors.js';
import type { EventType } from '../schemas/events.js';
import type { Pet, PetStatus } from '../schemas/index.js';
import type { Sql, SqlDatabase } from '../store/core/sql.js';
import type { EventRepository, NewEvent } from '../store/events.js';
import type { OrderRepository } from '../store/orders.js';
import type { PetRepository } from '../store/pets.js';
import type { TimeOperation } from '../store/instrumented.js';
import { petDeletedEvent, petStatusChangedEvent, petUpdatedEvent, type PreviousAttributes } from './domain-events.js';

/** A JSON Merge Patch of a pet: an absent field stays; `status: null` removes the status. */
export interface PetPatch {
  name?: string;
  categoryId?: number;
  status?: PetStatus | null;
}

/** An If-Match condition: any existing pet (`*`), or one of these entity-tags (strong comparison). */
export type IfMatch = '*' | readonly string[];

const etags = new WeakMap<Pet, string>();

/**
 * The pet's strong entity-tag, quoted: a hash of its fields, so it changes whenever the pet
 * does (an order moving its status included) and equal pets have equal tags. Remembered per
 * frozen (cached) pet.
 */
export function petEtag(pet: Pet): string {
  let tag = etags.get(pet);
  if (tag === undefined) {
    tag = `"${hash('sha256', JSON.stringify([pet.id, pet.name, pet.categoryId, pet.status ?? null]), 'base64url').slice(0, 27)}"`;
    if (Object.isFrozen(pet)) etags.set(pet, tag);
  }
  return tag;
}

function matches(pet: Pet, condition: IfMatch | undefined): boolean {
  if (condition === undefined || condition === '*') return true;
  const tag = petEtag(pet);
  return condition.includes(tag);
}

/** The pet with the patch applied (fields in the schema's order; no status when it is null). */
export function patched(pet: Pet, patch: PetPatch): Pet {
  const status = patch.status === undefined ? pet.status : patch.status ?? undefined;
  const next: Pet = { id: pet.id, name: patch.name ?? pet.name, categoryId: patch.categoryId ?? pet.categoryId };
  if (status !== undefined) next.status = status;
  return next;
}

/** The changed fields' values before the change ({} when nothing changed). */
export function previousAttributes(before: Pet, after: Pet): PreviousAttributes {
  const previous: PreviousAttributes = {};
  if (before.name !== after.name) previous.name = before.name;
  if (before.categoryId !== after.categoryId) previous.categoryId = before.categoryId;
  if (before.status !== after.status) previous.status = before.status ?? null;
  return previous;
}

export interface PetChangeDeps {
  db: Pick<SqlDatabase, 'transaction'>;
  pets: Pick<PetRepository, 'lock' | 'update' | 'remove'>;
  orders: Pick<OrderRepository, 'hasPlaced'>;
  events: Pick<EventRepository, 'append'>;
  clock: Clock;
  published?: ((types: readonly EventType[]) => void) | undefined;
  timed?: TimeOperation | undefined;
}

const petNotFound = (id: number) => new NotFoundError(`No pet with id ${id}. List your pets with GET /v1/pets.`);
const untimed: TimeOperation = (_operation, work) => work();

export function createPetChangeService(deps: PetChangeDeps) {
  const { db, pets, orders, events, clock } = deps;
  const timed = deps.timed ?? untimed;

  /** Runs `change` on the locked pet; publishes the events it recorded once committed. */
  async function onLocked<T>(operation: string, accountId: string, id: number, change: (tx: Sql, pet: Pet, at: string) => Promise<{ value: T; recorded: NewEvent[] }>): Promise<T> {
    const at = new Date(clock.now()).toISOString();
    const { value, recorded } = await timed(operation, () =>
      db.transaction(async (tx) => {
        const pet = await pets.lock(tx, accountId, id);
        if (!pet) throw petNotFound(id);
        const result = await change(tx, pet, at);
        if (result.recorded.length > 0) await events.append(tx, accountId, result.recorded, at);
        return result;
      }),
    );
    if (recorded.length > 0) deps.published?.(recorded.map((event) => event.type));
    return value;
  }

  return {
    /** Applies the merge patch; the pet unchanged (and nothing written) when it changes nothing. */
    update(accountId: string, id: number, patch: PetPatch, ifMatch?: IfMatch): Promise<Pet> {
      return onLocked('updatePet', accountId, id, async (tx, before) => {
        if (!matches(before, ifMatch)) throw new PreconditionFailedError(`Pet ${id}`);
        const after = patched(before, patch);
        const previous = previousAttributes(before, after);
        if (Object.keys(previous).length === 0) return { value: before, recorded: [] };
        if ('status' in previous && (await orders.hasPlaced(tx, accountId, id))) throw new PetHasOpenOrderError(id, 'status');
        const pet = await pets.update(tx, accountId, before, after);
        const recorded = [petUpdatedEvent(pet, previous)];
        if ('status' in previous) recorded.push(petStatusChangedEvent(pet, before.status ?? null));
        return { value: pet, recorded };
      });
    },

    /** Deletes the pet: 404 from then on; its id is never reused; its orders stay readable. */
    remove(accountId: string, id: number, ifMatch?: IfMatch): Promise<void> {
      return onLocked('deletePet', accountId, id, async (tx, pet, at) => {
        if (await orders.hasPlaced(tx, accountId, id)) throw new PetHasOpenOrderError(id, 'delete');
        if (!matches(pet, ifMatch)) throw new PreconditionFailedError(`Pet ${id}`);
        await pets.remove(tx, accountId, pet, at);
        return { value: undefined, recorded: [petDeletedEvent(pet)] };
      });
    },
  };
}

export type PetChangeService = ReturnType<typeof createPetChangeService>;
