// `petstore.apiKeys`: the account's API keys (create, list, get, roll, revoke) and
// `petstore.auditLog`: its security-relevant changes. Creating and rolling make a new secret
// each time, so they are not retried after a lost answer (a repeat would make a second key);
// reads and revoking (repeatable: revoking again changes nothing) are.
import type { Core, Page } from '../core.js';
import type { components, operations } from '../generated/petstore.js';

export type ApiKey = components['schemas']['ApiKey'];
/** The key as created or rolled, with its secret `key`: shown only in this answer. */
export type CreatedApiKey = components['schemas']['CreatedApiKey'];
export type ApiKeyScope = components['schemas']['Scope'];
export type NewApiKey = NonNullable<operations['createApiKey']['requestBody']>['content']['application/json'];
export type RollApiKeyOptions = NonNullable<operations['rollApiKey']['requestBody']>['content']['application/json'];
export type ListApiKeysParams = NonNullable<operations['listApiKeys']['parameters']['query']>;
export type AuditEntry = components['schemas']['AuditEntry'];
export type ListAuditLogParams = NonNullable<operations['listAuditLog']['parameters']['query']>;
/** As {@link ListAuditLogParams}, without the cursor: `limit` is the size of each page fetched. */
export type ListAllAuditLogParams = Omit<ListAuditLogParams, 'cursor'>;

const KEYS = '/api-keys';
const keyPath = (id: string) => `${KEYS}/${encodeURIComponent(id)}`;

/** @experimental `x-stability: experimental` in the API document: the shape may still change. */
export class ApiKeys {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * A new key in the account (`createApiKey`); its secret `key` is shown only now. `scopes`
   * absent: full access. A restricted key can only give scopes it has (else 403
   * `insufficient_scope`, with `error.scope`); the expiry is capped at the calling key's.
   * Not retried after a network error or timeout: list the keys to see whether it was made.
   */
  async create(key: NewApiKey = {}): Promise<CreatedApiKey> {
    return (await this.#core.request<CreatedApiKey>({ method: 'POST', path: KEYS, body: key, repeatable: false })).body;
  }

  /** One page of keys, oldest first (metadata only); pass `nextCursor` back as `cursor` for the next. */
  list(params: ListApiKeysParams = {}): Promise<Page<ApiKey>> {
    return this.#core.page<ApiKey>(KEYS, { limit: params.limit, cursor: params.cursor });
  }

  /** Every key, fetching page after page (of `limit`) as you iterate. */
  listAll(params: Omit<ListApiKeysParams, 'cursor'> = {}): AsyncIterableIterator<ApiKey> {
    return this.#core.all<ApiKey>(KEYS, { limit: params.limit });
  }

  async get(id: string): Promise<ApiKey> {
    return (await this.#core.request<ApiKey>({ method: 'GET', path: keyPath(id) })).body;
  }

  /**
   * A new key with the same name, scopes and expiry (its secret shown only now); the old one keeps
   * working for `expiresInSeconds` (default 86400, 0: at once). Not retried after a lost answer.
   */
  async roll(id: string, options: RollApiKeyOptions = {}): Promise<CreatedApiKey> {
    return (await this.#core.request<CreatedApiKey>({ method: 'POST', path: `${keyPath(id)}/roll`, body: options, repeatable: false })).body;
  }

  /** Revokes the key (204): refused everywhere within a second. A key may revoke itself. */
  async revoke(id: string): Promise<void> {
    await this.#core.request<undefined>({ method: 'DELETE', path: keyPath(id) });
  }
}

/** @experimental `x-stability: experimental` in the API document: the shape may still change. */
export class AuditLog {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /** One page of entries, oldest first; `after`: only entries with a greater `sequence`. */
  list(params: ListAuditLogParams = {}): Promise<Page<AuditEntry>> {
    return this.#core.page<AuditEntry>('/audit-log', { limit: params.limit, after: params.after, cursor: params.cursor });
  }

  /** Every entry (after a `sequence`), oldest first, page after page as you iterate. */
  async *listAll(params: ListAllAuditLogParams = {}): AsyncGenerator<AuditEntry, void, undefined> {
    // `after` starts the listing only: the cursor carries the position (the server refuses both).
    let page = await this.list(params);
    yield* page.data;
    while (page.nextCursor !== undefined) {
      page = await this.list({ limit: params.limit, cursor: page.nextCursor });
      yield* page.data;
    }
  }
}
