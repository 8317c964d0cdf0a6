// `petstore keys …`: the operator's key commands, through the same key service as the API (the
// audit log names the CLI as the actor). The CLI has no calling key: it may make any key.
import { NotFoundError } from '../errors.js';
import { UsageError } from './usage.js';
import type { Environment } from '../config.js';
import { ROLL_OVERLAP_MAX_SECONDS, SCOPES, type Scope } from '../schemas/api-keys.js';
import type { Services } from '../services/index.js';
import { CLI_ACTOR } from '../services/audit.js';
import type { ApiKey } from '../schemas/api-keys.js';

export class KeyUsageError extends UsageError {}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** Seconds in a duration like `30d`, `12h`, `90m`, `45s`, `2w` (or a bare number of seconds). */
export function parseDuration(raw: string, flag: string): number {
  const match = /^([0-9]{1,9})([smhdw]?)$/.exec(raw.trim());
  if (!match) throw new KeyUsageError(`${flag} must be a duration like 30d, 12h, 90m or 45s, got "${raw}".`);
  return Number(match[1]) * UNITS[match[2] || 's']!;
}

/** The scopes of `--scopes pets:read,orders:read`. */
export function parseScopes(raw: string): Scope[] {
  const words = raw.split(',').map((word) => word.trim()).filter(Boolean);
  const unknown = words.filter((word) => !(SCOPES as readonly string[]).includes(word));
  if (words.length === 0 || unknown.length > 0) {
    throw new KeyUsageError(`--scopes must be a comma-separated list of ${SCOPES.join(', ')}${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}.`);
  }
  return [...new Set(words as Scope[])];
}

const describe = (k: ApiKey & { accountId?: string }) =>
  [
    k.id,
    k.environment.padEnd(10),
    k.hint,
    k.name === null ? '' : JSON.stringify(k.name),
    k.scopes === null ? 'full access' : k.scopes.join(','),
    `created ${k.createdAt}`,
    k.revokedAt ? `revoked ${k.revokedAt}` : k.expiresAt ? `expires ${k.expiresAt}` : 'never expires',
    `last used ${k.lastUsedAt ?? 'never'}`,
  ]
    .filter(Boolean)
    .join('  ');

export interface KeyCommandOptions {
  account?: string | undefined;
  env?: Environment | undefined;
  scopes?: string | undefined;
  expiresIn?: string | undefined;
  name?: string | undefined;
  keyId?: string | undefined;
}

/** What a key command prints: the JSON value and the text. */
export async function runKeyCommand(services: Services, command: 'keys create' | 'keys list' | 'keys roll' | 'keys revoke', o: KeyCommandOptions, now: number): Promise<{ value: unknown; text: string }> {
  const ownerOf = async (keyId: string) => {
    const owner = await services.keys.ownerOf(keyId);
    if (owner === undefined) throw new NotFoundError(`No API key with id "${keyId}".`);
    return owner;
  };
  switch (command) {
    case 'keys create': {
      const expiresIn = o.expiresIn === undefined ? undefined : parseDuration(o.expiresIn, '--expires-in');
      // At most a year: the service's rule (and message).
      if (expiresIn === 0) throw new KeyUsageError('--expires-in must be more than 0.');
      const input = {
        ...(o.name === undefined ? {} : { name: o.name }),
        ...(o.scopes === undefined ? {} : { scopes: parseScopes(o.scopes) }),
        ...(expiresIn === undefined ? {} : { expiresAt: new Date(now + expiresIn * 1000).toISOString() }),
      };
      const key = await services.keys.create({ accountId: o.account!, audit: CLI_ACTOR }, input, o.env);
      const text = `Created ${key.environment} key ${key.id} for ${o.account} (${key.scopes === null ? 'full access' : key.scopes.join(', ')}${key.expiresAt ? `, expires ${key.expiresAt}` : ''}).\n\n  ${key.key}\n\nThis is the only time the key is shown. Store it safely.`;
      return { value: { ...key, accountId: o.account }, text };
    }
    case 'keys list': {
      const keys = await services.apiKeys.list(o.account!);
      return { value: keys, text: keys.length ? keys.map(describe).join('\n') : 'No keys.' };
    }
    case 'keys roll': {
      const overlap = o.expiresIn === undefined ? undefined : parseDuration(o.expiresIn, '--expires-in');
      if (overlap !== undefined && overlap > ROLL_OVERLAP_MAX_SECONDS) throw new KeyUsageError('--expires-in must be at most 7d for a roll.');
      const accountId = await ownerOf(o.keyId!);
      const key = await services.keys.roll({ accountId, audit: CLI_ACTOR }, o.keyId!, overlap);
      const old = await services.keys.get(accountId, o.keyId!);
      const text = `Rolled ${o.keyId}: it stops working at ${old.expiresAt}. New key ${key.id}:\n\n  ${key.key}\n\nThis is the only time the key is shown. Store it safely.`;
      return { value: { ...key, accountId }, text };
    }
    case 'keys revoke': {
      const accountId = await ownerOf(o.keyId!);
      const key = await services.keys.revoke({ accountId, audit: CLI_ACTOR }, o.keyId!);
      return { value: { ...key, accountId }, text: `Revoked key ${key.id} at ${key.revokedAt}.` };
    }
  }
}
