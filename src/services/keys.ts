// Keys as a product: create, list, get, roll and revoke an account's keys (over HTTP with a key,
// or from the CLI). The rules: no escalation (a restricted key makes only keys within its own
// scopes, rolls only such keys, and no key outlives the key that made it: the expiry is capped),
// expiresAt within a year, a roll's overlap, and the secret shown only in a create's or roll's
// answer. Each change commits in one transaction; this process forgets a changed key at once,
// the others when the store tells them (PostgreSQL's notification, SQLite's change check).
import type { Clock } from '../clock.js';
import type { Environment } from '../config.js';
import { InsufficientScopeError, InvalidRequestError, NotFoundError } from '../errors.js';
import { type ApiKey, type CreatedApiKey, type NewApiKey, ROLL_OVERLAP_DEFAULT_SECONDS, type Scope } from '../schemas/api-keys.js';
import type { AccountRepository } from '../store/accounts.js';
import type { ApiKeyRecord, ApiKeyRepository } from '../store/api-keys.js';
import type { AuditLogRepository } from '../store/audit-log.js';
import type { SqlDatabase } from '../store/core/sql.js';
import { newKeyRecord } from './api-keys.js';
import { type AuditContext, auditEntry } from './audit.js';
import { type CursorCodec, pageBounds, pageOf } from './cursor.js';
import { mayGrant, missingScopes, normalizeScopes } from './scopes.js';

/** Who asks: a key (over HTTP) or the operator's CLI (no key: no limits but the account's existence). */
export interface KeyCaller {
  accountId: string;
  /** The calling key's scopes and expiry; absent for the CLI. */
  key?: { keyId: string; scopes: readonly Scope[] | null; expiresAt: string | null } | undefined;
  /** Who the audit log names, and the request's id and address. */
  audit: AuditContext;
}

export function publicKey(record: ApiKeyRecord): ApiKey {
  return {
    id: record.id,
    name: record.name,
    scopes: record.scopes,
    environment: record.environment,
    hint: record.hint,
    createdAt: record.createdAt,
    expiresAt: record.expiresAt,
    lastUsedAt: record.lastUsedAt,
    revokedAt: record.revokedAt,
  };
}

/** One calendar year after `now` (what "at most a year" means for expiresAt). */
export function oneYearAfter(now: number): number {
  const date = new Date(now);
  date.setUTCFullYear(date.getUTCFullYear() + 1);
  return date.getTime();
}

export function createKeyService(deps: {
  db: Pick<SqlDatabase, 'transaction'>;
  apiKeys: Pick<ApiKeyRepository, 'insert' | 'find' | 'get' | 'page' | 'lock' | 'revokeIn' | 'expireBy'>;
  auditLog: Pick<AuditLogRepository, 'append'>;
  accounts: Pick<AccountRepository, 'get'>;
  cursors: CursorCodec<string>;
  clock: Clock;
  environment: Environment;
  /** Makes this process forget a key it remembers (the key cache), after a change committed. */
  forget: (keyId: string) => void;
}) {
  const { db, apiKeys, auditLog, accounts, cursors, clock, environment, forget } = deps;
  const iso = (ms: number) => new Date(ms).toISOString();
  const notFound = (id: string) => new NotFoundError(`No API key with id ${id} in your account. List them with GET /v1/api-keys.`);

  /** The expiry a new key gets: the one asked for (checked), capped at the caller's own. */
  function expiryFor(caller: KeyCaller, asked: string | undefined, now: number): string | null {
    if (asked !== undefined) {
      const at = Date.parse(asked);
      if (!(at > now)) throw new InvalidRequestError(`expiresAt ${asked} is not in the future. Leave it out for a key that does not expire.`);
      if (at > oneYearAfter(now)) throw new InvalidRequestError(`expiresAt ${asked} is more than a year away; the latest allowed now is ${iso(oneYearAfter(now))}.`);
    }
    const own = caller.key?.expiresAt ?? null;
    if (own === null) return asked === undefined ? null : iso(Date.parse(asked));
    // A key never outlives the key that made it: capped, not refused (the answer shows the expiry).
    return asked === undefined || Date.parse(asked) > Date.parse(own) ? own : iso(Date.parse(asked));
  }

  function refuseEscalation(caller: KeyCaller, wanted: readonly Scope[] | null, what: string): void {
    if (!caller.key || mayGrant(caller.key.scopes, wanted)) return;
    const missing = missingScopes(caller.key.scopes, wanted);
    throw new InsufficientScopeError(
      missing,
      `This API key cannot ${what}: ${wanted === null ? 'a full-access key can only come from a full-access key' : `it lacks ${missing}`}. A key can only give the scopes it has.`,
    );
  }

  async function accountOf(caller: KeyCaller): Promise<void> {
    if (!caller.key && !(await accounts.get(caller.accountId))) throw new NotFoundError(`No account with id "${caller.accountId}".`);
  }

  return {
    /** A new key in the caller's account and environment; its secret is in this answer only. */
    async create(caller: KeyCaller, input: NewApiKey = {}, keyEnvironment: Environment = environment): Promise<CreatedApiKey> {
      await accountOf(caller);
      const scopes = input.scopes === undefined ? null : normalizeScopes(input.scopes);
      refuseEscalation(caller, scopes, `create a key with ${scopes === null ? 'full access' : scopes.join(', ')}`);
      const now = clock.now();
      const { key, record } = newKeyRecord(caller.accountId, keyEnvironment, { name: input.name ?? null, scopes, expiresAt: expiryFor(caller, input.expiresAt, now) }, now);
      await db.transaction(async (tx) => {
        await apiKeys.insert(tx, record);
        await auditLog.append(tx, caller.accountId, auditEntry(caller.audit, 'api_key.created', { type: 'api_key', id: record.id }, now));
      });
      return { ...publicKey(record), key };
    },

    async list(accountId: string, page: { limit: number; cursor?: string | undefined }): Promise<{ keys: ApiKey[]; nextCursor: string | undefined }> {
      const request = { limit: page.limit, status: undefined, cursor: page.cursor };
      const { afterId, limit } = pageBounds(cursors, accountId, request);
      const rows = await apiKeys.page({ accountId, limit, afterSeq: afterId });
      const { items, nextCursor } = pageOf(cursors, accountId, request, rows, (row) => row.seq);
      return { keys: items.map((row) => publicKey(row.key)), nextCursor };
    },

    /** The account a key belongs to (the operator's CLI names keys by id alone); undefined when there is no such key. */
    async ownerOf(id: string): Promise<string | undefined> {
      return (await apiKeys.find(id))?.accountId;
    },

    async get(accountId: string, id: string): Promise<ApiKey> {
      const record = await apiKeys.get(accountId, id);
      if (!record) throw notFound(id);
      return publicKey(record);
    },

    /**
     * A new key with the old one's name, scopes, environment and expiry (capped at the caller's);
     * the old one keeps working for `overlapSeconds` (never longer than it would have anyway).
     */
    async roll(caller: KeyCaller, id: string, overlapSeconds = ROLL_OVERLAP_DEFAULT_SECONDS): Promise<CreatedApiKey> {
      const now = clock.now();
      const created = await db.transaction(async (tx) => {
        const old = await apiKeys.lock(tx, id);
        if (!old || old.accountId !== caller.accountId) throw notFound(id);
        if (old.revokedAt !== null) throw new InvalidRequestError(`API key ${id} was revoked at ${old.revokedAt}: there is nothing to roll. Create a new key instead.`);
        if (old.expiresAt !== null && Date.parse(old.expiresAt) <= now) {
          throw new InvalidRequestError(`API key ${id} expired at ${old.expiresAt}: there is nothing to roll. Create a new key instead.`);
        }
        refuseEscalation(caller, old.scopes, `roll key ${id}, which has ${old.scopes === null ? 'full access' : old.scopes.join(', ')}`);
        const own = caller.key?.expiresAt ?? null;
        const expiresAt = own !== null && (old.expiresAt === null || Date.parse(old.expiresAt) > Date.parse(own)) ? own : old.expiresAt;
        const made = newKeyRecord(old.accountId, old.environment, { name: old.name, scopes: old.scopes, expiresAt }, now);
        await apiKeys.insert(tx, made.record);
        await apiKeys.expireBy(tx, id, iso(now + overlapSeconds * 1000));
        await auditLog.append(tx, old.accountId, auditEntry(caller.audit, 'api_key.rolled', { type: 'api_key', id }, now, made.record.id));
        return made;
      });
      forget(id);
      return { ...publicKey(created.record), key: created.key };
    },

    /** Revokes one of the caller's account's keys (itself too); refused at once everywhere. */
    async revoke(caller: KeyCaller, id: string): Promise<ApiKey> {
      const now = clock.now();
      const record = await db.transaction(async (tx) => {
        const revoked = await apiKeys.revokeIn(tx, caller.accountId, id, iso(now));
        // Revoking again changes nothing, and records nothing.
        if (revoked && revoked.revokedAt === iso(now)) {
          await auditLog.append(tx, caller.accountId, auditEntry(caller.audit, 'api_key.revoked', { type: 'api_key', id }, now));
        }
        return revoked;
      });
      if (!record) throw notFound(id);
      forget(id);
      return publicKey(record);
    },
  };
}

export type KeyService = ReturnType<typeof createKeyService>;
