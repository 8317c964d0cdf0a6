// API keys: `psk_live_…` (production) or `psk_test_…` (staging), 30 random base62
// characters (≈178 bits) and a 6-character CRC32 checksum, like GitHub's tokens.
// The checksum rejects typos and fakes without a store lookup; only a SHA-256 hash
// is stored (the key is high-entropy, so a slow hash adds nothing).
import { createHash, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { Clock } from '../clock.js';
import type { Environment } from '../config.js';
import { NotFoundError, UnauthorizedError } from '../errors.js';
import type { AccountRepository } from '../store/accounts.js';
import type { Scope } from '../schemas/api-keys.js';
import type { ApiKeyRecord, ApiKeyRepository, ApiKeyWatch } from '../store/api-keys.js';
import { newKeyId, randomBase62, toBase62 } from './ids.js';
import { grantsOf } from './scopes.js';

const PREFIX: Record<Environment, string> = { production: 'psk_live_', staging: 'psk_test_' };
const SECRET_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^psk_(live|test)_([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/;

const checksum = (prefixAndSecret: string) => toBase62(crc32(prefixAndSecret), CHECKSUM_LENGTH);

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function generateKey(environment: Environment): string {
  const body = PREFIX[environment] + randomBase62(SECRET_LENGTH);
  return body + checksum(body);
}

/** The environment a well-formed key belongs to, or undefined when malformed or its checksum fails. */
export function parseKey(key: string): Environment | undefined {
  const match = KEY_PATTERN.exec(key);
  if (!match) return undefined;
  const body = key.slice(0, key.length - CHECKSUM_LENGTH);
  if (checksum(body) !== match[3]) return undefined;
  return match[1] === 'live' ? 'production' : 'staging';
}

export interface AuthContext {
  accountId: string;
  keyId: string;
  /** The key's scopes; null: full access. */
  scopes: readonly Scope[] | null;
  /** The scopes as a mask (scopes.ts): the per-request check is one AND. */
  grants: number;
  /** When the key stops working: ISO time, or null (never). */
  expiresAt: string | null;
  /** The same as epoch ms (Infinity: never), compared on every request. */
  expiresAtMs: number;
  /** The key's last use in this process (written to the store by the minute). */
  usage: KeyUsage;
}

/** How often a process writes its keys' lastUsedAt: the stored time is within this of the truth. */
export const LAST_USED_WRITE_INTERVAL_MS = 60_000;
const USAGE_MAX_ENTRIES = 10_000;

function authContextOf(record: ApiKeyRecord, usage: KeyUsage): AuthContext {
  return {
    accountId: record.accountId,
    keyId: record.id,
    scopes: record.scopes,
    grants: grantsOf(record.scopes),
    expiresAt: record.expiresAt,
    expiresAtMs: record.expiresAt === null ? Number.POSITIVE_INFINITY : Date.parse(record.expiresAt),
    usage,
  };
}

/** The 401 for a key past its expiry: the message names the instant. */
export function expiredKeyError(expiresAt: string): UnauthorizedError {
  return new UnauthorizedError(`The API key expired at ${expiresAt}. Use another key, or create one (POST /v1/api-keys or \`petstore keys create\`).`, true);
}

/** Public view of a key: everything but the hash. */
export type ApiKeyInfo = Omit<ApiKeyRecord, 'keyHash'>;

const info = ({ keyHash: _hash, ...rest }: ApiKeyRecord): ApiKeyInfo => rest;

/**
 * Verified keys are remembered so the hot path skips hashing and the store, only while the
 * store can tell us about changes made by anyone (this process, the CLI, another worker or
 * instance): SQLite's data_version (a commit anywhere clears the cache before the next
 * request), PostgreSQL's LISTEN/NOTIFY (a revoked key is forgotten at its commit, on every
 * instance). While PostgreSQL's listening connection is down, nothing is remembered and every
 * request checks the store. The TTL is the backstop should a notification be missed anyway:
 * even then a revoked key is refused within a second.
 */
export const KEY_CACHE_TTL_MS = 900;

/** What a new key may be given besides its account and environment. */
export interface KeyOptions {
  name?: string | null | undefined;
  scopes?: readonly Scope[] | null | undefined;
  expiresAt?: string | null | undefined;
}

/** A new key's secret and the record to store (its hash, never the secret). */
export function newKeyRecord(accountId: string, keyEnvironment: Environment, options: KeyOptions, now: number): { key: string; record: ApiKeyRecord } {
  const key = generateKey(keyEnvironment);
  const record: ApiKeyRecord = {
    id: newKeyId(),
    accountId,
    environment: keyEnvironment,
    keyHash: hashKey(key),
    hint: `${PREFIX[keyEnvironment]}…${key.slice(-4)}`,
    createdAt: new Date(now).toISOString(),
    revokedAt: null,
    name: options.name ?? null,
    scopes: options.scopes ? [...options.scopes] : null,
    expiresAt: options.expiresAt ?? null,
    lastUsedAt: null,
  };
  return { key, record };
}
const KEY_CACHE_MAX_ENTRIES = 10_000;
/** How often, while anyone listens for key changes, SQLite's change check is read. */
const KEY_CHANGE_CHECK_MS = 250;
/** Without a live PostgreSQL LISTEN (or any way to hear changes): listeners re-check this often. */
const KEY_CHANGE_UNHEARD_MS = 1_000;

/** Told that a key changed (its id), or that any may have (undefined: re-check them all). */
export type KeyChangeListener = (keyId: string | undefined) => void;

export interface ApiKeyServiceDeps {
  apiKeys: ApiKeyRepository;
  accounts: Pick<AccountRepository, 'get'>;
  /** How this process learns that another one committed (SQLite), when the store can tell. */
  externalChangeCounter?: (() => number) | undefined;
  clock: Clock;
  environment: Environment;
  keyCacheTtlMs?: number;
  /** How often this process writes its keys' last use (default LAST_USED_WRITE_INTERVAL_MS). */
  lastUsedIntervalMs?: number;
  /** Told when an expired key is refused (the audit log records it, at most hourly); never awaited. */
  onExpiredUse?: (accountId: string, keyId: string, request: RequestInfo) => Promise<void>;
}

/** What the audit log keeps of the request that presented a key. */
export interface RequestInfo {
  requestId?: string | undefined;
  clientAddress?: string | undefined;
}

export function createApiKeyService(deps: ApiKeyServiceDeps) {
  const { apiKeys, accounts, externalChangeCounter, clock, environment, keyCacheTtlMs = KEY_CACHE_TTL_MS } = deps;
  const usage = lastUseRecorder(apiKeys, deps.lastUsedIntervalMs ?? LAST_USED_WRITE_INTERVAL_MS);
  const other: Environment = environment === 'production' ? 'staging' : 'production';
  // Keyed by the token itself: it never leaves process memory, and hashing is what we skip.
  /** expiresAt: on performance.now()'s clock. */
  const cache = new Map<string, { auth: AuthContext; expiresAt: number }>();
  // Bumped by every change heard: a lookup that started before one must not be remembered
  // (it may have read the key just before it was revoked).
  let generation = 0;
  let watch: ApiKeyWatch | undefined;
  const forget = (keyId: string | undefined) => {
    generation++;
    if (keyId === undefined) cache.clear();
    else for (const [token, entry] of cache) if (entry.auth.keyId === keyId) cache.delete(token);
    changes.tell(keyId);
  };
  /** Whether remembered keys can be trusted now; starts listening on first use (the CLI never does). */
  const trusted = (): boolean => {
    if (externalChangeCounter) return true;
    if (!apiKeys.watch) return false;
    watch ??= apiKeys.watch(forget);
    return watch.live();
  };

  const changes = keyChangeListeners({ counter: externalChangeCounter, moved: () => cache.clear(), heard: trusted });

  function cached(token: string): AuthContext | undefined {
    if (cache.size === 0) return undefined;
    // SQLite: another process committed; PostgreSQL: not listening, so a change may go unheard.
    if (externalChangeCounter ? changes.moved() : !watch?.live()) return undefined;
    const entry = cache.get(token);
    if (!entry) return undefined;
    if (entry.expiresAt > performance.now()) {
      const auth = entry.auth;
      const now = clock.now();
      // Past its own expiry: the store's answer (401 with the instant) is verify's to give.
      if (now >= auth.expiresAtMs) {
        cache.delete(token);
        return undefined;
      }
      usage.used(auth.usage, now);
      return auth;
    }
    cache.delete(token);
    return undefined;
  }

  function remember(token: string, auth: AuthContext, askedAt: number, askedIn: number): void {
    if (askedIn !== generation || !trusted()) return;
    if (cache.size >= KEY_CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
    // From when the store was asked: the backstop bounds the time since the key was read.
    cache.set(token, { auth, expiresAt: askedAt + keyCacheTtlMs });
  }

  /** Checks a token against the store (no cache lookup) and remembers it when valid. */
  async function verify(token: string, request: RequestInfo = {}): Promise<AuthContext> {
    const keyEnvironment = parseKey(token);
    if (!keyEnvironment) {
      throw new UnauthorizedError(
        'The API key is malformed. Keys look like psk_live_… (production) or psk_test_… (staging); check it was copied whole.',
        true,
      );
    }
    if (keyEnvironment !== environment) {
      throw new UnauthorizedError(
        `This is a ${keyEnvironment} key but this is the ${environment} API. Use a ${PREFIX[environment]}… key here, or call the ${other} server.`,
        true,
      );
    }
    const hash = hashKey(token);
    // Listening starts before the lookup, so a revocation committed after it is heard.
    trusted();
    // Monotonic: a wall clock stepped back must not stretch the backstop.
    const askedAt = performance.now();
    const askedIn = generation;
    const record = await apiKeys.findByHash(hash);
    // The lookup is by hash; the constant-time compare guards against any store that matched loosely.
    if (!record || !timingSafeEqual(Buffer.from(record.keyHash), Buffer.from(hash))) {
      throw new UnauthorizedError('The API key is not recognised. Create a key with `petstore keys create`.', true);
    }
    if (record.revokedAt !== null) {
      throw new UnauthorizedError('The API key has been revoked. Create a new key with `petstore keys create`.', true);
    }
    const now = clock.now();
    const auth = authContextOf(record, usage.usageOf(record.id));
    if (now >= auth.expiresAtMs) {
      void deps.onExpiredUse?.(record.accountId, record.id, request);
      throw expiredKeyError(record.expiresAt!);
    }
    usage.used(auth.usage, now);
    remember(token, auth, askedAt, askedIn);
    return auth;
  }

  return {
    /** Creates a key; the returned `key` is the only time the secret exists outside the client. */
    async create(accountId: string, keyEnvironment: Environment = environment, options: KeyOptions = {}): Promise<ApiKeyInfo & { key: string }> {
      if (!(await accounts.get(accountId))) throw new NotFoundError(`No account with id "${accountId}".`);
      const { key, record } = newKeyRecord(accountId, keyEnvironment, options, clock.now());
      return { ...info(await apiKeys.create(record)), key };
    },

    async list(accountId: string): Promise<ApiKeyInfo[]> {
      if (!(await accounts.get(accountId))) throw new NotFoundError(`No account with id "${accountId}".`);
      return (await apiKeys.list(accountId)).map(info);
    },

    async revoke(keyId: string): Promise<ApiKeyInfo> {
      const record = await apiKeys.revoke(keyId, new Date(clock.now()).toISOString());
      if (!record) throw new NotFoundError(`No API key with id "${keyId}".`);
      forget(keyId);
      return info(record);
    },

    /** The account of a token verified moments ago and still valid, without touching the store; else undefined. */
    authenticateCached(token: string): AuthContext | undefined {
      return cached(token);
    },

    /** Writes the uses recorded since the last write now (the timer does it every interval; tests and shutdown call it). */
    flushUsage: usage.flush,
    /** Stops the timer that writes uses (at shutdown, after a last flushUsage). */
    stopUsage: usage.stop,

    /** Forgets what this process remembers of the key (after a change committed here). */
    forget(keyId: string): void {
      forget(keyId);
    },

    /** Resolves a bearer token to its account, or throws UnauthorizedError saying why. */
    async authenticate(token: string): Promise<AuthContext> {
      return cached(token) ?? verify(token);
    },

    /** What authenticate does after a cache miss: for callers that just asked authenticateCached. */
    verify,

    /** Subscribes to key changes as the cache hears them (keyChangeListeners); returns the unsubscribe. */
    onKeyChange: changes.subscribe,
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;

/**
 * How the key cache hears changes, and who else hears them (open event streams, which end with
 * their key): this process's changes and PostgreSQL's notices at once (`tell`); SQLite's change
 * check (`counter`: another process committed) when the cache is read, and, since it has no push,
 * every KEY_CHANGE_CHECK_MS while anyone listens; while changes cannot be heard at all (`heard`:
 * PostgreSQL's LISTEN is down), listeners re-check every key each second.
 */
function keyChangeListeners(deps: { counter: (() => number) | undefined; moved: () => void; heard: () => boolean }) {
  const listeners = new Set<KeyChangeListener>();
  let seen = deps.counter?.();
  let timer: NodeJS.Timeout | undefined;
  let lastUnheard = 0;
  const tell = (keyId: string | undefined) => {
    for (const listener of listeners) listener(keyId);
  };
  /** Whether the counter moved since last asked (then `moved` runs and listeners are told). */
  const moved = (): boolean => {
    const counter = deps.counter?.();
    if (counter === seen) return false;
    seen = counter;
    deps.moved();
    tell(undefined);
    return true;
  };
  const check = () => {
    moved();
    if (deps.heard() || Date.now() - lastUnheard < KEY_CHANGE_UNHEARD_MS) return;
    lastUnheard = Date.now();
    tell(undefined);
  };
  return {
    tell,
    moved,
    subscribe(listener: KeyChangeListener): () => void {
      listeners.add(listener);
      deps.heard(); // starts listening (PostgreSQL) if nothing has yet
      if (timer === undefined) {
        timer = setInterval(check, KEY_CHANGE_CHECK_MS);
        timer.unref();
      }
      return () => {
        listeners.delete(listener);
        if (listeners.size > 0 || timer === undefined) return;
        clearInterval(timer);
        timer = undefined;
      };
    },
  };
}

/** A key's last use in this process, shared by every context of the key. */
export interface KeyUsage {
  keyId: string;
  /** Epoch ms of the latest use. */
  usedAt: number;
  /** Queued for the next flush. */
  queued: boolean;
}

/**
 * Records uses in memory (a property write per request) and writes them every
 * LAST_USED_WRITE_INTERVAL_MS in one transaction: at most one write per key per interval per
 * process, and one commit for all the keys (on SQLite every commit makes the other processes
 * drop their caches, so one a minute, not one per key). Every process writes its own uses, so
 * the stored lastUsedAt is within the interval of the latest use anywhere. The timer starts
 * with the first use (the CLI never starts it) and does not keep the process alive.
 */
function lastUseRecorder(apiKeys: Pick<ApiKeyRepository, 'touch'>, intervalMs: number) {
  const usage = new Map<string, KeyUsage>();
  let queue: KeyUsage[] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = async (): Promise<void> => {
    const batch = queue;
    queue = [];
    for (const entry of batch) entry.queued = false;
    if (batch.length === 0) return;
    // A failed write is not retried as such: the key's next use queues it again.
    await apiKeys.touch(batch.map((entry) => ({ id: entry.keyId, at: new Date(entry.usedAt).toISOString() }))).catch(() => undefined);
  };
  return {
    used(entry: KeyUsage, now: number): void {
      entry.usedAt = now;
      if (entry.queued) return;
      entry.queued = true;
      queue.push(entry);
      if (timer === undefined) {
        timer = setInterval(() => void flush(), intervalMs);
        timer.unref();
      }
    },
    usageOf(keyId: string): KeyUsage {
      let entry = usage.get(keyId);
      if (!entry) {
        if (usage.size >= USAGE_MAX_ENTRIES) usage.clear();
        usage.set(keyId, (entry = { keyId, usedAt: 0, queued: false }));
      }
      return entry;
    },
    flush,
    stop(): void {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
    },
  };
}
