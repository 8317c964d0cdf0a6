// The PATCHes of one event-loop turn in one transaction (core/group-commit.ts), as creates are:
// one commit makes all of them durable. Each patch is decided in order against the pet as the
// patches before it left it, so If-Match, the open-order rule and no-op detection mean exactly
// what they mean one request at a time; a refused patch writes nothing and fails alone.
import { NotFoundError, PetHasOpenOrderError } from '../errors.js';
import type { Pet, PetStatus } from '../schemas/index.js';
import type { Transaction } from '../store/core/sql.js';
import type { EventRepository, NewEvent } from '../store/events.js';
import type { OrderRepository } from '../store/orders.js';
import type { PetRepository } from '../store/pets.js';
import { petStatusChangedEvent, petUpdatedEvent, type PreviousAttributes } from './domain-events.js';
import { type Precondition, strongEtag } from './preconditions.js';

/** A JSON Merge Patch of a pet: an absent field stays; `status: null` removes the status. */
export interface PetPatch {
  name?: string;
  categoryId?: number;
  status?: PetStatus | null;
}

const etags = new WeakMap<Pet, string>();

/**
 * The pet's strong entity-tag, quoted: a hash of its fields, so it changes whenever the pet
 * does (an order moving its status included) and equal pets have equal tags. Remembered per
 * frozen (cached) pet.
 */
export function petEtag(pet: Pet): string {
  let tag = etags.get(pet);
  if (tag === undefined) {
    tag = strongEtag([pet.id, pet.name, pet.categoryId, pet.status ?? null]);
    if (Object.isFrozen(pet)) etags.set(pet, tag);
  }
  return tag;
}

/** The refusal of `precondition` (If-Match, If-None-Match) for the pet as it is, if any. */
export function refusal(pet: Pet, precondition: Precondition | undefined): Error | undefined {
  return precondition?.(petEtag(pet));
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

export interface PatchItem {
  accountId: string;
  id: number;
  patch: PetPatch;
  precondition: Precondition | undefined;
  /** The request's traceparent when it was sampled (tracing on), stored with its events. */
  trace: string | undefined;
}

export interface PatchDeps {
  pets: Pick<PetRepository, 'lockMany' | 'updateMany'>;
  orders: Pick<OrderRepository, 'placedAmong'>;
  events: Pick<EventRepository, 'append'>;
}

/** What one account's patches did: results in item order, writes and events. */
interface AccountOutcome {
  results: Array<Pet | Error>;
  changes: Array<{ before: Pet; after: Pet }>;
  recorded: NewEvent[];
  /** Each recorded event's request trace: a batch holds several requests, of several accounts. */
  traces: Array<string | undefined>;
}

export const petNotFound = (id: number) => new NotFoundError(`No pet with id ${id}. List your pets with GET /v1/pets.`);

/** Decides one account's patches in order against the locked pets; writes nothing. */
function decide(items: readonly PatchItem[], locked: Map<number, Pet>, placed: Set<number>): AccountOutcome {
  const current = new Map(locked);
  const recorded: NewEvent[] = [];
  const traces: Array<string | undefined> = [];
  const results = items.map(({ id, patch, precondition, trace }): Pet | Error => {
    const before = current.get(id);
    if (!before) return petNotFound(id);
    const refused = refusal(before, precondition);
    if (refused) return refused;
    const after = patched(before, patch);
    const previous = previousAttributes(before, after);
    if (Object.keys(previous).length === 0) return before;
    if ('status' in previous && placed.has(id)) return new PetHasOpenOrderError(id, 'status');
    current.set(id, after);
    recorded.push(petUpdatedEvent(after, previous));
    traces.push(trace);
    if ('status' in previous) {
      recorded.push(petStatusChangedEvent(after, before.status ?? null));
      traces.push(trace);
    }
    return after;
  });
  const changes = [...current].filter(([id, after]) => after !== locked.get(id)).map(([id, after]) => ({ before: locked.get(id)!, after }));
  return { results, changes, recorded, traces };
}

/** Applies the batch in `tx`: per account, one lock, one order check, one update, one append of its events (recorded `at`). */
export async function applyPatches(tx: Transaction, deps: PatchDeps, items: readonly PatchItem[], at: string): Promise<{ results: Array<Pet | Error>; recorded: NewEvent[] }> {
  const results = new Array<Pet | Error>(items.length);
  const accounts = [...new Set(items.map((item) => item.accountId))].sort();
  const outcomes: Array<[string, AccountOutcome, number[]]> = [];
  // Every account's pets are locked before any account's row (as one PATCH at a time did).
  for (const accountId of accounts) {
    const indexes = items.flatMap((item, i) => (item.accountId === accountId ? [i] : []));
    const mine = indexes.map((i) => items[i]!);
    const locked = await deps.pets.lockMany(tx, accountId, mine.map((item) => item.id));
    const statusIds = mine.filter((item) => 'status' in item.patch && locked.has(item.id)).map((item) => item.id);
    const placed = await deps.orders.placedAmong(tx, accountId, [...new Set(statusIds)]);
    outcomes.push([accountId, decide(mine, locked, placed), indexes]);
  }
  // Every write of the batch issued at once, then COMMIT with them: on PostgreSQL one round trip.
  const writes = outcomes.map(([accountId, outcome, indexes]) =>
    Promise.all([
      deps.pets.updateMany(tx, accountId, outcome.changes),
      outcome.recorded.length > 0 ? deps.events.append(tx, accountId, outcome.recorded, at, outcome.traces) : undefined,
    ]),
  );
  tx.lastStatementsIssued();
  await Promise.all(writes);
  const recorded: NewEvent[] = [];
  for (const [, outcome, indexes] of outcomes) {
    recorded.push(...outcome.recorded);
    indexes.forEach((itemIndex, k) => (results[itemIndex] = outcome.results[k]!));
  }
  return { results, recorded };
}
