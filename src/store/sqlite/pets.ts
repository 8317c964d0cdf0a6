// A pet's status on SQLite, for orders. The read cache hears about a change before the
// change's caller does (the transaction is still open: every other statement of this process
// waits for it, so nothing can read the pet in between and cache it again).
import type { PetStatus } from '../../schemas/index.js';
import type { Sql } from '../core/sql.js';
import type { PetRepository } from '../pets.js';
import { type PetRow, toPet } from '../rows.js';
import type { SqliteDatabase } from './driver.js';
import type { ReadCache } from './read-cache.js';

export function createSqlitePetStatus(_db: SqliteDatabase, cache: ReadCache | undefined): PetRepository {
  return {
    // The transaction holds the write lock: nobody else can change the pet until it ends.
    lockStatus: (tx: Sql, accountId: string, petId: number) =>
      tx.get<{ status: PetStatus | null }>('SELECT status FROM pets WHERE account_id = ? AND id = ?', [accountId, petId]),

    async setStatus(tx, accountId, petId, from, to) {
      const row = await tx.get<PetRow>('UPDATE pets SET status = ? WHERE account_id = ? AND id = ? AND status = ? RETURNING id, name, category_id, status', [
        to, accountId, petId, from,
      ]);
      if (!row) return undefined;
      cache?.petChanged(accountId, petId);
      return toPet(row);
    },
  };
}
