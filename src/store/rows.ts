// Row shapes and mappers shared by both backends: the tables have the same columns, so a
// row reads the same way from SQLite and PostgreSQL.
import type { Order, OrderStatus, Pet, PetStatus } from '../schemas/index.js';
import type { ApiKeyRecord } from './types.js';

export interface PetRow {
  id: number;
  name: string;
  category_id: number;
  status: PetStatus | null;
}

export interface OrderRow {
  id: number;
  pet_id: number;
  status: OrderStatus;
  created_at: string;
  updated_at: string;
}

export const ORDER_COLUMNS = 'id, pet_id, status, created_at, updated_at';

export function toOrder(row: OrderRow): Order {
  return { id: row.id, petId: row.pet_id, status: row.status, createdAt: row.created_at, updatedAt: row.updated_at };
}

export interface KeyRow {
  id: string;
  account_id: string;
  environment: 'production' | 'staging';
  key_hash: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

/** `status` NULL becomes an absent property, never `null`. */
export function toPet(row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, categoryId: row.category_id };
  if (row.status !== null) pet.status = row.status;
  return pet;
}

export function toKey(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    environment: row.environment,
    keyHash: row.key_hash,
    hint: row.hint,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

/** One versioned schema change; each backend keeps its own append-only list. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
