// What each change tells the world: the event a service records with the change, in the
// change's transaction (the store keeps them as the account's event log; webhooks deliver it).
// An event's data is its JSON text, exactly what the API shows and deliveries sign.
import type { Order, Pet, PetStatus } from '../schemas/index.js';
import type { NewEvent } from '../store/events.js';

export const petCreatedEvent = (pet: Pet): NewEvent => ({ type: 'pet.created', data: JSON.stringify({ object: pet }) });

export const petStatusChangedEvent = (pet: Pet, previousStatus: PetStatus): NewEvent => ({
  type: 'pet.status_changed',
  data: JSON.stringify({ object: pet, previousStatus }),
});

export const orderEvent = (order: Order): NewEvent => ({
  type: order.status === 'placed' ? 'order.placed' : order.status === 'delivered' ? 'order.delivered' : 'order.cancelled',
  data: JSON.stringify({ object: order }),
});
