// Accounts, and the per-account counters every resource numbers its rows from.
import type { Sql } from './core/sql.js';

export interface Account {
  id: string;
  name: string;
  createdAt: string;
}

export interface AccountRow {
  id: string;
  name: string;
  created_at: string;
}

export const toAccount = (row: AccountRow): Account => ({ id: row.id, name: row.name, createdAt: row.created_at });

/** The account's counters: each resource's ids are numbered per account. */
export type IdCounter = 'last_pet_id' | 'last_order_id' | 'last_message_seq' | 'last_event_seq' | 'last_endpoint_seq' | 'last_key_seq' | 'last_audit_seq';

export interface AccountRepository {
  create(account: Account): Promise<Account>;
  get(id: string): Promise<Account | undefined>;
  /** The sequence of the account's last committed event (0 when none): where a stream "from now" starts. */
  lastEventSeq(id: string): Promise<number>;
}

/**
 * The first of `count` new ids from the account's counter, in the caller's transaction: its
 * row lock (PostgreSQL) or the write lock (SQLite) orders the account's concurrent writers. The
 * counter never goes back within a commit, so an id is never handed out twice.
 */
export async function nextIds(tx: Sql, counter: IdCounter, accountId: string, count: number): Promise<number> {
  const row = await tx.get<{ last: number }>(`UPDATE accounts SET ${counter} = ${counter} + ? WHERE id = ? RETURNING ${counter} AS last`, [count, accountId]);
  if (!row) throw new Error(`no account ${accountId}`);
  return row.last - count + 1;
}

export function createAccountRepository(db: Sql): AccountRepository {
  return {
    async create(account) {
      await db.run('INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)', [account.id, account.name, account.createdAt]);
      return account;
    },
    async get(id) {
      const row = await db.get<AccountRow>('SELECT id, name, created_at FROM accounts WHERE id = ?', [id]);
      return row && toAccount(row);
    },
    async lastEventSeq(id) {
      const row = await db.get<{ last: number | string }>('SELECT last_event_seq AS last FROM accounts WHERE id = ?', [id]);
      return Number(row?.last ?? 0);
    },
  };
}
