// A pet's status on PostgreSQL, for orders: the row is locked (FOR UPDATE) before its status
// is checked, so of concurrent orders for one pet exactly one sees it `available`.
import type { PetStatus } from '../../schemas/index.js';
import type { Sql } from '../core/sql.js';
import type { PetRepository } from '../pets.js';
import { type PetRow, toPet } from '../rows.js';
import type { PostgresDatabase } from './driver.js';

export function createPostgresPetStatus(_db: PostgresDatabase): PetRepository {
  return {
    lockStatus: (tx: Sql, accountId: string, petId: number) =>
      tx.get<{ status: PetStatus | null }>('SELECT status FROM pets WHERE account_id = $1 AND id = $2 FOR UPDATE', [accountId, petId]),

    async setStatus(tx, accountId, petId, from, to) {
      const row = await tx.get<PetRow>('UPDATE pets SET status = $1 WHERE account_id = $2 AND id = $3 AND status = $4 RETURNING id, name, category_id, status', [
        to, accountId, petId, from,
      ]);
      return row && toPet(row);
    },
  };
}
