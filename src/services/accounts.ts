import type { Clock } from '../clock.js';
import { InvalidRequestError } from '../errors.js';
import type { Account, AccountRepository } from '../store/accounts.js';
import { newAccountId } from './ids.js';

export function createAccountService(deps: { accounts: AccountRepository; clock: Clock }) {
  const { accounts, clock } = deps;
  return {
    async create(name: string): Promise<Account> {
      const trimmed = name.trim();
      if (trimmed.length === 0 || trimmed.length > 255) {
        throw new InvalidRequestError('Account name must be 1 to 255 characters.');
      }
      return accounts.create({ id: newAccountId(), name: trimmed, createdAt: new Date(clock.now()).toISOString() });
    },
    get: (id: string) => accounts.get(id),
  };
}

export type AccountService = ReturnType<typeof createAccountService>;
