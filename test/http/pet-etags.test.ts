// ETags and conditional requests on single pets over HTTP, on every store: the ETag on
// createPet, getPet and updatePet and when it changes, If-Match on PATCH and DELETE (stale, `*`,
// lists, weak tags, malformed), If-None-Match on them (RFC 9110 §13.1.2: a match is 412), the
// order of the checks, If-None-Match and If-Match on getPet (304, 412, If-Match first; the fast
// path leaves them to Fastify), idempotent replays of a pet that changed since, and one winner
// among concurrent PATCHes with one tag.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertError, env, etagOf, type Pet, petApi, type PetApi } from '../helpers/pet-changes.js';

for (const backend of backends) {
  describe(`pet ETags and conditional requests over HTTP (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;

    const account = async (name: string): Promise<{ api: PetApi; key: string }> => {
      app = await getApp();
      const created = await app.createAccount(name);
      return { api: petApi(app, created), key: created.key };
    };
    const currentTag = async (api: PetApi, id: number) => etagOf(await api.get(id));

    test('when a pet is created, read and patched, then each answer carries its strong ETag, and the tag changes whenever the pet does, an order moving its status included', async () => {
      const { api } = await account('Tags');
      const created = await api.create({ name: 'Tag', categoryId: 1, status: 'available' });
      assert.equal(created.status, 201);
      const pet = created.body as Pet;
      const first = etagOf(created);
      assert.equal(await currentTag(api, pet.id), first, 'GET answers the tag createPet gave');
      const other = await api.createOk({ name: 'Tag', categoryId: 2, status: 'available' });
      assert.notEqual(await currentTag(api, other.id), first, 'another pet has another tag');

      const seen = new Set([first]);
      for (const patch of [{ name: 'Tag 2' }, { categoryId: 3 }, { status: 'sold' }, { status: null }, { status: 'available', name: 'Tag 3' }]) {
        const res = await api.patch(pet.id, patch);
        assert.equal(res.status, 200, res.text);
        const tag = etagOf(res);
        assert.ok(!seen.has(tag), `a new tag after ${JSON.stringify(patch)}`);
        seen.add(tag);
        assert.equal(await currentTag(api, pet.id), tag, 'GET answers the tag the PATCH gave');
      }
      const available = await currentTag(api, pet.id);
      const order = await api.placeOk(pet.id);
      const pending = await currentTag(api, pet.id);
      assert.notEqual(pending, available, 'placing an order (available → pending) changes the tag');
      assert.equal((await api.act(order.id, 'deliver')).status, 200);
      const sold = await currentTag(api, pet.id);
      assert.ok(sold !== pending && sold !== available, 'delivering (pending → sold) changes the tag');
      assertError(await api.patch(pet.id, { name: 'Late' }, { 'if-match': pending }), 412, 'precondition_failed');
    });

    test('when If-Match is stale, then PATCH and DELETE answer 412 precondition_failed and nothing changes; the current tag, a list holding it, or * succeed', async () => {
      const { api } = await account('If-Match');
      const pet = await api.createOk({ name: 'Cond', categoryId: 1, status: 'available' });
      const stale = await currentTag(api, pet.id);
      const changed = await api.patchOk(pet.id, { name: 'Cond 2' });
      const before = await api.lastSequence();
      // A comma inside a quoted tag is part of the tag (RFC 9110's list grammar), not a separator.
      for (const ifMatch of [stale, '"nope"', `W/${await currentTag(api, pet.id)}`, `"x", ${stale}`, '"a,b"', `"x,y" , ${stale}`]) {
        assertError(await api.patch(pet.id, { name: 'Lost' }, { 'if-match': ifMatch }), 412, 'precondition_failed', new RegExp(`Pet ${pet.id}`));
        assertError(await api.remove(pet.id, { 'if-match': ifMatch }), 412, 'precondition_failed');
      }
      assert.deepEqual((await api.get(pet.id)).body, changed);
      assert.deepEqual(await api.events(before), [], 'a refused change writes no event');

      const current = await currentTag(api, pet.id);
      const byTag = await api.patch(pet.id, { name: 'Cond 3' }, { 'if-match': current });
      assert.equal(byTag.status, 200, byTag.text);
      const byList = await api.patch(pet.id, { name: 'Cond 4' }, { 'if-match': `"other", ${etagOf(byTag)}` });
      assert.equal(byList.status, 200, byList.text);
      const byStar = await api.patch(pet.id, { name: 'Cond 5' }, { 'if-match': '*' });
      assert.equal(byStar.status, 200, byStar.text);
      assert.equal((byStar.body as Pet).name, 'Cond 5');
      assertError(await api.patch(pet.id, { name: 'Cond 6' }, { 'if-match': etagOf(byList) }), 412, 'precondition_failed', undefined);

      const deleted = await api.remove(pet.id, { 'if-match': etagOf(byStar) });
      assert.equal(deleted.status, 204, deleted.text);
      // `*` matches any existing pet; a deleted one is 404 first.
      assertError(await api.remove(pet.id, { 'if-match': '*' }), 404, 'not_found');
      assertError(await api.patch(pet.id, { name: 'Ghost' }, { 'if-match': '*' }), 404, 'not_found');
      assertError(await api.patch(999_999, { name: 'Ghost' }, { 'if-match': stale }), 404, 'not_found');
      const star = await api.createOk({ name: 'Star', categoryId: 1 });
      assert.equal((await api.remove(star.id, { 'if-match': '*' })).status, 204);
    });

    test('when If-Match is malformed, then 400 invalid_request naming the header and nothing changes, on reads too; a malformed If-None-Match is refused on PATCH and DELETE and ignored on GET (200 with the pet)', async () => {
      const { api } = await account('Malformed');
      const pet = await api.createOk({ name: 'Shape', categoryId: 1 });
      const before = await api.lastSequence();
      for (const value of ['abc', '"abc', 'abc"', '"a"b"', '"a", junk', 'W/abc', ',', '**', '"a" "b"']) {
        assertError(await api.patch(pet.id, { name: 'X' }, { 'if-match': value }), 400, 'invalid_request', /If-Match/);
        assertError(await api.remove(pet.id, { 'if-match': value }), 400, 'invalid_request', /If-Match/);
        assertError(await api.get(pet.id, { 'if-match': value }), 400, 'invalid_request', /If-Match/);
        assertError(await api.patch(pet.id, { name: 'X' }, { 'if-none-match': value }), 400, 'invalid_request', /If-None-Match/);
        assertError(await api.remove(pet.id, { 'if-none-match': value }), 400, 'invalid_request', /If-None-Match/);
        const read = await api.get(pet.id, { 'if-none-match': value });
        assert.equal(read.status, 200, `If-None-Match: ${value}`);
        assert.deepEqual(read.body, pet);
      }
      assert.deepEqual((await api.get(pet.id)).body, pet);
      assert.deepEqual(await api.events(before), []);
    });

    test('when checks collide, then 404 comes first; DELETE answers 409 before 412; PATCH answers 412 before 409', async () => {
      const { api } = await account('Order of checks');
      const pet = await api.createOk({ name: 'Busy', categoryId: 1, status: 'available' });
      const stale = await currentTag(api, pet.id);
      await api.placeOk(pet.id);
      assertError(await api.remove(pet.id, { 'if-match': stale }), 409, 'pet_has_open_order');
      assertError(await api.patch(pet.id, { status: 'sold' }, { 'if-match': stale }), 412, 'precondition_failed');
      assertError(await api.patch(pet.id, { status: 'sold' }, { 'if-match': await currentTag(api, pet.id) }), 409, 'pet_has_open_order');
      assertError(await api.remove(pet.id + 100, { 'if-match': stale }), 404, 'not_found');
      assert.deepEqual((await api.get(pet.id)).body, { ...pet, status: 'pending' });
    });

    test('when If-None-Match names the current tag (or *, or W/ of it), then getPet answers 304 with the ETag and no body; another tag answers 200', async () => {
      const { api } = await account('If-None-Match');
      const pet = await api.createOk({ name: 'Cache', categoryId: 1, status: 'sold' });
      const tag = await currentTag(api, pet.id);
      for (const value of [tag, '*', `W/${tag}`, `"other", ${tag}`]) {
        const res = await api.get(pet.id, { 'if-none-match': value });
        assert.equal(res.status, 304, value);
        assert.equal(res.text, '');
        assert.equal(res.headers.get('etag'), tag);
      }
      const other = await api.get(pet.id, { 'if-none-match': '"other"' });
      assert.equal(other.status, 200);
      assert.deepEqual(other.body, pet);
      const changed = await api.patch(pet.id, { name: 'Cache 2' });
      const fresh = await api.get(pet.id, { 'if-none-match': tag });
      assert.equal(fresh.status, 200, 'the old tag no longer matches');
      assert.deepEqual(fresh.body, changed.body);
      assert.equal(etagOf(fresh), etagOf(changed));
      assertError(await api.get(pet.id + 100, { 'if-none-match': '*' }), 404, 'not_found');
    });

    test('when PATCH or DELETE sends If-None-Match naming the pet\'s current tag (or *, or W/ of it), then 412 precondition_failed and nothing changes; a tag it does not have lets the change through', async () => {
      const { api } = await account('If-None-Match on changes');
      const pet = await api.createOk({ name: 'Kept', categoryId: 1, status: 'available' });
      const tag = await currentTag(api, pet.id);
      const before = await api.lastSequence();
      for (const value of ['*', tag, `W/${tag}`, `"other", ${tag}`]) {
        assertError(await api.patch(pet.id, { name: 'Lost' }, { 'if-none-match': value }), 412, 'precondition_failed', new RegExp(`Pet ${pet.id} exists and If-None-Match`));
        assertError(await api.remove(pet.id, { 'if-none-match': value }), 412, 'precondition_failed', /If-None-Match/);
      }
      assert.deepEqual((await api.get(pet.id)).body, pet, 'nothing changed');
      assert.equal(await currentTag(api, pet.id), tag);
      assert.deepEqual(await api.events(before), [], 'a refused change writes no event');

      const changed = await api.patch(pet.id, { name: 'Changed' }, { 'if-none-match': '"other"' });
      assert.equal(changed.status, 200, changed.text);
      assert.equal((changed.body as Pet).name, 'Changed');
      // Both headers: If-Match first (RFC 9110 §13.2.2), then If-None-Match.
      const current = etagOf(changed);
      assertError(await api.patch(pet.id, { name: 'Both' }, { 'if-match': tag, 'if-none-match': '"other"' }), 412, 'precondition_failed', /If-Match does not match/);
      assertError(await api.patch(pet.id, { name: 'Both' }, { 'if-match': current, 'if-none-match': current }), 412, 'precondition_failed', /If-None-Match/);
      const both = await api.patch(pet.id, { name: 'Both' }, { 'if-match': current, 'if-none-match': tag });
      assert.equal(both.status, 200, both.text);
      assert.equal((await api.remove(pet.id, { 'if-none-match': tag })).status, 204, 'an old tag is not the current one');
      // A missing pet is 404 whatever the conditions say (RFC 9110 §13.2.1).
      assertError(await api.remove(pet.id, { 'if-none-match': '*' }), 404, 'not_found');
    });

    test('when getPet sends If-Match, then 412 precondition_failed unless it names the current tag (or is *); If-Match is evaluated before If-None-Match', async () => {
      const { api } = await account('If-Match on reads');
      const pet = await api.createOk({ name: 'Read', categoryId: 1 });
      const stale = await currentTag(api, pet.id);
      const changed = await api.patchOk(pet.id, { name: 'Read 2' });
      const tag = await currentTag(api, pet.id);
      // Several times each: the first read fills the cache, the next would be the fast path's.
      for (let i = 0; i < 3; i++) {
        for (const value of [stale, '"stale"', `W/${tag}`]) {
          const res = await api.get(pet.id, { 'if-match': value });
          assertError(res, 412, 'precondition_failed', new RegExp(`Pet ${pet.id} has changed`));
          assert.ok(res.headers.get('deprecation'), 'the deprecation headers on a 412 too');
        }
        for (const value of [tag, '*', `"other", ${tag}`]) {
          const res = await api.get(pet.id, { 'if-match': value });
          assert.equal(res.status, 200, `If-Match: ${value}`);
          assert.deepEqual(res.body, changed);
          assert.equal(etagOf(res), tag);
        }
      }
      assertError(await api.get(pet.id, { 'if-match': stale, 'if-none-match': tag }), 412, 'precondition_failed');
      const notModified = await api.get(pet.id, { 'if-match': tag, 'if-none-match': tag });
      assert.equal(notModified.status, 304);
      assert.equal(notModified.text, '');
      assertError(await api.get(pet.id + 100, { 'if-match': '*' }), 404, 'not_found');
    });

    test('when a createPet is replayed with its Idempotency-Key after the pet was patched, then 201 replays the pet as it is now; after it was deleted, 404 not_found', async () => {
      const { api } = await account('Replay');
      const key = randomUUID();
      const body = { name: 'Orig', categoryId: 1, status: 'available' };
      const first = await api.create(body, { 'idempotency-key': key });
      assert.equal(first.status, 201, first.text);
      const pet = first.body as Pet;
      const now = await api.patchOk(pet.id, { name: 'Now', status: null });
      const replay = await api.create(body, { 'idempotency-key': key });
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(replay.body, now);
      assert.equal(etagOf(replay), await currentTag(api, pet.id));

      assert.equal((await api.remove(pet.id)).status, 204);
      assertError(await api.create(body, { 'idempotency-key': key }), 404, 'not_found');
      assert.deepEqual(await api.pets(), [], 'the replay created nothing');
    });

    test('when 50 PATCHes carrying the same tag arrive at once, then exactly one answers 200, 49 answer 412, and the pet is the winner\'s patch', async () => {
      const { api } = await account('Race');
      const pet = await api.createOk({ name: 'Prize', categoryId: 1, status: 'available' });
      const tag = await currentTag(api, pet.id);
      const before = await api.lastSequence();
      const patches = Array.from({ length: 50 }, (_, i) => ({ name: `Winner ${i}`, categoryId: 100 + i, status: i % 2 === 0 ? 'sold' : null }));
      const results = await Promise.all(patches.map((patch) => api.patch(pet.id, patch, { 'if-match': tag })));
      const statuses = results.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 200).length, 1, `statuses: ${statuses.join(',')}`);
      for (const r of results.filter((r) => r.status !== 200)) assertError(r, 412, 'precondition_failed');
      const winner = patches[statuses.indexOf(200)]!;
      const expected: Pet = { id: pet.id, name: winner.name, categoryId: winner.categoryId, ...(winner.status ? { status: 'sold' as const } : {}) };
      assert.deepEqual(results[statuses.indexOf(200)]!.body, expected);
      assert.deepEqual((await api.get(pet.id)).body, expected);
      assert.deepEqual((await api.events(before)).map((e) => e.type), ['pet.updated', 'pet.status_changed'], 'one change, one set of events');
    });
  });
}
