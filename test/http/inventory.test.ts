// The inventory over HTTP, on every store: exact counts after each kind of change, a seeded
// random sequence of changes across two accounts checked after every step against a model of
// the inventory, the categories and the pets, and isolation between accounts. Every response is
// checked against the served document by the test app.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertError, env, type Inventory, type Pet, petApi, type PetApi, type Status } from '../helpers/pet-changes.js';
import { runModelSteps } from '../helpers/inventory-model.js';

const counts = (available: number, pending: number, sold: number, withoutStatus: number): Inventory => ({
  available, pending, sold, withoutStatus, total: available + pending + sold + withoutStatus,
});

for (const backend of backends) {
  describe(`the inventory over HTTP (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;

    const account = async (name: string): Promise<PetApi> => {
      app = await getApp();
      return petApi(app, await app.createAccount(name));
    };
    const pet = (api: PetApi, status?: Status, categoryId = 1): Promise<Pet> => api.createOk({ name: 'Inv', categoryId, ...(status ? { status } : {}) });

    test('when pets are created (with and without status), patched and deleted, then the inventory is exact after each change, and refused changes count nothing', async () => {
      const api = await account('Counts');
      assert.deepEqual(await api.inventory(), counts(0, 0, 0, 0), 'a new account counts nothing');
      const a1 = await pet(api, 'available');
      const a2 = await pet(api, 'available');
      const p1 = await pet(api, 'pending');
      const s1 = await pet(api, 'sold');
      const n1 = await pet(api);
      const n2 = await pet(api);
      assert.deepEqual(await api.inventory(), counts(2, 1, 1, 2));

      await api.patchOk(a1.id, { status: 'sold' });
      assert.deepEqual(await api.inventory(), counts(1, 1, 2, 2));
      await api.patchOk(n1.id, { status: 'available' });
      assert.deepEqual(await api.inventory(), counts(2, 1, 2, 1));
      await api.patchOk(s1.id, { status: null });
      assert.deepEqual(await api.inventory(), counts(2, 1, 1, 2));
      await api.patchOk(p1.id, { name: 'Renamed', categoryId: 2 });
      await api.patchOk(p1.id, { status: 'pending' });
      assert.deepEqual(await api.inventory(), counts(2, 1, 1, 2), 'no status change, no count change');

      for (const [victim, expected] of [[a2, counts(1, 1, 1, 2)], [p1, counts(1, 0, 1, 2)], [a1, counts(1, 0, 0, 2)], [n2, counts(1, 0, 0, 1)]] as const) {
        assert.equal((await api.remove(victim.id)).status, 204);
        assert.deepEqual(await api.inventory(), expected, `after deleting ${victim.id}`);
      }
      assertError(await api.remove(a2.id), 404, 'not_found');
      assertError(await api.create({ name: '', categoryId: 1, status: 'sold' }), 400, 'invalid_request');
      assertError(await api.patch(n1.id, { status: 'lost' }), 400, 'invalid_request');
      const replayed = { name: 'Once', categoryId: 1, status: 'sold' };
      assert.equal((await api.create(replayed, { 'idempotency-key': 'inv-1' })).status, 201);
      assert.equal((await api.create(replayed, { 'idempotency-key': 'inv-1' })).headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(await api.inventory(), counts(1, 0, 1, 1), 'a failed create counts nothing; a replay counts once');
    });

    test('when orders are placed, delivered and cancelled, then the pets they move are counted at once; refused moves count nothing', async () => {
      const api = await account('Orders');
      const pets = [await pet(api, 'available'), await pet(api, 'available'), await pet(api, 'available')];
      assert.deepEqual(await api.inventory(), counts(3, 0, 0, 0));
      const orders = [await api.placeOk(pets[0]!.id), await api.placeOk(pets[1]!.id)];
      assert.deepEqual(await api.inventory(), counts(1, 2, 0, 0));
      assertError(await api.place(pets[0]!.id), 409, 'pet_not_available');
      assertError(await api.patch(pets[0]!.id, { status: 'sold' }), 409, 'pet_has_open_order');
      assertError(await api.remove(pets[0]!.id), 409, 'pet_has_open_order');
      assert.deepEqual(await api.inventory(), counts(1, 2, 0, 0));
      assert.equal((await api.act(orders[0]!.id, 'deliver')).status, 200);
      assert.deepEqual(await api.inventory(), counts(1, 1, 1, 0));
      assert.equal((await api.act(orders[1]!.id, 'cancel')).status, 200);
      assert.deepEqual(await api.inventory(), counts(2, 0, 1, 0));
      assert.equal((await api.act(orders[1]!.id, 'cancel')).status, 200, 'cancel again: unchanged');
      assertError(await api.act(orders[0]!.id, 'cancel'), 409, 'invalid_transition');
      assert.deepEqual(await api.inventory(), counts(2, 0, 1, 0));
      // A sold pet deleted leaves its delivered order; the counts drop it.
      assert.equal((await api.remove(pets[0]!.id)).status, 204);
      assert.deepEqual(await api.inventory(), counts(2, 0, 0, 0));
      const again = await api.placeOk(pets[1]!.id);
      assert.equal((await api.act(again.id, 'deliver')).status, 200);
      assert.deepEqual(await api.inventory(), counts(1, 0, 1, 0));
    });

    test('when another account reads, changes or orders this account\'s pets and categories, then 404, and neither account\'s counts ever show the other\'s', async () => {
      const mine = await account('Isolated mine');
      const theirs = await account('Isolated theirs');
      // More pets here than there, so these ids do not exist in the other account.
      const own = [await pet(mine, 'available', 11), await pet(mine, 'sold', 11), await pet(mine, 'pending', 12), await pet(mine, undefined, 13)];
      await mine.putCategory(14, { name: 'Mine only' });
      const their = await pet(theirs, 'sold', 21);
      const hidden = own.slice(1);
      for (const p of hidden) {
        assertError(await theirs.get(p.id), 404, 'not_found');
        assertError(await theirs.patch(p.id, { name: 'Stolen' }), 404, 'not_found');
        assertError(await theirs.patch(p.id, { status: 'sold' }, { 'if-match': '*' }), 404, 'not_found');
        assertError(await theirs.remove(p.id), 404, 'not_found');
        assertError(await theirs.place(p.id), 404, 'not_found');
      }
      for (const id of [11, 12, 13, 14]) {
        assertError(await theirs.category(id), 404, 'not_found');
        assertError(await theirs.deleteCategory(id), 404, 'not_found');
      }
      assert.deepEqual(await theirs.inventory(), counts(0, 0, 1, 0));
      assert.deepEqual(await theirs.categories(), [{ id: 21, petCount: 1 }]);
      assert.deepEqual(await theirs.pets('&categoryId=11'), []);
      assert.deepEqual(await mine.inventory(), counts(1, 1, 1, 1));
      assert.deepEqual(await mine.categories(), [{ id: 11, petCount: 2 }, { id: 12, petCount: 1 }, { id: 13, petCount: 1 }, { id: 14, name: 'Mine only', petCount: 0 }]);
      assert.deepEqual(await mine.pets(), own);
      // The other account's changes to its own pet 1 never reach this account's pet 1.
      await theirs.patchOk(their.id, { status: null, categoryId: 11 });
      assert.equal((await theirs.remove(their.id)).status, 204);
      assert.deepEqual(await theirs.inventory(), counts(0, 0, 0, 0));
      assert.deepEqual(await mine.get(their.id).then((r) => r.body), own[0]);
      assert.deepEqual(await mine.inventory(), counts(1, 1, 1, 1));
      assert.deepEqual((await mine.category(11)).body, { id: 11, petCount: 2 });
    });

    test('when a seeded random sequence of creates, patches, deletes, category changes and order moves runs across two accounts, then after every step the inventory, categories and pets match the model', async () => {
      app = await getApp();
      const accounts = [await app.createAccount('Model A'), await app.createAccount('Model B')];
      await runModelSteps(accounts.map((a) => petApi(app, a)), { steps: 150 });
    });
  });
}
