// What each change tells the world: the event a service records with the change, in the
// change's transaction (the store keeps them as the account's event log; webhooks deliver it).
// An event's data is its JSON text, exactly what the API shows and deliveries sign.
import type { Order, Pet, PetStatus } from '../schemas/index.js';
import type { NewEvent } from '../store/events.js';

export const petCreatedEvent = (pet: Pet): NewEvent => ({ type: 'pet.created', data: JSON.stringify({ object: pet }) });

/** `previousStatus` null: the pet had no status (only a PATCH moves a pet from none). */
export const petStatusChangedEvent = (pet: Pet, previousStatus: PetStatus | null): NewEvent => ({
  type: 'pet.status_changed',
  data: JSON.stringify({ object: pet, previousStatus }),
});

/** The changed fields' values before a PATCH; a status that was absent is null. */
export type PreviousAttributes = { name?: string; categoryId?: number; status?: PetStatus | null };

export const petUpdatedEvent = (pet: Pet, previousAttributes: PreviousAttributes): NewEvent => ({
  type: 'pet.updated',
  data: JSON.stringify({ object: pet, previousAttributes }),
});

/** `pet`: the pet as it was when deleted. */
export const petDeletedEvent = (pet: Pet): NewEvent => ({ type: 'pet.deleted', data: JSON.stringify({ object: pet }) });

export const orderEvent = (order: Order): NewEvent => ({
  type: order.status === 'placed' ? 'order.placed' : order.status === 'delivered' ? 'order.delivered' : 'order.cancelled',
  data: JSON.stringify({ object: order }),
});
