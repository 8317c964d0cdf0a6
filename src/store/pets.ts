// Pets as orders need them: the status of one pet, read under a lock and changed by
// compare-and-set, inside the transaction the order service opens.
// (The pets repository's other methods are still the Store's flat ones.)
import type { Pet, PetStatus } from '../schemas/index.js';
import type { Sql } from './core/sql.js';

export interface PetRepository {
  /** The pet's status (null: it has none), its row locked until `tx` ends; undefined when there is no such pet. */
  lockStatus(tx: Sql, accountId: string, petId: number): Promise<{ status: PetStatus | null } | undefined>;
  /** The pet's status becomes `to` if it is `from`; the pet after the change, or undefined. */
  setStatus(tx: Sql, accountId: string, petId: number, from: PetStatus, to: PetStatus): Promise<Pet | undefined>;
}
