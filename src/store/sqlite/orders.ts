// Orders on SQLite: SQL only (the rules are the service's). A transaction holds the write
// lock, so what it reads stays as read until it ends.
import type { Sql } from '../core/sql.js';
import { hasPlacedOrder, placedOrdersAmong, ORDER_COLUMNS, type OrderRepository, type OrderRow, toOrder } from '../orders.js';
import { nextIds } from '../accounts.js';
import type { SqliteDatabase } from './driver.js';
import { sqliteDialect } from '../core/dialect.js';

const BY_ID = `SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = ? AND id = ?`;

export function createSqliteOrders(db: SqliteDatabase): OrderRepository {
  const byId = async (sql: Sql, accountId: string, id: number) => {
    const row = await sql.get<OrderRow>(BY_ID, [accountId, id]);
    return row && toOrder(row);
  };

  return {
    get: (accountId, id) => byId(db, accountId, id),

    async list({ accountId, limit, status, afterId = 0 }) {
      // INDEXED BY: the planner may otherwise take the primary key and filter by status.
      const rows = status
        ? await db.all<OrderRow>(
            `SELECT ${ORDER_COLUMNS} FROM orders INDEXED BY orders_by_account_status WHERE account_id = ? AND status = ? AND id > ? ORDER BY id LIMIT ?`,
            [accountId, status, afterId, limit],
          )
        : await db.all<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?`, [accountId, afterId, limit]);
      return rows.map(toOrder);
    },

    async insert(tx, accountId, petId, createdAt) {
      const id = await nextIds(tx, 'last_order_id', accountId, 1);
      const row = await tx.get<OrderRow>(
        `INSERT INTO orders (account_id, id, pet_id, status, created_at, updated_at) VALUES (?, ?, ?, 'placed', ?, ?) RETURNING ${ORDER_COLUMNS}`,
        [accountId, id, petId, createdAt, createdAt],
      );
      return toOrder(row!);
    },

    // The transaction's write lock is the lock.
    lock: (tx, accountId, id) => byId(tx, accountId, id),
    hasPlaced: hasPlacedOrder,
    placedAmong: placedOrdersAmong(sqliteDialect),

    async setStatus(tx, accountId, id, from, to, updatedAt) {
      const row = await tx.get<OrderRow>(
        `UPDATE orders SET status = ?, updated_at = ? WHERE account_id = ? AND id = ? AND status = ? RETURNING ${ORDER_COLUMNS}`,
        [to, updatedAt, accountId, id, from],
      );
      return row && toOrder(row);
    },
  };
}
