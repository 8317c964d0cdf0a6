// Orders as the store keeps them: one row per order, numbered per account. The state machine
// (which moves exist, what they do to the pet) is the service's (src/services/orders.ts); a
// repository reads and writes rows, the writes inside the transaction the service opens.
import type { Order, OrderStatus } from '../schemas/index.js';
import type { Sql } from './core/sql.js';
import type { Dialect } from './core/dialect.js';

export interface ListOrdersQuery {
  accountId: string;
  limit: number;
  status?: OrderStatus | undefined;
  /** Keyset position: only orders with id greater than this. */
  afterId?: number | undefined;
}

export interface OrderRow {
  id: number;
  pet_id: number;
  status: OrderStatus;
  created_at: string;
  updated_at: string;
}

export const ORDER_COLUMNS = 'id, pet_id, status, created_at, updated_at';

export const toOrder = (row: OrderRow): Order => ({
  id: row.id,
  petId: row.pet_id,
  status: row.status,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** Orders (src/store/<backend>/orders.ts). Every call is scoped by account. */
export interface OrderRepository {
  get(accountId: string, id: number): Promise<Order | undefined>;
  /** Orders of one account in ascending id order, at most `limit`. */
  list(query: ListOrdersQuery): Promise<readonly Order[]>;
  /** A new order `placed` for the pet, with the account's next order id. */
  insert(tx: Sql, accountId: string, petId: number, createdAt: string): Promise<Order>;
  /** The order, locked until `tx` ends (concurrent moves of it decide one after another). */
  lock(tx: Sql, accountId: string, id: number): Promise<Order | undefined>;
  /** Whether the pet has a `placed` order (the pet is locked by the caller: none can appear meanwhile). */
  hasPlaced(tx: Sql, accountId: string, petId: number): Promise<boolean>;
  /** Which of these pets have a placed order. */
  placedAmong(tx: Sql, accountId: string, petIds: readonly number[]): Promise<Set<number>>;
  /** The order becomes `to` if it is `from`; the order after the change, or undefined. */
  setStatus(tx: Sql, accountId: string, id: number, from: OrderStatus, to: OrderStatus, updatedAt: string): Promise<Order | undefined>;
}

/** OrderRepository.placedAmong, the same SQL on both backends. */
export function placedOrdersAmong(dialect: Dialect): OrderRepository['placedAmong'] {
  return async (tx, accountId, petIds) => {
    if (petIds.length === 0) return new Set();
    const among = dialect.anyId('pet_id', petIds);
    const rows = await tx.all<{ pet_id: number }>(`SELECT pet_id FROM orders WHERE account_id = ? AND status = 'placed' AND ${among.sql}`, [accountId, ...among.params]);
    return new Set(rows.map((row) => Number(row.pet_id)));
  };
}

/** OrderRepository.hasPlaced, the same SQL on both backends (orders_one_placed_per_pet serves it). */
export async function hasPlacedOrder(tx: Sql, accountId: string, petId: number): Promise<boolean> {
  return (await tx.get("SELECT 1 AS placed FROM orders WHERE account_id = ? AND pet_id = ? AND status = 'placed'", [accountId, petId])) !== undefined;
}
