// Orders on PostgreSQL. Each call that writes is one transaction: the pet's row is locked
// (FOR UPDATE) before its status is checked, so of concurrent orders for one pet exactly one
// sees it `available`, and the order and the pet change together or not at all.
import type { PoolClient, QueryResultRow } from 'pg';
import type { PetStatus } from '../../schemas/index.js';
import { KEY_IN_FLIGHT, ORDER_COLUMNS, type OrderRow, orderEvent, type PetRow, petStatusChangedEvent, toOrder, toPet } from '../rows.js';
import type { ListOrdersQuery, OrderRepository, PlaceOrderResult } from '../types.js';
import type { PostgresEventWriter } from './events.js';

export interface PostgresContext {
  query<R extends QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  /** Runs `work` in one transaction; `rollback(value)` ends it with ROLLBACK and resolves with value. */
  transaction<T>(work: (client: PoolClient, rollback: (value: T) => never) => Promise<T>): Promise<T>;
  /** Writes events in the caller's transaction (the outbox; see events.ts). */
  writeEvents: PostgresEventWriter;
}

export function createPostgresOrders({ query, transaction, writeEvents }: PostgresContext): OrderRepository {
  return {
    placeOrder(accountId, petId, createdAt, idempotencyKey) {
      return transaction<PlaceOrderResult>(async (client, rollback) => {
        const { rows: pets } = await client.query<{ status: PetStatus | null }>(
          'SELECT status FROM pets WHERE account_id = $1 AND id = $2 FOR UPDATE',
          [accountId, petId],
        );
        const pet = pets[0];
        if (!pet) return { outcome: 'pet_not_found' };
        if (pet.status !== 'available') return { outcome: 'pet_not_available', petStatus: pet.status ?? undefined };
        // One statement: the pet becomes pending, the account's next order id, the order.
        const { rows } = await client.query<OrderRow & { pet_name: string; pet_category_id: number }>(
          `WITH pet AS (UPDATE pets SET status = 'pending' WHERE account_id = $1 AND id = $2 RETURNING name, category_id),
                next AS (UPDATE accounts SET last_order_id = last_order_id + 1 WHERE id = $1 RETURNING last_order_id),
                placed AS (
                  INSERT INTO orders (account_id, id, pet_id, status, created_at, updated_at)
                  SELECT $1, last_order_id, $2, 'placed', $3, $3 FROM next RETURNING ${ORDER_COLUMNS}
                )
           SELECT placed.*, pet.name AS pet_name, pet.category_id AS pet_category_id FROM placed, pet`,
          [accountId, petId, createdAt],
        );
        const row = rows[0]!;
        const order = toOrder(row);
        const changed = toPet({ id: petId, name: row.pet_name, category_id: row.pet_category_id, status: 'pending' });
        if (idempotencyKey !== undefined) {
          const done = await client.query(
            `UPDATE idempotency_keys SET order_id = $1 WHERE account_id = $2 AND key = $3 AND ${KEY_IN_FLIGHT}`,
            [order.id, accountId, idempotencyKey],
          );
          // Another request completed this key meanwhile: undo ours, never a duplicate.
          if (done.rowCount !== 1) rollback({ outcome: 'idempotency_race' });
        }
        // The cause, then its effect on the pet.
        await writeEvents(client, accountId, [orderEvent(order), petStatusChangedEvent(changed, 'available')], createdAt);
        return { outcome: 'placed', order };
      });
    },

    async getOrder(accountId, id) {
      if (!Number.isSafeInteger(id)) return undefined;
      const [row] = await query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = $1 AND id = $2`, [accountId, id]);
      return row && toOrder(row);
    },

    async listOrders({ accountId, limit, status, afterId = 0 }: ListOrdersQuery) {
      const rows = status
        ? await query<OrderRow>(
            `SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = $1 AND status = $2 AND id > $3 ORDER BY id LIMIT $4`,
            [accountId, status, Math.floor(afterId), limit],
          )
        : await query<OrderRow>(
            `SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
            [accountId, Math.floor(afterId), limit],
          );
      return rows.map(toOrder);
    },

    moveOrder(accountId, id, move, updatedAt) {
      return transaction(async (client) => {
        const { rows } = await client.query<OrderRow>(
          `SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = $1 AND id = $2 FOR UPDATE`,
          [accountId, id],
        );
        const current = rows[0];
        if (!current) return { outcome: 'not_found' as const };
        if (current.status !== move.from) return { outcome: 'not_moved' as const, order: toOrder(current) };
        const pet = await client.query<PetRow>('UPDATE pets SET status = $1 WHERE account_id = $2 AND id = $3 AND status = $4 RETURNING id, name, category_id, status', [
          move.petTo, accountId, current.pet_id, move.petFrom,
        ]);
        // Only orders move a pet out of pending, so this holds; if not, change nothing.
        if (pet.rowCount !== 1) throw new Error(`order ${accountId}/${id}: pet ${current.pet_id} is not ${move.petFrom}`);
        const { rows: moved } = await client.query<OrderRow>(
          `UPDATE orders SET status = $1, updated_at = $2 WHERE account_id = $3 AND id = $4 RETURNING ${ORDER_COLUMNS}`,
          [move.to, updatedAt, accountId, id],
        );
        const order = toOrder(moved[0]!);
        await writeEvents(client, accountId, [orderEvent(order), petStatusChangedEvent(toPet(pet.rows[0]!), move.petFrom)], updatedAt);
        return { outcome: 'moved' as const, order };
      });
    },
  };
}
