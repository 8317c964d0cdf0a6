// Orders on PostgreSQL: SQL only (the rules are the service's). Rows a transaction means to
// change are locked first (FOR UPDATE), so concurrent moves of one order decide one at a time.
import type { Sql } from '../core/sql.js';
import { hasPlacedOrder, placedOrdersAmong, ORDER_COLUMNS, type OrderRepository, type OrderRow, toOrder } from '../orders.js';
import type { PostgresDatabase } from './driver.js';
import { postgresDialect } from '../core/dialect.js';

export function createPostgresOrders(db: PostgresDatabase): OrderRepository {
  const byId = async (sql: Sql, accountId: string, id: number, lock = '') => {
    // A bigint parameter rejects fractions; no order has such an id (SQLite answers undefined too).
    if (!Number.isSafeInteger(id)) return undefined;
    const row = await sql.get<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = $1 AND id = $2${lock}`, [accountId, id]);
    return row && toOrder(row);
  };

  return {
    get: (accountId, id) => byId(db, accountId, id),

    async list({ accountId, limit, status, afterId = 0 }) {
      // Integer ids: "id > 1.5" equals "id > 1".
      const after = Math.floor(afterId);
      const rows = status
        ? await db.all<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = $1 AND status = $2 AND id > $3 ORDER BY id LIMIT $4`, [
            accountId, status, after, limit,
          ])
        : await db.all<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`, [accountId, after, limit]);
      return rows.map(toOrder);
    },

    async insert(tx, accountId, petId, createdAt) {
      // One statement: the account's next order id (its row lock orders the account's orders), the order.
      const row = await tx.get<OrderRow>(
        `WITH next AS (UPDATE accounts SET last_order_id = last_order_id + 1 WHERE id = $1 RETURNING last_order_id)
         INSERT INTO orders (account_id, id, pet_id, status, created_at, updated_at)
         SELECT $1, last_order_id, $2, 'placed', $3, $3 FROM next RETURNING ${ORDER_COLUMNS}`,
        [accountId, petId, createdAt],
      );
      if (!row) throw new Error(`no account ${accountId}: the order was not stored`);
      return toOrder(row);
    },

    lock: (tx, accountId, id) => byId(tx, accountId, id, ' FOR UPDATE'),

    hasPlaced: hasPlacedOrder,
    placedAmong: placedOrdersAmong(postgresDialect),

    async setStatus(tx, accountId, id, from, to, updatedAt) {
      const row = await tx.get<OrderRow>(
        `UPDATE orders SET status = $1, updated_at = $2 WHERE account_id = $3 AND id = $4 AND status = $5 RETURNING ${ORDER_COLUMNS}`,
        [to, updatedAt, accountId, id, from],
      );
      return row && toOrder(row);
    },
  };
}
