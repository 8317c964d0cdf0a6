// The SQLite read cache (pages and pets) must never serve what a commit has made wrong:
// not after this instance's own writes, not after another process's, and not after a
// write that lands between a page's read and its caching.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { createReadCache } from '../src/store/sqlite/read-cache.js';
import { createSqliteStore } from '../src/store/sqlite/index.js';
import { startApp } from './helpers/app.js';
import { sqliteBackend } from './helpers/backends.js';
import { createPet } from './helpers/store.js';

type Pet = { id: number; name: string; categoryId: number; status?: string };

describe('SQLite read cache over HTTP', () => {
  test('when this instance creates a pet after a page was read, then the next read of that page includes it and gains a next link', async (t) => {
    const app = await startApp(t);
    const { key } = await app.createAccount();
    for (const name of ['A', 'B']) assert.equal((await app.request('POST', '/v1/pets', { key, body: { name, categoryId: 1 } })).status, 201);
    const before = await app.request('GET', '/v1/pets?limit=2', { key });
    assert.equal((before.body as Pet[]).length, 2);
    assert.equal(before.headers.get('link'), null, 'two pets, limit 2: the last page');
    assert.equal((await app.request('GET', '/v1/pets?limit=2', { key })).headers.get('link'), null, 'read again: served from the cache');

    assert.equal((await app.request('POST', '/v1/pets', { key, body: { name: 'C', categoryId: 1 } })).status, 201);
    const after = await app.request('GET', '/v1/pets?limit=2', { key });
    assert.match(after.headers.get('link') ?? '', /rel="next"/, 'a third pet exists: the page now links on');
    const all = await app.request('GET', '/v1/pets?limit=10', { key });
    assert.deepEqual((all.body as Pet[]).map((p) => p.name), ['A', 'B', 'C']);
  });

  test('when a pet is created with an Idempotency-Key after a page was read, then the next read includes it', async (t) => {
    const app = await startApp(t);
    const { key } = await app.createAccount();
    assert.deepEqual((await app.request('GET', '/v1/pets?status=sold', { key })).body, []);
    const created = await app.request('POST', '/v1/pets', {
      key,
      body: { name: 'Idem', categoryId: 2, status: 'sold' },
      headers: { 'idempotency-key': 'read-cache-1' },
    });
    assert.equal(created.status, 201);
    assert.deepEqual(((await app.request('GET', '/v1/pets?status=sold', { key })).body as Pet[]).map((p) => p.name), ['Idem']);
  });

  test('when this instance places, delivers and cancels orders, then the cached pet and every cached page (each status filter) show the new status at once', async (t) => {
    const app = await startApp(t);
    const { key } = await app.createAccount();
    const pets = [];
    for (const name of ['A', 'B']) pets.push((await app.request('POST', '/v1/pets', { key, body: { name, categoryId: 1, status: 'available' } })).body as Pet);
    const [a, b] = pets as [Pet, Pet];
    const view = async () => {
      const out: Record<string, unknown> = {};
      // Twice each: the second read comes from the cache, and must agree with the first.
      for (let i = 0; i < 2; i++) {
        out.a = ((await app.request('GET', `/v1/pets/${a.id}`, { key })).body as Pet).status;
        for (const status of ['available', 'pending', 'sold']) {
          out[status] = ((await app.request('GET', `/v1/pets?status=${status}`, { key })).body as Pet[]).map((p) => p.name);
        }
        out.all = ((await app.request('GET', '/v1/pets', { key })).body as Pet[]).map((p) => `${p.name}:${p.status}`);
      }
      return out;
    };
    assert.deepEqual(await view(), { a: 'available', available: ['A', 'B'], pending: [], sold: [], all: ['A:available', 'B:available'] });
    const first = (await app.request('POST', '/v1/store/orders', { key, body: { petId: a.id } })).body as { id: number };
    assert.deepEqual(await view(), { a: 'pending', available: ['B'], pending: ['A'], sold: [], all: ['A:pending', 'B:available'] });
    await app.request('POST', `/v1/store/orders/${first.id}/deliver`, { key });
    assert.deepEqual(await view(), { a: 'sold', available: ['B'], pending: [], sold: ['A'], all: ['A:sold', 'B:available'] });
    const second = (await app.request('POST', '/v1/store/orders', { key, body: { petId: b.id } })).body as { id: number };
    await app.request('POST', `/v1/store/orders/${second.id}/cancel`, { key });
    assert.deepEqual(await view(), { a: 'sold', available: ['B'], pending: [], sold: ['A'], all: ['A:sold', 'B:available'] });
  });

  test('when another process moves a cached pet through an order, then the next request of this instance shows its new status', async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    const reader = await startApp(t, { databaseUrl: database.url });
    const writer = await startApp(t, { databaseUrl: database.url });
    const { key } = await reader.createAccount();
    const pet = (await reader.request('POST', '/v1/pets', { key, body: { name: 'Moved', categoryId: 1, status: 'available' } })).body as Pet;
    for (let i = 0; i < 2; i++) assert.equal(((await reader.request('GET', `/v1/pets/${pet.id}`, { key })).body as Pet).status, 'available');
    assert.equal((await writer.request('POST', '/v1/store/orders', { key, body: { petId: pet.id } })).status, 201);
    assert.equal(((await reader.request('GET', `/v1/pets/${pet.id}`, { key })).body as Pet).status, 'pending');
    assert.deepEqual(((await reader.request('GET', '/v1/pets?status=pending', { key })).body as Pet[]).map((p) => p.id), [pet.id]);
  });

  test('when another process adds a pet to the same file, then the next request of this instance sees it', async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    const reader = await startApp(t, { databaseUrl: database.url });
    const writer = await startApp(t, { databaseUrl: database.url });
    const { key } = await reader.createAccount();
    assert.deepEqual((await reader.request('GET', '/v1/pets', { key })).body, []);
    assert.deepEqual((await reader.request('GET', '/v1/pets', { key })).body, [], 'cached');

    const created = await writer.request('POST', '/v1/pets', { key, body: { name: 'From B', categoryId: 3 } });
    assert.equal(created.status, 201);
    assert.deepEqual(((await reader.request('GET', '/v1/pets', { key })).body as Pet[]).map((p) => p.name), ['From B']);
  });

  test('when another process deletes a cached pet (an operator, say), then the next request answers 404', async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    const app = await startApp(t, { databaseUrl: database.url });
    const { key } = await app.createAccount();
    const pet = (await app.request('POST', '/v1/pets', { key, body: { name: 'Gone soon', categoryId: 4 } })).body as Pet;
    assert.equal((await app.request('GET', `/v1/pets/${pet.id}`, { key })).status, 200);
    assert.equal((await app.request('GET', `/v1/pets/${pet.id}`, { key })).status, 200, 'cached');

    const other = new Database(database.url);
    other.prepare('DELETE FROM pets WHERE id = ?').run(pet.id);
    other.close();
    const res = await app.request('GET', `/v1/pets/${pet.id}`, { key });
    assert.equal(res.status, 404);
    assert.equal((res.body as { code: string }).code, 'not_found');
    assert.deepEqual((await app.request('GET', '/v1/pets', { key })).body, []);
  });

  test('when PETSTORE_READ_CACHE is off, then pages are still right after writes from another process', async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    const app = await startApp(t, { databaseUrl: database.url, env: { PETSTORE_READ_CACHE: 'false' } });
    assert.equal(app.config.database.readCache, false);
    const { key } = await app.createAccount();
    assert.deepEqual((await app.request('GET', '/v1/pets', { key })).body, []);
    const store = createSqliteStore(database.url, { readCache: false });
    t.after(() => store.close());
    await createPet(store, (await app.services.apiKeys.authenticate(key)).accountId, { name: 'Direct', categoryId: 5 }, new Date().toISOString());
    assert.deepEqual(((await app.request('GET', '/v1/pets', { key })).body as Pet[]).map((p) => p.name), ['Direct']);
  });
});

describe('SQLite read cache, directly', () => {
  test('when the store serves a page twice, then it is the same frozen array of frozen pets', async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    const store = createSqliteStore(database.url);
    t.after(() => store.close());
    await store.migrate();
    await store.accounts.create({ id: 'acct_a', name: 'A', createdAt: new Date().toISOString() });
    await createPet(store, 'acct_a', { name: 'Rex', categoryId: 1 }, new Date().toISOString());
    const first = await store.pets.list({ accountId: 'acct_a', limit: 10 });
    const second = await store.pets.list({ accountId: 'acct_a', limit: 10 });
    assert.equal(first, second);
    assert.ok(Object.isFrozen(first) && Object.isFrozen(first[0]));
    assert.throws(() => {
      (first[0] as Pet).name = 'Mutated';
    }, TypeError);
    const uncached = createSqliteStore(database.url, { readCache: false });
    t.after(() => uncached.close());
    assert.notEqual(await uncached.pets.list({ accountId: 'acct_a', limit: 10 }), await uncached.pets.list({ accountId: 'acct_a', limit: 10 }));
  });

  test('when a commit lands between reading a page and caching it, then that entry is never served', () => {
    const cache = createReadCache({ pages: 10, pets: 10 });
    const generation = cache.generation('acct_a');
    cache.wrote('acct_a');
    cache.setPage('acct_a', {}, 0, 21, [{ id: 1, name: 'Old', categoryId: 1 }], generation);
    assert.equal(cache.getPage('acct_a', {}, 0, 21), undefined);
  });

  test('when another connection commits between reading a page and caching it, and a read clears the cache in between, then that entry is never served', () => {
    const cache = createReadCache({ pages: 10, pets: 10 });
    const generation = cache.generation('acct_a');
    cache.clear();
    cache.setPage('acct_a', {}, 0, 21, [{ id: 1, name: 'Old', categoryId: 1 }], generation);
    assert.equal(cache.getPage('acct_a', {}, 0, 21), undefined);
  });

  test('when a pet changes or the cache is cleared between reading the pet and caching it, then that pet is not cached', () => {
    const cache = createReadCache({ pages: 10, pets: 10 });
    const old = { id: 1, name: 'Old', categoryId: 1 };
    const beforeChange = cache.generation('acct_a');
    cache.petChanged('acct_a', 1);
    assert.equal(cache.setPet('acct_a', old, beforeChange).name, 'Old', 'the caller still gets what it read');
    assert.equal(cache.getPet('acct_a', 1), undefined);
    const beforeClear = cache.generation('acct_a');
    cache.clear();
    cache.setPet('acct_a', old, beforeClear);
    assert.equal(cache.getPet('acct_a', 1), undefined);
    cache.setPet('acct_a', old, cache.generation('acct_a'));
    assert.equal(cache.getPet('acct_a', 1)?.name, 'Old', 'read with nothing in between: cached');
  });

  test('when one account writes, then only its pages are dropped', () => {
    const cache = createReadCache({ pages: 10, pets: 10 });
    cache.setPage('acct_a', {}, 0, 21, [], cache.generation('acct_a'));
    cache.setPage('acct_b', {}, 0, 21, [], cache.generation('acct_b'));
    cache.wrote('acct_a');
    assert.equal(cache.getPage('acct_a', {}, 0, 21), undefined);
    assert.deepEqual(cache.getPage('acct_b', {}, 0, 21), []);
  });

  test('when one of an account\'s pets changes, then that pet and the account\'s pages are dropped, and nothing of other accounts', () => {
    const cache = createReadCache({ pages: 10, pets: 10 });
    const pet = (id: number) => ({ id, name: `P${id}`, categoryId: 1, status: 'available' as const });
    cache.setPet('acct_a', pet(1), cache.generation('acct_a'));
    cache.setPet('acct_a', pet(2), cache.generation('acct_a'));
    cache.setPet('acct_b', pet(1), cache.generation('acct_b'));
    cache.setPage('acct_a', { status: 'available' }, 0, 21, [pet(1), pet(2)], cache.generation('acct_a'));
    cache.setPage('acct_b', { status: 'available' }, 0, 21, [pet(1)], cache.generation('acct_b'));
    cache.petChanged('acct_a', 1);
    assert.equal(cache.getPet('acct_a', 1), undefined);
    assert.equal(cache.getPage('acct_a', { status: 'available' }, 0, 21), undefined);
    assert.deepEqual(cache.getPet('acct_a', 2), pet(2), 'the account\'s other pets did not change');
    assert.deepEqual(cache.getPet('acct_b', 1), pet(1));
    assert.deepEqual(cache.getPage('acct_b', { status: 'available' }, 0, 21), [pet(1)]);
  });

  test('when more pages and pets are cached than the limits, then the oldest go and the sizes stay bounded', () => {
    const cache = createReadCache({ pages: 3, pets: 2 });
    for (let i = 0; i < 10; i++) {
      cache.setPage('acct_a', {}, i, 21, [], cache.generation('acct_a'));
      cache.setPet('acct_a', { id: i + 1, name: `P${i}`, categoryId: 1 }, cache.generation('acct_a'));
    }
    assert.deepEqual(cache.size, { pages: 3, pets: 2 });
    assert.equal(cache.getPage('acct_a', {}, 0, 21), undefined, 'the first page was evicted');
    assert.deepEqual(cache.getPage('acct_a', {}, 9, 21), []);
    assert.equal(cache.getPet('acct_a', 1), undefined);
    assert.equal(cache.getPet('acct_a', 10)?.name, 'P9');
  });

  test('when PETSTORE_READ_CACHE is not a boolean, then the configuration is refused', () => {
    assert.throws(() => loadConfig({ PETSTORE_READ_CACHE: 'sometimes' }), /PETSTORE_READ_CACHE/);
    assert.equal(loadConfig({}).database.readCache, true);
  });
});
