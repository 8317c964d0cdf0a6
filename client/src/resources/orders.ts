// `petstore.orders`: the orders of the API key's account, how a pet moves between statuses.
// Experimental: every order operation is `x-stability: experimental` in the served document.
//
//   pet available ──place──▶ placed (pet pending) ──deliver──▶ delivered (pet sold)
//                                                 └──cancel───▶ cancelled (pet available)
import type { Core, Page, WriteOptions } from '../core.js';
import type { components, operations } from '../generated/petstore.js';

/** @experimental An order for one pet (`x-stability: experimental`: the shape may still change). */
export type Order = components['schemas']['Order'];
/** @experimental What {@link Orders.place} sends: the pet to order, one of yours and `available`. */
export type NewOrder = components['schemas']['NewOrder'];
/** @experimental `placed` (the pet is `pending`), `delivered` (sold) or `cancelled` (available again); the last two are final. */
export type OrderStatus = components['schemas']['OrderStatus'];
/** @experimental The query of `listOrders`: `limit` (1–100, default 20), `status`, `cursor`. */
export type ListOrdersParams = NonNullable<operations['listOrders']['parameters']['query']>;
/** @experimental As {@link ListOrdersParams}, without the cursor: `limit` is the size of each page fetched. */
export type ListAllOrdersParams = Omit<ListOrdersParams, 'cursor'>;

const ORDERS = '/store/orders';

/**
 * The orders of the key's account (`/v1/store/orders`).
 * @experimental Every operation is `x-stability: experimental` in the API document: its shape
 * may still change in a minor release.
 */
export class Orders {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * One page of orders in ascending `id` order (`listOrders`); pass `nextCursor` back as `cursor` for the next.
   * @experimental `x-stability: experimental`.
   */
  list(params: ListOrdersParams = {}): Promise<Page<Order>> {
    return this.#core.page<Order>(ORDERS, { limit: params.limit, status: params.status, cursor: params.cursor });
  }

  /**
   * Every order (optionally only those with `status`), fetching page after page as you iterate.
   * @experimental `x-stability: experimental`.
   */
  listAll(params: ListAllOrdersParams = {}): AsyncIterableIterator<Order> {
    return this.#core.all<Order>(ORDERS, { limit: params.limit, status: params.status });
  }

  /**
   * Orders one of your `available` pets (`placeOrder`); the pet becomes `pending` with it. Safe to
   * retry: see {@link WriteOptions.idempotencyKey}. Fails with 404 `not_found` for a pet that is
   * not yours and 409 `pet_not_available` for a pet that is not `available`.
   * @experimental `x-stability: experimental`.
   */
  async place(newOrder: NewOrder, options: WriteOptions = {}): Promise<Order> {
    return (await this.#core.request<Order>({ method: 'POST', path: ORDERS, body: newOrder, idempotencyKey: options.idempotencyKey })).body;
  }

  /**
   * One order by id, as it is now (`getOrder`).
   * @experimental `x-stability: experimental`.
   */
  async get(id: number): Promise<Order> {
    return (await this.#core.request<Order>({ method: 'GET', path: orderPath(id) })).body;
  }

  /**
   * Delivers a `placed` order (`deliverOrder`): it becomes `delivered` and its pet `sold`. Safe to
   * retry: an order already `delivered` comes back unchanged. Fails with 409 `invalid_transition`
   * for a `cancelled` order.
   * @experimental `x-stability: experimental`.
   */
  async deliver(id: number): Promise<Order> {
    return this.#move(id, 'deliver');
  }

  /**
   * Cancels a `placed` order (`cancelOrder`): it becomes `cancelled` and its pet `available` again.
   * Safe to retry: an order already `cancelled` comes back unchanged. Fails with 409
   * `invalid_transition` for a `delivered` order.
   * @experimental `x-stability: experimental`.
   */
  async cancel(id: number): Promise<Order> {
    return this.#move(id, 'cancel');
  }

  // No body. The core sends an Idempotency-Key with it as with every write; the server does not
  // use it here: a repeated move is safe because asking for the state the order is in is a no-op.
  async #move(id: number, action: 'deliver' | 'cancel'): Promise<Order> {
    return (await this.#core.request<Order>({ method: 'POST', path: `${orderPath(id)}/${action}` })).body;
  }
}

function orderPath(id: number): string {
  return `${ORDERS}/${encodeURIComponent(String(id))}`;
}
