// Orders on SQLite. Each call is one synchronous transaction (IMMEDIATE: under the write lock,
// so the pet check and both writes cannot interleave with another process's), and the read
// cache hears about the pet's new status before any caller does.
import type Database from 'better-sqlite3';
import type { PetStatus } from '../../schemas/index.js';
import { KEY_IN_FLIGHT, ORDER_COLUMNS, type OrderRow, orderEvent, type PetRow, petStatusChangedEvent, toOrder, toPet } from '../rows.js';
import type { ListOrdersQuery, MoveOrderResult, OrderRepository, PlaceOrderResult } from '../types.js';
import type { ReadCache } from './read-cache.js';
import type { SqliteEventWriter } from './events.js';

export interface SqliteContext {
  db: Database.Database;
  /** A cached prepared statement. */
  stmt<P extends unknown[], R>(sql: string): Database.Statement<P, R>;
  cache: ReadCache | undefined;
  /** The first of `count` new ids from the account's counter (inside the caller's transaction). */
  nextIds(counter: IdCounter, accountId: string, count: number): number;
  /** Writes events in the caller's transaction (the outbox; see events.ts). */
  writeEvents: SqliteEventWriter;
}

export type IdCounter = 'last_pet_id' | 'last_order_id' | 'last_message_seq' | 'last_event_seq' | 'last_endpoint_seq';

export function createSqliteOrders({ db, stmt, cache, nextIds, writeEvents }: SqliteContext): OrderRepository {
  const orderById = (accountId: string, id: number) =>
    stmt<[string, number], OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = ? AND id = ?`).get(accountId, id);
  /** The pet's status becomes `to` if it is `from`; the pet after the change, or undefined. */
  const setPetStatus = (accountId: string, petId: number, from: PetStatus, to: PetStatus) => {
    const row = stmt<[string, string, number, string], PetRow>(
      'UPDATE pets SET status = ? WHERE account_id = ? AND id = ? AND status = ? RETURNING id, name, category_id, status',
    ).get(to, accountId, petId, from);
    return row && toPet(row);
  };

  const place = db.transaction((accountId: string, petId: number, createdAt: string, key: string | undefined): PlaceOrderResult => {
    const pet = stmt<[string, number], { status: PetStatus | null }>('SELECT status FROM pets WHERE account_id = ? AND id = ?').get(accountId, petId);
    if (!pet) return { outcome: 'pet_not_found' };
    if (pet.status !== 'available') return { outcome: 'pet_not_available', petStatus: pet.status ?? undefined };
    const changed = setPetStatus(accountId, petId, 'available', 'pending')!;
    const row = stmt<unknown[], OrderRow>(
      `INSERT INTO orders (account_id, id, pet_id, status, created_at, updated_at) VALUES (?, ?, ?, 'placed', ?, ?) RETURNING ${ORDER_COLUMNS}`,
    ).get(accountId, nextIds('last_order_id', accountId, 1), petId, createdAt, createdAt)!;
    if (key !== undefined) {
      const done = stmt<[number, string, string], unknown>(
        `UPDATE idempotency_keys SET order_id = ? WHERE account_id = ? AND key = ? AND ${KEY_IN_FLIGHT}`,
      ).run(row.id, accountId, key);
      // Another request completed this key meanwhile: undo ours, never a duplicate.
      if (done.changes !== 1) throw new IdempotencyRace();
    }
    const order = toOrder(row);
    // The cause, then its effect on the pet.
    writeEvents.write(accountId, [orderEvent(order), petStatusChangedEvent(changed, 'available')], createdAt);
    return { outcome: 'placed', order };
  });

  const move = db.transaction((accountId: string, id: number, m: Parameters<OrderRepository['moveOrder']>[2], updatedAt: string): MoveOrderResult => {
    const current = orderById(accountId, id);
    if (!current) return { outcome: 'not_found' };
    if (current.status !== m.from) return { outcome: 'not_moved', order: toOrder(current) };
    const row = stmt<[string, string, string, number], OrderRow>(
      `UPDATE orders SET status = ?, updated_at = ? WHERE account_id = ? AND id = ? RETURNING ${ORDER_COLUMNS}`,
    ).get(m.to, updatedAt, accountId, id)!;
    const pet = setPetStatus(accountId, current.pet_id, m.petFrom, m.petTo);
    // Only orders move a pet out of pending, so this holds; if not, change nothing.
    if (!pet) throw new Error(`order ${accountId}/${id}: pet ${current.pet_id} is not ${m.petFrom}`);
    const order = toOrder(row);
    writeEvents.write(accountId, [orderEvent(order), petStatusChangedEvent(pet, m.petFrom)], updatedAt);
    return { outcome: 'moved', order };
  });

  return {
    async placeOrder(accountId, petId, createdAt, idempotencyKey) {
      try {
        return place.immediate(accountId, petId, createdAt, idempotencyKey);
      } catch (error) {
        if (error instanceof IdempotencyRace) return { outcome: 'idempotency_race' };
        throw error;
      } finally {
        cache?.petChanged(accountId, petId);
      }
    },

    async getOrder(accountId, id) {
      const row = orderById(accountId, id);
      return row && toOrder(row);
    },

    async listOrders({ accountId, limit, status, afterId = 0 }: ListOrdersQuery) {
      const rows = status
        ? stmt<[string, string, number, number], OrderRow>(
            `SELECT ${ORDER_COLUMNS} FROM orders INDEXED BY orders_by_account_status WHERE account_id = ? AND status = ? AND id > ? ORDER BY id LIMIT ?`,
          ).all(accountId, status, afterId, limit)
        : stmt<[string, number, number], OrderRow>(
            `SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?`,
          ).all(accountId, afterId, limit);
      return rows.map(toOrder);
    },

    async moveOrder(accountId, id, m, updatedAt) {
      const result = move.immediate(accountId, id, m, updatedAt);
      if (result.outcome === 'moved') cache?.petChanged(accountId, result.order.petId);
      return result;
    },
  };
}

/** Thrown inside a transaction to roll it back when an idempotency key was completed by someone else. */
export class IdempotencyRace extends Error {}
