// The client's entry object: options are checked once here, then shared by every resource.
import { Core, type Fetch } from './core.js';
import { Categories, InventoryResource } from './resources/categories.js';
import { Events } from './resources/events.js';
import { Messages } from './resources/messages.js';
import { Orders } from './resources/orders.js';
import { Pets } from './resources/pets.js';
import { WebhookEndpoints } from './resources/webhook-endpoints.js';
import { ApiKeys, AuditLog } from './resources/api-keys.js';

export interface PetstoreOptions {
  /** Your API key (`psk_live_…` or `psk_test_…`), sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** The Petstore server URL, ending in `/v1`. Default `http://127.0.0.1:8080/v1`. */
  baseUrl?: string | undefined;
  /** The messaging example API's URL. Default: `baseUrl` with `/v1` replaced by `/example/v1`. */
  exampleApiUrl?: string | undefined;
  /**
   * How many times a failed attempt is retried (default 2): network errors, timeouts, 429,
   * 503 and 409 `idempotency_key_in_use`, after `Retry-After` when given (a call gives up at
   * once when it asks for more than 60 s) or a jittered exponential backoff. Never other 4xx.
   */
  maxRetries?: number | undefined;
  /** Time allowed for each attempt, until the whole answer has arrived; no limit by default. */
  timeoutMs?: number | undefined;
  /** A `fetch` to use instead of the global one (a proxy, instrumentation, tests). */
  fetch?: Fetch | undefined;
}

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080/v1';

export class Petstore {
  /** The pets (animals) of the key's account. */
  readonly pets: Pets;
  /**
   * The categories of the key's account: their names and exact pet counts.
   * @experimental `x-stability: experimental` in the API document: the shape may still change.
   */
  readonly categories: Categories;
  /**
   * How many of the key's account's pets are in each status, exact and O(1).
   * @experimental `x-stability: experimental` in the API document: the shape may still change.
   */
  readonly inventory: InventoryResource;
  /**
   * The orders of the key's account: place one for an available pet, then deliver or cancel it.
   * @experimental `x-stability: experimental` in the API document: the shape may still change.
   */
  readonly orders: Orders;
  /**
   * The event log of the key's account, oldest first: what webhook endpoints receive, and how to catch up.
   * @experimental `x-stability: experimental` in the API document: the shape may still change.
   */
  readonly events: Events;
  /**
   * Where the account's events are delivered (signed; check them with `verifyWebhook`), and the deliveries.
   * @experimental `x-stability: experimental` in the API document: the shape may still change.
   */
  readonly webhookEndpoints: WebhookEndpoints;
  /**
   * The account's API keys: create (restricted by scopes, expiring), list, get, roll, revoke.
   * @experimental `x-stability: experimental` in the API document: the shape may still change.
   */
  readonly apiKeys: ApiKeys;
  /**
   * The account's audit log: key and webhook endpoint changes, oldest first.
   * @experimental `x-stability: experimental` in the API document: the shape may still change.
   */
  readonly auditLog: AuditLog;
  /**
   * The messages of the key's account, through the messaging example API (`exampleApiUrl`):
   * send one (202, `queued`), then wait until it is `delivered` or `failed`.
   */
  readonly messages: Messages;
  /** The Petstore server URL in use, ending in `/v1`. */
  readonly baseUrl: string;
  /** The messaging example API's URL in use. */
  readonly exampleApiUrl: string;

  constructor(options: PetstoreOptions) {
    const { apiKey, maxRetries = 2, timeoutMs } = options;
    if (typeof apiKey !== 'string' || apiKey === '') throw new TypeError('Petstore: apiKey must be a non-empty string.');
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new TypeError('Petstore: maxRetries must be an integer >= 0.');
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      throw new TypeError('Petstore: timeoutMs must be a positive number of milliseconds.');
    }
    this.baseUrl = httpUrl(options.baseUrl ?? DEFAULT_BASE_URL, 'baseUrl');
    // The version is part of the base URL (spec §9); a URL without it would make every call a 404.
    if (!this.baseUrl.endsWith('/v1')) throw new TypeError(`Petstore: baseUrl must end in /v1, got ${this.baseUrl}.`);
    this.exampleApiUrl = httpUrl(options.exampleApiUrl ?? `${this.baseUrl.slice(0, -'/v1'.length)}/example/v1`, 'exampleApiUrl');
    const globalFetch = globalThis.fetch as Fetch | undefined;
    const fetch = options.fetch ?? globalFetch;
    if (fetch === undefined) throw new TypeError('Petstore: no global fetch here; pass options.fetch.');
    // Called as a plain function: browsers throw "Illegal invocation" for fetch called on another object.
    const shared = { apiKey, maxRetries, timeoutMs, fetch: ((input, init) => fetch(input, init)) as Fetch };
    const core = new Core({ ...shared, baseUrl: this.baseUrl });
    this.pets = new Pets(core);
    this.categories = new Categories(core);
    this.inventory = new InventoryResource(core);
    this.orders = new Orders(core);
    this.events = new Events(core);
    this.webhookEndpoints = new WebhookEndpoints(core);
    this.apiKeys = new ApiKeys(core);
    this.auditLog = new AuditLog(core);
    // The example API has its own base URL (and document); same key, retries and errors.
    this.messages = new Messages(new Core({ ...shared, baseUrl: this.exampleApiUrl }));
  }
}

/** An absolute http(s) URL without query, fragment or trailing slash. */
function httpUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`Petstore: ${name} must be an absolute URL, got ${JSON.stringify(value)}.`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '') {
    throw new TypeError(`Petstore: ${name} must be an http(s) URL without query or fragment, got ${JSON.stringify(value)}.`);
  }
  return url.toString().replace(/\/+$/, '');
}
