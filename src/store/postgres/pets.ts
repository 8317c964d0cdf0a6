// What PostgreSQL adds to pets: the group commit's batch as one statement. It takes each
// account's ids from its counter once (the row lock is held once per batch, not once per pet,
// which would order that account's creates one commit after another), inserts the pets and,
// with events on, each account's pet.created events as one row of the log (a run): one round
// trip and one commit for the whole batch.
import type { Pet } from '../../schemas/index.js';
import { type PetBackend, type PetColumn, toPet } from '../pets.js';
import { petRunParams } from '../event-log.js';
import { intArrayText } from '../core/dialect.js';
import type { PostgresDatabase } from './driver.js';
import { petRunsInsertSql } from './events.js';

const INPUT = `
  input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[])
      WITH ORDINALITY AS t(account_id, name, category_id, status, created_at, ord)
  ),
  counts AS (
    SELECT account_id, count(*) AS n,
      count(*) FILTER (WHERE status = 'available') AS available, count(*) FILTER (WHERE status = 'pending') AS pending,
      count(*) FILTER (WHERE status = 'sold') AS sold, count(*) FILTER (WHERE status IS NULL) AS unset
    FROM input GROUP BY account_id
  )`;

// The account's counters: its last pet id and its inventory.
const COUNTERS = `last_pet_id = a.last_pet_id + c.n, pets_available = a.pets_available + c.available,
    pets_pending = a.pets_pending + c.pending, pets_sold = a.pets_sold + c.sold, pets_unset = a.pets_unset + c.unset`;

const INSERTED = `
  inserted AS (
    INSERT INTO pets (account_id, id, name, category_id, status, created_at)
    SELECT i.account_id, n.base + row_number() OVER (PARTITION BY i.account_id ORDER BY i.ord), i.name, i.category_id, i.status, i.created_at
    FROM input i JOIN next n ON n.account_id = i.account_id
    RETURNING 1
  )`;

// Each category's pet count (categories.ts); only for accounts that exist (next).
const CATEGORIES = `
  categorized AS (
    INSERT INTO categories (account_id, id, pet_count)
    SELECT i.account_id, i.category_id, count(*) FROM input i JOIN next n ON n.account_id = i.account_id GROUP BY i.account_id, i.category_id
    ON CONFLICT (account_id, id) DO UPDATE SET pet_count = categories.pet_count + excluded.pet_count
    RETURNING 1
  )`;

const RESULT = 'SELECT account_id, base, (SELECT count(*) FROM inserted) AS inserted FROM next';

const WITH_EVENTS = `
  WITH ${INPUT},
  next AS (
    UPDATE accounts a SET ${COUNTERS}, last_event_seq = a.last_event_seq + c.n FROM counts c WHERE a.id = c.account_id
    RETURNING a.id AS account_id, a.last_pet_id - c.n AS base, a.last_event_seq - c.n AS event_base, c.n
  ),
  ${INSERTED},
  ${CATEGORIES},
  ev AS (${petRunsInsertSql('next', 6)})
  ${RESULT}`;

const WITHOUT_EVENTS = `
  WITH ${INPUT},
  next AS (
    UPDATE accounts a SET ${COUNTERS} FROM counts c WHERE a.id = c.account_id
    RETURNING a.id AS account_id, a.last_pet_id - c.n AS base
  ),
  ${INSERTED},
  ${CATEGORIES}
  ${RESULT}`;

const COLUMN_TYPES: Record<PetColumn, string> = { name: 'text', category_id: 'bigint', status: 'text' };

/** writeColumns' statement for these columns: one text per column set, whatever the number of pets. */
const writeColumnsSql = (columns: readonly PetColumn[]) =>
  `UPDATE pets SET ${columns.map((column) => `${column} = u.${column}`).join(', ')} ` +
  `FROM unnest($2::bigint[], ${columns.map((column, i) => `$${i + 3}::${COLUMN_TYPES[column]}[]`).join(', ')}) AS u (id, ${columns.join(', ')}) ` +
  'WHERE pets.account_id = $1 AND pets.id = u.id';

/** A column's new values, as the statement's parameter. */
const columnValues = (column: PetColumn, pets: readonly Pet[]): unknown =>
  column === 'name' ? pets.map((pet) => pet.name) : column === 'category_id' ? intArrayText(pets.map((pet) => pet.categoryId)) : pets.map((pet) => pet.status ?? null);

export function postgresPetBatches(db: PostgresDatabase, events: boolean): PetBackend {
  return {
    // One statement (one round trip) joining the pets to their new values by primary key.
    async writeColumns(tx, accountId, columns, pets) {
      // Only the changed columns' values: each array costs encoding here and parsing there.
      await tx.run(writeColumnsSql(columns), [accountId, intArrayText(pets.map((pet) => pet.id)), ...columns.map((column) => columnValues(column, pets))]);
    },
    async writeBatch(batch) {
      // Its own transaction: a connection lost once it left answers that the outcome is unknown.
      const rows = await db.preparedWrite<{ account_id: string; base: number }>('create_pets', events ? WITH_EVENTS : WITHOUT_EVENTS, [
        batch.map((b) => b.accountId),
        batch.map((b) => b.pet.name),
        batch.map((b) => b.pet.categoryId),
        batch.map((b) => b.pet.status ?? null),
        batch.map((b) => b.createdAt),
        ...(events ? petRunParams(batch) : []),
      ]);
      // The statement numbered each account's pets base + 1, base + 2, … in call order.
      const next = new Map(rows.map((r) => [r.account_id, r.base]));
      return batch.map(({ accountId, pet }): Pet | Error => {
        const base = next.get(accountId);
        // An unknown account has no counter: nothing was written for it.
        if (base === undefined) return new Error(`no account ${accountId}: the pet was not stored`);
        next.set(accountId, base + 1);
        return toPet({ id: base + 1, name: pet.name, category_id: pet.categoryId, status: pet.status ?? null });
      });
    },
  };
}
