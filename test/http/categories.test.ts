// Categories over HTTP, on every store: naming (201/200, renames, case-insensitive uniqueness,
// name rules), exact petCounts as pets are created, moved and deleted, which categories exist
// (named ones stay, unnamed ones live while a pet uses them), paging, deleting, the categoryId
// filter of listPets with its cursors, bad ids, and isolation between accounts. Every response
// is checked against the served document by the test app.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertError, type Category, cursorOf, env, nextLink, type Pet, petApi, type PetApi } from '../helpers/pet-changes.js';

for (const backend of backends) {
  describe(`categories over HTTP (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;

    const account = async (name: string): Promise<{ api: PetApi; key: string }> => {
      app = await getApp();
      const created = await app.createAccount(name);
      return { api: petApi(app, created), key: created.key };
    };
    const put = async (api: PetApi, id: number, name: string, status: 200 | 201): Promise<Category> => {
      const res = await api.putCategory(id, { name });
      assert.equal(res.status, status, res.text);
      return res.body as Category;
    };

    test('when a category is named, then 201 the first time and 200 after (same name or a rename), and GET answers the name and petCount', async () => {
      const { api } = await account('Naming');
      assert.deepEqual(await put(api, 5, 'Dogs', 201), { id: 5, name: 'Dogs', petCount: 0 });
      assert.deepEqual(await put(api, 5, 'Dogs', 200), { id: 5, name: 'Dogs', petCount: 0 });
      assert.deepEqual(await put(api, 5, 'Hounds', 200), { id: 5, name: 'Hounds', petCount: 0 });
      assert.deepEqual((await api.category(5)).body, { id: 5, name: 'Hounds', petCount: 0 });
      // A category pets already use exists: naming it is a 200, and its count stays.
      await api.createOk({ name: 'Tom', categoryId: 7 });
      await api.createOk({ name: 'Kit', categoryId: 7 });
      assert.deepEqual((await api.category(7)).body, { id: 7, petCount: 2 });
      assert.deepEqual(await put(api, 7, 'Cats', 200), { id: 7, name: 'Cats', petCount: 2 });
      for (const name of ['a'.repeat(255), '🐶'.repeat(255), 'Zoë ポチ'] as const) {
        assert.equal((await put(api, 8, name, name === 'a'.repeat(255) ? 201 : 200)).name, name);
      }
      assert.deepEqual(await put(api, Number.MAX_SAFE_INTEGER, 'Last', 201), { id: Number.MAX_SAFE_INTEGER, name: 'Last', petCount: 0 });
      assert.deepEqual(await api.categories(), [
        { id: 5, name: 'Hounds', petCount: 0 },
        { id: 7, name: 'Cats', petCount: 2 },
        { id: 8, name: 'Zoë ポチ', petCount: 0 },
        { id: Number.MAX_SAFE_INTEGER, name: 'Last', petCount: 0 },
      ]);
    });

    test('when a name is already used by another category of the account in any case, then 409 category_name_taken and nothing changes; the category itself may change its case', async () => {
      const { api } = await account('Unique');
      await put(api, 1, 'Dogs', 201);
      for (const name of ['Dogs', 'dogs', 'DOGS', 'dOgS']) assertError(await api.putCategory(2, { name }), 409, 'category_name_taken', /names compare case-insensitively/);
      await put(api, 3, 'Straße', 201);
      for (const name of ['STRASSE', 'STRAẞE', 'straẞe']) assertError(await api.putCategory(4, { name }), 409, 'category_name_taken');
      // "ΐ" upper-cases to a decomposed form; its composed capital spelling is the same name.
      await put(api, 5, '\u0390', 201);
      assertError(await api.putCategory(6, { name: '\u03AA\u0301' }), 409, 'category_name_taken');
      assertError(await api.putCategory(3, { name: 'dogs' }), 409, 'category_name_taken', undefined);
      assertError(await api.category(2), 404, 'not_found');
      assert.deepEqual((await api.category(3)).body, { id: 3, name: 'Straße', petCount: 0 }, 'a refused rename keeps the old name');
      assert.deepEqual(await put(api, 1, 'DOGS', 200), { id: 1, name: 'DOGS', petCount: 0 });
      // A name is free again once its category is renamed or deleted.
      await put(api, 1, 'Wolves', 200);
      assert.deepEqual(await put(api, 2, 'dogs', 201), { id: 2, name: 'dogs', petCount: 0 });
      assert.equal((await api.deleteCategory(3)).status, 204);
      assert.deepEqual(await put(api, 4, 'strasse', 201), { id: 4, name: 'strasse', petCount: 0 });
      // Names are per account.
      const { api: other } = await account('Unique elsewhere');
      assert.deepEqual(await put(other, 9, 'Dogs', 201), { id: 9, name: 'Dogs', petCount: 0 });
    });

    test('when a name or body is invalid, then 400 (invalid_request, invalid_json, invalid_content_type) and nothing is created', async () => {
      const { api, key } = await account('Bad names');
      for (const body of [{ name: '' }, { name: '   ' }, { name: 'a\u0007b' }, { name: 'a'.repeat(256) }, { name: 42 }, { name: null }, {}, { name: 'Ok', color: 'red' }, [], null]) {
        assertError(await api.putCategory(1, body), 400, 'invalid_request');
      }
      assertError(await app.request('PUT', '/v1/categories/1', { key }), 400, 'invalid_request', /body is required/);
      assertError(await app.request('PUT', '/v1/categories/1', { key, rawBody: '{"name": ', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
      for (const type of ['text/plain', 'application/merge-patch+json']) {
        assertError(await app.request('PUT', '/v1/categories/1', { key, rawBody: '{"name":"Ok"}', headers: { 'content-type': type } }), 400, 'invalid_content_type');
      }
      assert.deepEqual(await api.categories(), []);
    });

    test('when category ids or list parameters are bad, then 400 invalid_request (or invalid_cursor); without a key, 401', async () => {
      const { api, key } = await account('Bad ids');
      for (const id of ['0', '-1', 'abc', '1.5', '9007199254740992', '1e3', '0x10']) {
        assertError(await api.category(id), 400, 'invalid_request');
        assertError(await api.putCategory(id, { name: 'X' }), 400, 'invalid_request');
        assertError(await api.deleteCategory(id), 400, 'invalid_request');
        assertError(await app.request('GET', `/v1/pets?categoryId=${id}`, { key }), 400, 'invalid_request');
      }
      assertError(await app.request('GET', '/v1/pets?categoryId=1&categoryId=2', { key }), 400, 'invalid_request');
      for (const query of ['limit=0', 'limit=101', 'limit=abc', 'limit=1&limit=2', 'name=Dogs', 'status=available']) {
        assertError(await app.request('GET', `/v1/categories?${query}`, { key }), 400, 'invalid_request');
      }
      assertError(await app.request('GET', '/v1/categories?cursor=nope', { key }), 400, 'invalid_cursor');
      for (const [method, path] of [['GET', '/v1/categories'], ['GET', '/v1/categories/1'], ['PUT', '/v1/categories/1'], ['DELETE', '/v1/categories/1']] as const) {
        assertError(await app.request(method, path, method === 'PUT' ? { body: { name: 'X' } } : {}), 401, 'unauthorized');
      }
    });

    test('when pets are created, moved between categories and deleted, then petCount is exact; unnamed categories exist only while used, named ones stay', async () => {
      const { api } = await account('Counts');
      await put(api, 2, 'Named', 201);
      const a = await api.createOk({ name: 'A', categoryId: 1 });
      const b = await api.createOk({ name: 'B', categoryId: 1, status: 'available' });
      const c = await api.createOk({ name: 'C', categoryId: 3, status: 'sold' });
      assert.deepEqual(await api.categories(), [{ id: 1, petCount: 2 }, { id: 2, name: 'Named', petCount: 0 }, { id: 3, petCount: 1 }]);

      await api.patchOk(a.id, { categoryId: 2 });
      await api.patchOk(b.id, { categoryId: 2, status: null });
      assert.deepEqual(await api.categories(), [{ id: 2, name: 'Named', petCount: 2 }, { id: 3, petCount: 1 }], 'category 1 lost its last pet: gone');
      assertError(await api.category(1), 404, 'not_found');
      await api.patchOk(b.id, { name: 'B2' });
      assert.deepEqual((await api.category(2)).body, { id: 2, name: 'Named', petCount: 2 }, 'a rename moves nothing');

      assert.equal((await api.remove(c.id)).status, 204);
      assertError(await api.category(3), 404, 'not_found');
      await api.patchOk(a.id, { categoryId: 1 });
      assert.deepEqual(await api.categories(), [{ id: 1, petCount: 1 }, { id: 2, name: 'Named', petCount: 1 }], 'category 1 is back, unnamed');
      assert.equal((await api.remove(a.id)).status, 204);
      assert.equal((await api.remove(b.id)).status, 204);
      assert.deepEqual(await api.categories(), [{ id: 2, name: 'Named', petCount: 0 }], 'a named category stays with no pets');
      // A failed create or a refused patch counts nothing.
      assertError(await api.create({ name: '', categoryId: 4 }), 400, 'invalid_request');
      const held = await api.createOk({ name: 'Held', categoryId: 5, status: 'available' });
      await api.placeOk(held.id);
      assertError(await api.patch(held.id, { categoryId: 6, status: 'sold' }), 409, 'pet_has_open_order');
      assertError(await api.remove(held.id), 409, 'pet_has_open_order');
      assert.deepEqual(await api.categories(), [{ id: 2, name: 'Named', petCount: 0 }, { id: 5, petCount: 1 }]);
    });

    test('when categories are listed, then they come in ascending id order, paged with Link rel="next" and a cursor bound to the list', async () => {
      const { api, key } = await account('Paging');
      const ids = [40, 3, 17, 1, 99, 8, 23];
      for (const [i, id] of ids.entries()) {
        if (i % 2 === 0) await put(api, id, `C${id}`, 201);
        else await api.createOk({ name: `P${id}`, categoryId: id });
      }
      const first = await app.request('GET', '/v1/categories?limit=3', { key });
      assert.equal(first.status, 200);
      assert.deepEqual((first.body as Category[]).map((c) => c.id), [1, 3, 8]);
      assert.match(first.headers.get('link') ?? '', /^<\/v1\/categories\?limit=3&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
      assert.deepEqual((await api.walk<Category>('/v1/categories?limit=3')).map((c) => c.id), [...ids].sort((x, y) => x - y));
      assert.deepEqual((await api.walk<Category>('/v1/categories?limit=1')).map((c) => c.id), [...ids].sort((x, y) => x - y));
      const all = await app.request('GET', '/v1/categories', { key });
      assert.equal((all.body as Category[]).length, 7);
      assert.equal(all.headers.get('link'), null, 'the last page has no Link');
      // A categories cursor is for categories only, and for this account only.
      assertError(await app.request('GET', `/v1/pets?limit=3&cursor=${cursorOf(nextLink(first)!)}`, { key }), 400, 'invalid_cursor');
      const { key: otherKey } = await account('Paging elsewhere');
      assertError(await app.request('GET', `/v1/categories?limit=3&cursor=${cursorOf(nextLink(first)!)}`, { key: otherKey }), 400, 'invalid_cursor');
      await api.createOk({ name: 'Extra', categoryId: 2 });
      const petsFirst = await app.request('GET', '/v1/pets?limit=1', { key });
      assertError(await app.request('GET', `/v1/categories?limit=1&cursor=${cursorOf(nextLink(petsFirst)!)}`, { key }), 400, 'invalid_cursor');
    });

    test('when a category is deleted, then 204 if no pet uses it, 409 category_in_use if one does, 404 if unknown; afterwards a pet may use the id and it reappears unnamed', async () => {
      const { api } = await account('Deleting');
      await put(api, 1, 'Empty', 201);
      await put(api, 2, 'Busy', 201);
      const pet = await api.createOk({ name: 'Rex', categoryId: 2 });
      await api.createOk({ name: 'Tom', categoryId: 3 });

      const res = await api.deleteCategory(1);
      assert.equal(res.status, 204, res.text);
      assert.equal(res.text, '');
      assertError(await api.category(1), 404, 'not_found');
      assertError(await api.deleteCategory(1), 404, 'not_found');
      assertError(await api.deleteCategory(2), 409, 'category_in_use', /Category 2/);
      assertError(await api.deleteCategory(3), 409, 'category_in_use');
      assertError(await api.deleteCategory(4), 404, 'not_found');
      assert.deepEqual(await api.categories(), [{ id: 2, name: 'Busy', petCount: 1 }, { id: 3, petCount: 1 }]);

      await api.patchOk(pet.id, { categoryId: 4 });
      assert.equal((await api.deleteCategory(2)).status, 204, 'emptied: deletable');
      assertError(await api.category(2), 404, 'not_found');
      await api.createOk({ name: 'Back', categoryId: 1 });
      assert.deepEqual((await api.category(1)).body, { id: 1, petCount: 1 }, 'the name was forgotten');
      assert.deepEqual(await put(api, 2, 'Busy', 201), { id: 2, name: 'Busy', petCount: 0 }, 'the name is free and the id new again');
    });

    test('when pets are listed with categoryId (alone or with status), then only those pets come, paged, and a cursor replayed under another filter answers 400 invalid_cursor', async () => {
      const { api, key } = await account('Filter');
      const made: Pet[] = [];
      const statuses = ['available', 'sold', undefined] as const;
      for (let i = 0; i < 18; i++) {
        const status = statuses[i % 3];
        made.push(await api.createOk({ name: `F${i}`, categoryId: 1 + (i % 2), ...(status ? { status } : {}) }));
      }
      const inCategory = (id: number, status?: string) => made.filter((p) => p.categoryId === id && (status === undefined || p.status === status));
      assert.deepEqual(await api.pets('&categoryId=1'), inCategory(1));
      assert.deepEqual(await api.walk<Pet>('/v1/pets?limit=2&categoryId=2'), inCategory(2));
      assert.deepEqual(await api.walk<Pet>('/v1/pets?limit=1&categoryId=1&status=sold'), inCategory(1, 'sold'));
      assert.deepEqual(await api.walk<Pet>('/v1/pets?categoryId=2&status=available&limit=2'), inCategory(2, 'available'));
      assert.deepEqual(await api.pets('&categoryId=3'), []);

      const first = await app.request('GET', '/v1/pets?limit=2&status=sold&categoryId=1', { key });
      assert.match(first.headers.get('link') ?? '', /^<\/v1\/pets\?limit=2&status=sold&categoryId=1&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
      const cursor = cursorOf(nextLink(first)!);
      for (const query of ['categoryId=2&status=sold', 'status=sold', 'categoryId=1', '', 'categoryId=1&status=available']) {
        assertError(await app.request('GET', `/v1/pets?limit=2&${query}&cursor=${cursor}`, { key }), 400, 'invalid_cursor');
      }
      const plain = cursorOf(nextLink(await app.request('GET', '/v1/pets?limit=2', { key }))!);
      assertError(await app.request('GET', `/v1/pets?limit=2&categoryId=1&cursor=${plain}`, { key }), 400, 'invalid_cursor');
      const byCategory = cursorOf(nextLink(await app.request('GET', '/v1/pets?limit=2&categoryId=1', { key }))!);
      assertError(await app.request('GET', `/v1/pets?limit=2&categoryId=2&cursor=${byCategory}`, { key }), 400, 'invalid_cursor');
      const replayed = await app.request('GET', `/v1/pets?limit=2&categoryId=1&cursor=${byCategory}`, { key });
      assert.equal(replayed.status, 200, 'the same filter takes its cursor');
      assert.deepEqual(replayed.body, inCategory(1).slice(2, 4));

      // Moving and deleting pets moves them between filters at once.
      await api.patchOk(made[0]!.id, { categoryId: 2 });
      assert.equal((await api.remove(made[2]!.id)).status, 204);
      assert.deepEqual((await api.pets('&categoryId=1')).map((p) => p.id), inCategory(1).map((p) => p.id).filter((id) => id !== made[0]!.id && id !== made[2]!.id));
      assert.deepEqual((await api.pets('&categoryId=2&status=available')).map((p) => p.id), [made[0]!.id, ...inCategory(2, 'available').map((p) => p.id)].sort((x, y) => x - y));
    });

    test('when another account asks for, names or deletes this account\'s category, then it sees only its own: 404, or a category of its own', async () => {
      const { api } = await account('Mine');
      const { api: other } = await account('Theirs');
      await put(api, 1, 'Secret', 201);
      await api.createOk({ name: 'Rex', categoryId: 2 });
      for (const id of [1, 2]) {
        assertError(await other.category(id), 404, 'not_found');
        assertError(await other.deleteCategory(id), 404, 'not_found');
      }
      assert.deepEqual(await other.categories(), []);
      assert.deepEqual(await other.pets('&categoryId=2'), []);
      assert.deepEqual(await put(other, 2, 'Secret', 201), { id: 2, name: 'Secret', petCount: 0 }, 'its own category 2, its own names');
      assert.deepEqual(await api.categories(), [{ id: 1, name: 'Secret', petCount: 0 }, { id: 2, petCount: 1 }], 'unchanged');
    });
  });
}
