// Shortcuts for the "inventory you can correct" HTTP suites (pet changes, categories, the
// inventory): one account's calls on a test app, and the shapes they answer with.
import assert from 'node:assert/strict';
import type { TestApp, TestResponse } from './app.js';

export type Status = 'available' | 'pending' | 'sold';
export type Pet = { id: number; name: string; categoryId: number; status?: Status };
export type Category = { id: number; name?: string; petCount: number };
export type Inventory = { available: number; pending: number; sold: number; withoutStatus: number; total: number };
export type Order = { id: number; petId: number; status: 'placed' | 'delivered' | 'cancelled' };
export type Event = { sequence: number; type: string; data: Record<string, unknown> };
export type Account = { accountId: string; key: string };

/** The suites send thousands of requests: no rate limit in the way. */
export const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' };

/** The response's ETag, asserted present and strong. */
export const etagOf = (res: TestResponse): string => {
  const tag = res.headers.get('etag');
  assert.ok(tag, `an ETag on ${res.status}: ${res.text}`);
  assert.match(tag, /^"[\x21\x23-\x7e]+"$/, 'a strong entity-tag');
  return tag;
};

export function assertError(res: TestResponse, status: number, code: string, message?: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal((res.body as { code: string }).code, code, res.text);
  if (message) assert.match((res.body as { message: string }).message, message, res.text);
}

export const nextLink = (res: TestResponse): string | undefined => /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
export const cursorOf = (link: string): string => new URL(link, 'http://x').searchParams.get('cursor')!;

/** One account's calls. Each returns the raw response; the `…Ok` ones assert success and return the body. */
export function petApi(app: TestApp, account: Account) {
  const { key } = account;
  const api = {
    create: (body: Record<string, unknown>, headers: Record<string, string> = {}) => app.request('POST', '/v1/pets', { key, body, headers }),
    async createOk(body: Record<string, unknown>): Promise<Pet> {
      const res = await api.create(body);
      assert.equal(res.status, 201, res.text);
      return res.body as Pet;
    },
    get: (id: number | string, headers: Record<string, string> = {}) => app.request('GET', `/v1/pets/${id}`, { key, headers }),
    /** A merge patch sent as application/merge-patch+json (or the type given in headers). */
    patch: (id: number | string, body: unknown, headers: Record<string, string> = {}) =>
      app.request('PATCH', `/v1/pets/${id}`, { key, body, headers: { 'content-type': 'application/merge-patch+json', ...headers } }),
    async patchOk(id: number, body: unknown): Promise<Pet> {
      const res = await api.patch(id, body);
      assert.equal(res.status, 200, res.text);
      return res.body as Pet;
    },
    remove: (id: number | string, headers: Record<string, string> = {}) => app.request('DELETE', `/v1/pets/${id}`, { key, headers }),
    place: (petId: number) => app.request('POST', '/v1/store/orders', { key, body: { petId } }),
    async placeOk(petId: number): Promise<Order> {
      const res = await api.place(petId);
      assert.equal(res.status, 201, res.text);
      return res.body as Order;
    },
    act: (orderId: number, action: 'deliver' | 'cancel') => app.request('POST', `/v1/store/orders/${orderId}/${action}`, { key }),
    getOrder: (orderId: number) => app.request('GET', `/v1/store/orders/${orderId}`, { key }),
    async inventory(): Promise<Inventory> {
      const res = await app.request('GET', '/v1/store/inventory', { key });
      assert.equal(res.status, 200, res.text);
      return res.body as Inventory;
    },
    category: (id: number | string, headers: Record<string, string> = {}) => app.request('GET', `/v1/categories/${id}`, { key, headers }),
    putCategory: (id: number | string, body: unknown, headers: Record<string, string> = {}) => app.request('PUT', `/v1/categories/${id}`, { key, body, headers }),
    deleteCategory: (id: number | string, headers: Record<string, string> = {}) => app.request('DELETE', `/v1/categories/${id}`, { key, headers }),
    /** Every item of a paged list, following Link rel="next" to the end. */
    async walk<T>(first: string): Promise<T[]> {
      const items: T[] = [];
      for (let next: string | undefined = first; next; ) {
        const res = await app.request('GET', next, { key });
        assert.equal(res.status, 200, res.text);
        items.push(...(res.body as T[]));
        next = nextLink(res);
      }
      return items;
    },
    categories: (): Promise<Category[]> => api.walk<Category>('/v1/categories?limit=100'),
    pets: (query = ''): Promise<Pet[]> => api.walk<Pet>(`/v1/pets?limit=100${query}`),
    /** The account's events after `sequence` (all of them by default). */
    async events(after = 0): Promise<Event[]> {
      const res = await app.request('GET', `/v1/events?limit=100&after=${after}`, { key });
      assert.equal(res.status, 200, res.text);
      return res.body as Event[];
    },
    async lastSequence(): Promise<number> {
      return (await api.walk<Event>('/v1/events?limit=100')).at(-1)?.sequence ?? 0;
    },
  };
  return api;
}

export type PetApi = ReturnType<typeof petApi>;
