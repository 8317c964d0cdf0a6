// ETags and conditional requests on categories over HTTP, on every store: the strong ETag on
// putCategory (201 and 200) and getCategory and when it changes (name, petCount), If-None-Match
// on PUT (`*`: create only, also under concurrent creates), If-Match on PUT and DELETE (stale,
// `*`, a missing category), If-None-Match and If-Match on GET (304, 412), malformed headers, and
// the order of the checks (404 and 409 on DELETE before 412; 412 on PUT before 409).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertError, type Category, env, etagOf, petApi, type PetApi } from '../helpers/pet-changes.js';

for (const backend of backends) {
  describe(`category ETags and conditional requests over HTTP (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;

    const account = async (name: string): Promise<PetApi> => {
      app = await getApp();
      return petApi(app, await app.createAccount(name));
    };
    const currentTag = async (api: PetApi, id: number) => etagOf(await api.category(id));

    test('when a category is named, renamed and gains or loses pets, then PUT and GET carry its strong ETag, equal for equal answers, new whenever its name or petCount changes', async () => {
      const api = await account('Tags');
      const created = await api.putCategory(3, { name: 'Dogs' });
      assert.equal(created.status, 201, created.text);
      const first = etagOf(created);
      assert.equal(await currentTag(api, 3), first, 'GET answers the tag PUT gave');
      const same = await api.putCategory(3, { name: 'Dogs' });
      assert.equal(same.status, 200);
      assert.equal(etagOf(same), first, 'the same category, the same tag');

      const seen = new Set([first]);
      const expectNew = async (when: string) => {
        const tag = await currentTag(api, 3);
        assert.ok(!seen.has(tag), `a new tag after ${when}`);
        seen.add(tag);
      };
      const renamed = await api.putCategory(3, { name: 'Hounds' });
      assert.equal(renamed.status, 200);
      assert.equal(etagOf(renamed), await currentTag(api, 3));
      await expectNew('a rename');
      const pet = await api.createOk({ name: 'Rex', categoryId: 3 });
      await expectNew('a pet joining (petCount 1)');
      await api.patchOk(pet.id, { categoryId: 4 });
      assert.equal(await currentTag(api, 3), etagOf(renamed), 'back to petCount 0: the tag of that answer again');
      assert.notEqual(await currentTag(api, 4), await currentTag(api, 3), 'another category, another tag');
    });

    test('when PUT sends If-None-Match: *, then it creates a missing category (201) and answers 412 precondition_failed for an existing one, named or only used by pets, changing nothing', async () => {
      const api = await account('Create only');
      const created = await api.putCategory(1, { name: 'Cats' }, { 'if-none-match': '*' });
      assert.equal(created.status, 201, created.text);
      assertError(await api.putCategory(1, { name: 'Lions' }, { 'if-none-match': '*' }), 412, 'precondition_failed', /Category 1 exists and If-None-Match/);
      await api.createOk({ name: 'Tom', categoryId: 2 });
      assertError(await api.putCategory(2, { name: 'Toms' }, { 'if-none-match': '*' }), 412, 'precondition_failed');
      const tag = etagOf(created);
      for (const value of [tag, `W/${tag}`, `"other", ${tag}`]) assertError(await api.putCategory(1, { name: 'Lions' }, { 'if-none-match': value }), 412, 'precondition_failed');
      assert.deepEqual(await api.categories(), [{ id: 1, name: 'Cats', petCount: 0 }, { id: 2, petCount: 1 }]);
      const other = await api.putCategory(1, { name: 'Lions' }, { 'if-none-match': '"other"' });
      assert.equal(other.status, 200, 'a tag it does not have lets the change through');
    });

    test('when 20 create-only PUTs of one new category arrive at once, then exactly one answers 201 and the others 412, and the category has the winner\'s name', async () => {
      const api = await account('Create race');
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => api.putCategory(9, { name: `Name ${i}` }, { 'if-none-match': '*' })));
      const statuses = results.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 201).length, 1, `statuses: ${statuses.join(',')}`);
      for (const r of results.filter((r) => r.status !== 201)) assertError(r, 412, 'precondition_failed');
      assert.deepEqual((await api.category(9)).body, { id: 9, name: `Name ${statuses.indexOf(201)}`, petCount: 0 });
    });

    test('when PUT or DELETE sends a stale If-Match, then 412 precondition_failed and nothing changes; the current tag, a list holding it, or * succeed; If-Match on a missing category is 412 on PUT (nothing created) and 404 on DELETE', async () => {
      const api = await account('If-Match');
      const stale = etagOf(await api.putCategory(1, { name: 'Birds' }));
      const renamed = (await api.putCategory(1, { name: 'Parrots' })).body as Category;
      for (const ifMatch of [stale, '"nope"', `W/${await currentTag(api, 1)}`]) {
        assertError(await api.putCategory(1, { name: 'Lost' }, { 'if-match': ifMatch }), 412, 'precondition_failed', /Category 1 has changed/);
        assertError(await api.deleteCategory(1, { 'if-match': ifMatch }), 412, 'precondition_failed');
      }
      assert.deepEqual((await api.category(1)).body, renamed);
      const byTag = await api.putCategory(1, { name: 'Finches' }, { 'if-match': await currentTag(api, 1) });
      assert.equal(byTag.status, 200, byTag.text);
      const byList = await api.putCategory(1, { name: 'Owls' }, { 'if-match': `"other", ${etagOf(byTag)}` });
      assert.equal(byList.status, 200, byList.text);
      assert.equal((await api.putCategory(1, { name: 'Crows' }, { 'if-match': '*' })).status, 200);
      assert.equal((await api.deleteCategory(1, { 'if-match': await currentTag(api, 1) })).status, 204);

      for (const ifMatch of ['*', stale]) {
        assertError(await api.putCategory(1, { name: 'Ghost' }, { 'if-match': ifMatch }), 412, 'precondition_failed', /Category 1 does not exist/);
        assertError(await api.deleteCategory(1, { 'if-match': ifMatch }), 404, 'not_found');
      }
      assertError(await api.category(1), 404, 'not_found');
      assert.deepEqual(await api.categories(), [], 'a refused PUT creates nothing');
      assert.equal((await api.putCategory(2, { name: 'Named' })).status, 201);
      assert.equal((await api.deleteCategory(2, { 'if-match': '*' })).status, 204);
    });

    test('when DELETE sends If-None-Match naming the current tag or *, then 412 and the category stays; another tag deletes it', async () => {
      const api = await account('Delete If-None-Match');
      const tag = etagOf(await api.putCategory(5, { name: 'Fish' }));
      for (const value of ['*', tag, `W/${tag}`]) assertError(await api.deleteCategory(5, { 'if-none-match': value }), 412, 'precondition_failed', /If-None-Match/);
      assert.deepEqual((await api.category(5)).body, { id: 5, name: 'Fish', petCount: 0 });
      assert.equal((await api.deleteCategory(5, { 'if-none-match': '"other"' })).status, 204);
    });

    test('when GET sends If-None-Match naming the current tag (or *, or W/ of it), then 304 with the ETag and no body; a stale If-Match is 412 and is evaluated first', async () => {
      const api = await account('Reads');
      const stale = etagOf(await api.putCategory(7, { name: 'Frogs' }));
      const tag = etagOf(await api.putCategory(7, { name: 'Toads' }));
      for (const value of [tag, '*', `W/${tag}`, `"other", ${tag}`]) {
        const res = await api.category(7, { 'if-none-match': value });
        assert.equal(res.status, 304, value);
        assert.equal(res.text, '');
        assert.equal(res.headers.get('etag'), tag);
      }
      const fresh = await api.category(7, { 'if-none-match': stale });
      assert.equal(fresh.status, 200);
      assert.deepEqual(fresh.body, { id: 7, name: 'Toads', petCount: 0 });
      assert.equal(etagOf(fresh), tag);
      assertError(await api.category(7, { 'if-match': stale }), 412, 'precondition_failed', /Category 7 has changed/);
      assertError(await api.category(7, { 'if-match': stale, 'if-none-match': tag }), 412, 'precondition_failed');
      assert.equal((await api.category(7, { 'if-match': tag })).status, 200);
      assertError(await api.category(8, { 'if-none-match': '*' }), 404, 'not_found');
    });

    test('when If-Match (anywhere) or a change\'s If-None-Match is malformed, then 400 invalid_request naming it and nothing changes; a malformed If-None-Match on GET is ignored', async () => {
      const api = await account('Malformed');
      await api.putCategory(1, { name: 'Shape' });
      for (const value of ['abc', '"abc', '"a", junk', 'W/abc', ',', '**']) {
        for (const header of ['if-match', 'if-none-match'] as const) {
          const name = header === 'if-match' ? /If-Match/ : /If-None-Match/;
          assertError(await api.putCategory(1, { name: 'X' }, { [header]: value }), 400, 'invalid_request', name);
          assertError(await api.putCategory(2, { name: 'X' }, { [header]: value }), 400, 'invalid_request', name);
          assertError(await api.deleteCategory(1, { [header]: value }), 400, 'invalid_request', name);
        }
        assertError(await api.category(1, { 'if-match': value }), 400, 'invalid_request', /If-Match/);
        assert.equal((await api.category(1, { 'if-none-match': value })).status, 200);
      }
      assert.deepEqual(await api.categories(), [{ id: 1, name: 'Shape', petCount: 0 }]);
    });

    test('when checks collide, then DELETE answers 404 and 409 before 412, and PUT answers 412 before 409 category_name_taken', async () => {
      const api = await account('Order of checks');
      const stale = etagOf(await api.putCategory(1, { name: 'Used' }));
      await api.createOk({ name: 'Rex', categoryId: 1 });
      await api.putCategory(2, { name: 'Taken' });
      assertError(await api.deleteCategory(1, { 'if-match': stale }), 409, 'category_in_use');
      assertError(await api.deleteCategory(3, { 'if-match': stale }), 404, 'not_found');
      assertError(await api.putCategory(1, { name: 'Taken' }, { 'if-match': stale }), 412, 'precondition_failed');
      assertError(await api.putCategory(1, { name: 'Taken' }, { 'if-match': await currentTag(api, 1) }), 409, 'category_name_taken');
      assertError(await api.putCategory(2, { name: 'Used' }, { 'if-none-match': '*' }), 412, 'precondition_failed');
    });
  });
}
