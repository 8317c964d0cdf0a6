// Orders: how a pet moves between statuses. The state machine and the rules that apply it
// live here, each a transaction: an order and its pet change together or not at all, and
// concurrent changes cannot both win (the rows are locked before they are checked).
//
//   placed ──deliver──▶ delivered   (pet pending → sold)
//     └─────cancel───▶ cancelled   (pet pending → available)
//
// Placing an order needs the pet `available` and makes it `pending`. Asking for the state an
// order is already in changes nothing and succeeds (safe to retry); any other move is refused.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { InvalidTransitionError, NotFoundError, PetNotAvailableError } from '../errors.js';
import type { EventType } from '../schemas/events.js';
import type { Order, OrderStatus, PetStatus } from '../schemas/index.js';
import type { SqlDatabase } from '../store/core/sql.js';
import type { EventRepository } from '../store/events.js';
import type { IdempotencyRepository } from '../store/idempotency.js';
import type { TimeOperation } from '../store/instrumented.js';
import type { OrderRepository } from '../store/orders.js';
import type { PetRepository } from '../store/pets.js';
import { type CursorCodec, pageBounds, pageOf, type PageRequest } from './cursor.js';
import { orderEvent, petStatusChangedEvent } from './domain-events.js';
import { completeKey, runIdempotent } from './idempotency.js';

export type OrderAction = 'deliver' | 'cancel';

/** A move of the state machine: the order from → to, its pet petFrom → petTo. */
export interface OrderMove {
  from: OrderStatus;
  to: OrderStatus;
  petFrom: PetStatus;
  petTo: PetStatus;
}

const MOVES: Record<OrderAction, OrderMove> = {
  deliver: { from: 'placed', to: 'delivered', petFrom: 'pending', petTo: 'sold' },
  cancel: { from: 'placed', to: 'cancelled', petFrom: 'pending', petTo: 'available' },
};

export interface OrderPage {
  orders: Order[];
  nextCursor: string | undefined;
}

export interface OrderServiceDeps {
  db: Pick<SqlDatabase, 'transaction'>;
  orders: Pick<OrderRepository, 'get' | 'list' | 'insert' | 'lock' | 'setStatus'>;
  pets: Pick<PetRepository, 'lock' | 'setStatus'>;
  /** The Idempotency-Key's claim and upkeep (runIdempotent) and its completion. */
  idempotency: IdempotencyRepository;
  events: Pick<EventRepository, 'append'>;
  clock: Clock;
  cursors: CursorCodec<OrderStatus>;
  /** Told the kinds of the events a change recorded, once it committed. */
  published?: (types: readonly EventType[]) => void;
  /** Times each rule's transaction under its operation name (the store histogram). */
  timed?: TimeOperation;
}

/** An Idempotency-Key's request hash for placeOrder: never equal to a createPet one (another shape). */
export function placeOrderRequestHash(petId: number): string {
  return createHash('sha256').update(JSON.stringify(['placeOrder', petId])).digest('hex');
}

const orderNotFound = (id: number) => new NotFoundError(`No order with id ${id}. List your orders with GET /v1/store/orders.`);
const petNotFound = (id: number) => new NotFoundError(`No pet with id ${id}. List your pets with GET /v1/pets.`);
const untimed: TimeOperation = (_operation, work) => work();

export function createOrderService(deps: OrderServiceDeps) {
  const { db, orders, pets, idempotency, events, clock, cursors } = deps;
  const timed = deps.timed ?? untimed;
  const now = () => new Date(clock.now()).toISOString();

  /**
   * The pet must be the account's and `available`; it becomes `pending` and the order `placed`
   * (the account's next order id), with the key's completion and the events, all or nothing.
   */
  async function place(accountId: string, petId: number, createdAt: string, key?: string): Promise<Order> {
    const { order, recorded } = await timed('placeOrder', () =>
      db.transaction(async (tx) => {
        const pet = await pets.lock(tx, accountId, petId);
        if (!pet) throw petNotFound(petId);
        if (pet.status !== 'available') throw new PetNotAvailableError(petId, pet.status ?? undefined);
        const changed = await pets.setStatus(tx, accountId, petId, 'available', 'pending');
        if (!changed) throw new Error(`pet ${accountId}/${petId} changed under its lock`);
        const order = await orders.insert(tx, accountId, petId, createdAt);
        await completeKey(idempotency, tx, accountId, key, { orderId: order.id });
        // The cause, then its effect on the pet.
        const recorded = [orderEvent(order), petStatusChangedEvent(changed, 'available')];
        await events.append(tx, accountId, recorded, createdAt);
        return { order, recorded };
      }),
    );
    deps.published?.(recorded.map((event) => event.type));
    return order;
  }

  /** The order and its pet move together if the order is in `m.from`; else the order as it is (unchanged). */
  async function move(accountId: string, id: number, m: OrderMove, updatedAt: string): Promise<{ order: Order; moved: boolean }> {
    const { order, recorded } = await timed('moveOrder', () =>
      db.transaction(async (tx) => {
        const current = await orders.lock(tx, accountId, id);
        if (!current) throw orderNotFound(id);
        if (current.status !== m.from) return { order: current, recorded: [] };
        const order = await orders.setStatus(tx, accountId, id, m.from, m.to, updatedAt);
        const pet = await pets.setStatus(tx, accountId, current.petId, m.petFrom, m.petTo);
        // Only orders move a pet out of pending, so this holds; if not, change nothing.
        if (!order || !pet) throw new Error(`order ${accountId}/${id}: pet ${current.petId} is not ${m.petFrom}`);
        const recorded = [orderEvent(order), petStatusChangedEvent(pet, m.petFrom)];
        await events.append(tx, accountId, recorded, updatedAt);
        return { order, recorded };
      }),
    );
    if (recorded.length > 0) deps.published?.(recorded.map((event) => event.type));
    return { order, moved: recorded.length > 0 };
  }

  return {
    place(accountId: string, petId: number): Promise<Order> {
      return place(accountId, petId, now());
    },

    /** As place, at most once per (account, key); see runIdempotent. */
    async placeIdempotent(accountId: string, petId: number, key: string): Promise<{ order: Order; replayed: boolean }> {
      const { value, replayed } = await runIdempotent({ db, idempotency, clock }, accountId, key, placeOrderRequestHash(petId), {
        replay: async (orderId) => {
          const first = await orders.get(accountId, orderId);
          if (!first) throw new Error(`idempotency key completed with missing order ${orderId}`);
          return first;
        },
        create: (at) => place(accountId, petId, new Date(at).toISOString(), key),
      });
      return { order: value, replayed };
    },

    async get(accountId: string, id: number): Promise<Order> {
      const order = await orders.get(accountId, id);
      if (!order) throw orderNotFound(id);
      return order;
    },

    async list(accountId: string, query: PageRequest<OrderStatus>): Promise<OrderPage> {
      const rows = await orders.list({ accountId, status: query.status, ...pageBounds(cursors, accountId, query) });
      const { items, nextCursor } = pageOf(cursors, accountId, query, rows);
      return { orders: items, nextCursor };
    },

    /** Delivers or cancels a placed order; the order already in that state is returned unchanged. */
    async act(accountId: string, id: number, action: OrderAction): Promise<Order> {
      const m = MOVES[action];
      const { order, moved } = await move(accountId, id, m, now());
      if (moved || order.status === m.to) return order;
      // The message names the move by its target: "it cannot be delivered" / "cancelled".
      throw new InvalidTransitionError(id, order.status, m.to);
    },
  };
}

export type OrderService = ReturnType<typeof createOrderService>;
