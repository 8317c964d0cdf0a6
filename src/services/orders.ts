// Orders: how a pet moves between statuses. The state machine lives here; the store applies a
// move atomically (the order and its pet together) only if the order is still where the move
// starts, so concurrent moves cannot both win.
//
//   placed ──deliver──▶ delivered   (pet pending → sold)
//     └─────cancel───▶ cancelled   (pet pending → available)
//
// Placing an order needs the pet `available` and makes it `pending`. Asking for the state an
// order is already in changes nothing and succeeds (safe to retry); any other move is refused.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { InvalidTransitionError, NotFoundError, PetNotAvailableError } from '../errors.js';
import type { Order, OrderStatus } from '../schemas/index.js';
import type { OrderMove, Store } from '../store/types.js';
import { type CursorCodec, pageBounds, pageOf, type PageRequest } from './cursor.js';
import { runIdempotent } from './idempotency.js';

export type OrderAction = 'deliver' | 'cancel';

const MOVES: Record<OrderAction, OrderMove> = {
  deliver: { from: 'placed', to: 'delivered', petFrom: 'pending', petTo: 'sold' },
  cancel: { from: 'placed', to: 'cancelled', petFrom: 'pending', petTo: 'available' },
};

export interface OrderPage {
  orders: Order[];
  nextCursor: string | undefined;
}

/** An Idempotency-Key's request hash for placeOrder: never equal to a createPet one (another shape). */
export function placeOrderRequestHash(petId: number): string {
  return createHash('sha256').update(JSON.stringify(['placeOrder', petId])).digest('hex');
}

const orderNotFound = (id: number) => new NotFoundError(`No order with id ${id}. List your orders with GET /v1/store/orders.`);
const petNotFound = (id: number) => new NotFoundError(`No pet with id ${id}. List your pets with GET /v1/pets.`);

export function createOrderService(deps: { store: Store; clock: Clock; cursors: CursorCodec<OrderStatus> }) {
  const { store, clock, cursors } = deps;
  const now = () => new Date(clock.now()).toISOString();

  async function place(accountId: string, petId: number, createdAt: string, key?: string): Promise<Order | undefined> {
    const result = await store.placeOrder(accountId, petId, createdAt, key);
    switch (result.outcome) {
      case 'placed':
        return result.order;
      case 'pet_not_found':
        throw petNotFound(petId);
      case 'pet_not_available':
        throw new PetNotAvailableError(petId, result.petStatus);
      case 'idempotency_race':
        return undefined;
    }
  }

  return {
    async place(accountId: string, petId: number): Promise<Order> {
      return (await place(accountId, petId, now()))!;
    },

    /** As place, at most once per (account, key); see runIdempotent. */
    async placeIdempotent(accountId: string, petId: number, key: string): Promise<{ order: Order; replayed: boolean }> {
      const { value, replayed } = await runIdempotent({ db: store.db, idempotency: store.idempotency, clock }, accountId, key, placeOrderRequestHash(petId), {
        replay: async (orderId) => {
          const first = await store.getOrder(accountId, orderId);
          if (!first) throw new Error(`idempotency key completed with missing order ${orderId}`);
          return first;
        },
        create: (at) => place(accountId, petId, new Date(at).toISOString(), key),
      });
      return { order: value, replayed };
    },

    async get(accountId: string, id: number): Promise<Order> {
      const order = await store.getOrder(accountId, id);
      if (!order) throw orderNotFound(id);
      return order;
    },

    async list(accountId: string, query: PageRequest<OrderStatus>): Promise<OrderPage> {
      const rows = await store.listOrders({ accountId, status: query.status, ...pageBounds(cursors, accountId, query) });
      const { items, nextCursor } = pageOf(cursors, accountId, query, rows);
      return { orders: items, nextCursor };
    },

    /** Delivers or cancels a placed order; the order already in that state is returned unchanged. */
    async act(accountId: string, id: number, action: OrderAction): Promise<Order> {
      const move = MOVES[action];
      const result = await store.moveOrder(accountId, id, move, now());
      if (result.outcome === 'not_found') throw orderNotFound(id);
      if (result.outcome === 'moved' || result.order.status === move.to) return result.order;
      // The message names the move by its target: "it cannot be delivered" / "cancelled".
      throw new InvalidTransitionError(id, result.order.status, move.to);
    },
  };
}

export type OrderService = ReturnType<typeof createOrderService>;
