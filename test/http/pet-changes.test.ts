// updatePet and deletePet over HTTP, on every store: merge patch semantics field by field, every
// bad input with its status and code, the events each change writes (and that refused or no-op
// requests write none), the open-order rules, and what deleting a pet means everywhere.
// ETags and conditional requests: pet-etags.test.ts. Every response is checked against the
// served document by the test app.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertError, env, type Order, type Pet, petApi, type PetApi } from '../helpers/pet-changes.js';

for (const backend of backends) {
  describe(`updatePet and deletePet over HTTP (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;

    const account = async (name: string): Promise<{ api: PetApi; key: string }> => {
      app = await getApp();
      const created = await app.createAccount(name);
      return { api: petApi(app, created), key: created.key };
    };

    test('when each field is patched alone, then only that field changes, the 200 carries the pet and an ETag, and GET agrees', async () => {
      const { api } = await account('Fields');
      const rex = await api.createOk({ name: 'Rex', categoryId: 1, status: 'available' });
      const steps: Array<[Record<string, unknown>, Pet]> = [
        [{ name: 'Rex II' }, { id: rex.id, name: 'Rex II', categoryId: 1, status: 'available' }],
        [{ categoryId: 9 }, { id: rex.id, name: 'Rex II', categoryId: 9, status: 'available' }],
        [{ status: 'sold' }, { id: rex.id, name: 'Rex II', categoryId: 9, status: 'sold' }],
        [{ status: null }, { id: rex.id, name: 'Rex II', categoryId: 9 }],
        [{ status: 'pending' }, { id: rex.id, name: 'Rex II', categoryId: 9, status: 'pending' }],
        [{ name: 'Zoë 🐶 ポチ', categoryId: Number.MAX_SAFE_INTEGER, status: 'available' }, { id: rex.id, name: 'Zoë 🐶 ポチ', categoryId: Number.MAX_SAFE_INTEGER, status: 'available' }],
        [{ name: '🐶'.repeat(255) }, { id: rex.id, name: '🐶'.repeat(255), categoryId: Number.MAX_SAFE_INTEGER, status: 'available' }],
        [{ status: null }, { id: rex.id, name: '🐶'.repeat(255), categoryId: Number.MAX_SAFE_INTEGER }],
      ];
      for (const [patch, expected] of steps) {
        const res = await api.patch(rex.id, patch);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, expected, JSON.stringify(patch));
        assert.match(res.headers.get('etag') ?? '', /^"[^"]+"$/);
        assert.deepEqual((await api.get(rex.id)).body, expected);
      }
      // A removed status is omitted, not null, as on create.
      assert.equal((await api.get(rex.id)).text.includes('status'), false);
      assert.equal((await api.patch(rex.id, { status: null })).text.includes('status'), false);
    });

    test('when the patch is sent as application/json or application/merge-patch+json, then both are accepted; other types answer 400 invalid_content_type and change nothing', async () => {
      const { api, key } = await account('Types');
      const pet = await api.createOk({ name: 'Kit', categoryId: 2 });
      const asJson = await api.patch(pet.id, { name: 'Kit J' }, { 'content-type': 'application/json' });
      assert.equal(asJson.status, 200, asJson.text);
      assert.equal((asJson.body as Pet).name, 'Kit J');
      const asMerge = await api.patch(pet.id, { name: 'Kit M' });
      assert.equal(asMerge.status, 200, asMerge.text);
      assert.equal((asMerge.body as Pet).name, 'Kit M');
      const before = await api.lastSequence();
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
        assertError(await app.request('PATCH', `/v1/pets/${pet.id}`, { key, rawBody: '{"name":"X"}', headers: { 'content-type': type } }), 400, 'invalid_content_type');
      }
      // Merge patch is for PATCH only: createPet still takes application/json alone.
      assertError(await app.request('POST', '/v1/pets', { key, rawBody: '{"name":"Y","categoryId":1}', headers: { 'content-type': 'application/merge-patch+json' } }), 400, 'invalid_content_type');
      assert.deepEqual((await api.get(pet.id)).body, { id: pet.id, name: 'Kit M', categoryId: 2 });
      assert.deepEqual(await api.pets(), [{ id: pet.id, name: 'Kit M', categoryId: 2 }], 'no pet was created');
      assert.deepEqual(await api.events(before), [], 'refused requests write no event');
    });

    test('when the patch is invalid (null name or categoryId, unknown field, bad value, not an object, no body, bad JSON), then 400 naming the field, and nothing changes', async () => {
      const { api, key } = await account('Invalid');
      const pet = await api.createOk({ name: 'Bad', categoryId: 3, status: 'available' });
      const before = await api.lastSequence();
      const naming: Array<[unknown, RegExp]> = [
        [{ name: null }, /"name"/],
        [{ categoryId: null }, /"categoryId"/],
        [{ name: null, status: 'sold' }, /"name"/],
        [{ color: 'brown' }, /"color"/],
        [{ status: 'sold', id: 99 }, /"id"/],
        [{ name: '' }, /"name"/],
        [{ name: '   ' }, /"name"/],
        [{ name: 'a\u0001b' }, /"name"/],
        [{ name: 'a'.repeat(256) }, /"name"/],
        [{ name: 42 }, /"name"/],
        [{ categoryId: 0 }, /"categoryId"/],
        [{ categoryId: -1 }, /"categoryId"/],
        [{ categoryId: 1.5 }, /"categoryId"/],
        [{ categoryId: '7' }, /"categoryId"/],
        [{ categoryId: Number.MAX_SAFE_INTEGER + 1 }, /"categoryId"/],
        [{ status: 'lost' }, /"status"/],
        [{ status: 'Available' }, /"status"/],
        [{ status: 1 }, /"status"/],
        [{ status: ['sold'] }, /"status"/],
      ];
      for (const [body, field] of naming) assertError(await api.patch(pet.id, body), 400, 'invalid_request', field);
      for (const body of [null, [], ['name'], 'Rex', 7]) assertError(await api.patch(pet.id, body), 400, 'invalid_request', /body/);
      assertError(await app.request('PATCH', `/v1/pets/${pet.id}`, { key }), 400, 'invalid_request', /body is required/);
      assertError(await app.request('PATCH', `/v1/pets/${pet.id}`, { key, rawBody: '{"name": ', headers: { 'content-type': 'application/merge-patch+json' } }), 400, 'invalid_json');
      assertError(await app.request('PATCH', `/v1/pets/${pet.id}`, { key, rawBody: '{"name": ', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
      for (const id of ['0', '-1', 'abc', '1.5', '9007199254740992', '1e3']) {
        assertError(await api.patch(id, { name: 'X' }), 400, 'invalid_request');
        assertError(await api.remove(id), 400, 'invalid_request');
      }
      assert.deepEqual((await api.get(pet.id)).body, pet);
      assert.deepEqual(await api.events(before), [], 'refused requests write no event');
    });

    test('when a patch changes nothing ({} or the current values), then 200 with the pet unchanged and no event', async () => {
      const { api } = await account('No-op');
      const withStatus = await api.createOk({ name: 'Same', categoryId: 4, status: 'sold' });
      const without = await api.createOk({ name: 'Bare', categoryId: 5 });
      const before = await api.lastSequence();
      const noOps: Array<[Pet, unknown]> = [
        [withStatus, {}],
        [withStatus, { name: 'Same' }],
        [withStatus, { name: 'Same', categoryId: 4, status: 'sold' }],
        [without, {}],
        [without, { status: null }],
        [without, { categoryId: 5, status: null }],
      ];
      for (const [pet, patch] of noOps) {
        const res = await api.patch(pet.id, patch);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, pet, JSON.stringify(patch));
        assert.equal(res.headers.get('etag'), (await api.get(pet.id)).headers.get('etag'));
      }
      assert.deepEqual(await api.events(before), [], 'a no-op writes no event');
    });

    test('when a pet is patched, then pet.updated carries the pet after and the changed fields\' old values; a status change also writes pet.status_changed (previousStatus null when there was none)', async () => {
      const { api } = await account('Events');
      const pet = await api.createOk({ name: 'Ev', categoryId: 1 });
      const cases: Array<[Record<string, unknown>, Record<string, unknown>, (string | null)?]> = [
        [{ name: 'Ev2' }, { name: 'Ev' }],
        [{ name: 'Ev2', categoryId: 2 }, { categoryId: 1 }],
        [{ status: 'available' }, { status: null }, null],
        [{ status: 'sold', name: 'Ev3' }, { name: 'Ev2', status: 'available' }, 'available'],
        [{ status: null, categoryId: 3 }, { categoryId: 2, status: 'sold' }, 'sold'],
        [{ status: 'pending', name: 'Ev4', categoryId: 4 }, { name: 'Ev3', categoryId: 3, status: null }, null],
      ];
      for (const [patch, previousAttributes, previousStatus] of cases) {
        const before = await api.lastSequence();
        const after = await api.patchOk(pet.id, patch);
        const expected: Array<[string, Record<string, unknown>]> = [['pet.updated', { object: after, previousAttributes }]];
        if (previousStatus !== undefined) expected.push(['pet.status_changed', { object: after, previousStatus }]);
        assert.deepEqual((await api.events(before)).map((e) => [e.type, e.data]), expected, JSON.stringify(patch));
      }
      const before = await api.lastSequence();
      const last = (await api.get(pet.id)).body as Pet;
      assert.equal((await api.remove(pet.id)).status, 204);
      assert.deepEqual((await api.events(before)).map((e) => [e.type, e.data]), [['pet.deleted', { object: last }]], 'pet.deleted carries the pet as it was');
    });

    test('when the pet has a placed order, then changing its status (to anything, null included) and deleting it answer 409 pet_has_open_order; name and category may change; after the order ends any status may be set', async () => {
      const { api } = await account('Open order');
      const pet = await api.createOk({ name: 'Held', categoryId: 1, status: 'available' });
      const order = await api.placeOk(pet.id);
      const before = await api.lastSequence();
      for (const status of ['available', 'sold', null]) {
        assertError(await api.patch(pet.id, { status }), 409, 'pet_has_open_order', new RegExp(`Pet ${pet.id}`));
        // The whole patch is refused, not only its status.
        assertError(await api.patch(pet.id, { name: 'Half', status }), 409, 'pet_has_open_order');
      }
      assertError(await api.remove(pet.id), 409, 'pet_has_open_order');
      assert.deepEqual((await api.get(pet.id)).body, { ...pet, status: 'pending' });
      assert.deepEqual(await api.events(before), [], 'refused: no event');

      assert.deepEqual(await api.patchOk(pet.id, { status: 'pending' }), { ...pet, status: 'pending' }, 'the status it has is no change');
      assert.deepEqual(await api.patchOk(pet.id, { name: 'Renamed', categoryId: 8 }), { id: pet.id, name: 'Renamed', categoryId: 8, status: 'pending' });
      assert.deepEqual((await api.events(before)).map((e) => e.type), ['pet.updated'], 'the rename alone writes an event');

      assert.equal((await api.act(order.id, 'cancel')).status, 200);
      assert.deepEqual(await api.patchOk(pet.id, { status: 'sold' }), { id: pet.id, name: 'Renamed', categoryId: 8, status: 'sold' });
      const second = await api.createOk({ name: 'Sold one', categoryId: 1, status: 'available' });
      const delivered = await api.placeOk(second.id);
      assert.equal((await api.act(delivered.id, 'deliver')).status, 200);
      assert.equal((await api.patchOk(second.id, { status: 'available' })).status, 'available', 'a sold pet may be put back on sale');
      assert.equal((await api.placeOk(second.id)).petId, second.id);
    });

    test('when a pet is deleted, then it is 404 everywhere, lists and filters omit it, a second DELETE is 404, its id is never reused, and its ended orders stay readable', async () => {
      const { api } = await account('Delete');
      const keep = await api.createOk({ name: 'Keep', categoryId: 1, status: 'available' });
      const sold = await api.createOk({ name: 'Sold', categoryId: 1, status: 'available' });
      const cancelled = await api.createOk({ name: 'Cancelled', categoryId: 1, status: 'available' });
      const last = await api.createOk({ name: 'Last', categoryId: 2, status: 'available' });
      const deliveredOrder = await api.placeOk(sold.id);
      assert.equal((await api.act(deliveredOrder.id, 'deliver')).status, 200);
      const cancelledOrder = await api.placeOk(cancelled.id);
      assert.equal((await api.act(cancelledOrder.id, 'cancel')).status, 200);

      for (const pet of [sold, cancelled, last]) {
        const res = await api.remove(pet.id);
        assert.equal(res.status, 204, res.text);
        assert.equal(res.text, '');
      }
      for (const pet of [sold, cancelled, last]) {
        assertError(await api.get(pet.id), 404, 'not_found');
        assertError(await api.remove(pet.id), 404, 'not_found');
        assertError(await api.patch(pet.id, { name: 'Ghost' }), 404, 'not_found');
        assertError(await api.patch(pet.id, {}), 404, 'not_found');
        assertError(await api.place(pet.id), 404, 'not_found');
      }
      assert.deepEqual(await api.pets(), [keep]);
      assert.deepEqual(await api.pets('&status=available'), [keep]);
      assert.deepEqual(await api.pets('&status=sold'), []);
      assert.deepEqual(await api.pets('&categoryId=2'), []);
      // Ended orders keep their petId and status.
      for (const [order, status] of [[deliveredOrder, 'delivered'], [cancelledOrder, 'cancelled']] as const) {
        const res = await api.getOrder(order.id);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual([(res.body as Order).petId, (res.body as Order).status], [order.petId, status]);
      }
      // The highest id was deleted: the next pet still gets a new one.
      const next = await api.createOk({ name: 'Next', categoryId: 1 });
      assert.equal(next.id, last.id + 1);
      assert.deepEqual((await api.pets()).map((p) => p.id), [keep.id, next.id]);
    });

    test('when another account patches or deletes this account\'s pet, or a key is missing, then 404 / 401 and nothing changes', async () => {
      const { api } = await account('Owner');
      const { api: other } = await account('Other');
      const pets = [await api.createOk({ name: 'A', categoryId: 1 }), await api.createOk({ name: 'B', categoryId: 1, status: 'available' })];
      const target = pets[1]!;
      assertError(await other.patch(target.id, { name: 'Stolen' }), 404, 'not_found');
      assertError(await other.patch(target.id, { name: 'Stolen' }, { 'if-match': '*' }), 404, 'not_found');
      assertError(await other.remove(target.id), 404, 'not_found');
      for (const method of ['PATCH', 'DELETE']) {
        assertError(await app.request(method, `/v1/pets/${target.id}`, { ...(method === 'PATCH' ? { body: { name: 'X' } } : {}) }), 401, 'unauthorized');
      }
      assert.deepEqual(await api.pets(), pets);
      assert.deepEqual(await other.events(), []);
    });
  });
}
