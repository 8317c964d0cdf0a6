// The order repository's contract, and the pet-status methods orders use: every backend must
// behave the same through them (real databases, no mocks; PostgreSQL runs when
// PETSTORE_TEST_POSTGRES_URL is set). The rules that use them: store-contract.test.ts (orders).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Order } from '../src/schemas/index.js';
import { backends } from './helpers/backends.js';
import { Rollback, storeWithAccounts, T0 } from './helpers/stores.js';
import { createPet } from './helpers/store.js';

const T1 = '2024-05-02T00:00:00.000Z';

for (const backend of backends) {
  describe(`${backend.name}: orders repository`, () => {
    it('when orders are inserted, then each account numbers its own from 1, and get returns them to their account only', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      const pet = await createPet(store, a!.id, { name: 'Rex', categoryId: 1 }, T0);
      const pet2 = await createPet(store, a!.id, { name: 'Max', categoryId: 1 }, T0);
      const other = await createPet(store, b!.id, { name: 'Fido', categoryId: 1 }, T0);
      const first = await store.db.transaction((tx) => store.orders.insert(tx, a!.id, pet.id, T0));
      const second = await store.db.transaction((tx) => store.orders.insert(tx, a!.id, pet2.id, T1));
      const theirs = await store.db.transaction((tx) => store.orders.insert(tx, b!.id, other.id, T0));
      assert.deepEqual(first, { id: 1, petId: pet.id, status: 'placed', createdAt: T0, updatedAt: T0 });
      assert.deepEqual(second, { id: 2, petId: pet2.id, status: 'placed', createdAt: T1, updatedAt: T1 });
      assert.deepEqual(theirs, { id: 1, petId: other.id, status: 'placed', createdAt: T0, updatedAt: T0 });
      assert.deepEqual(await store.orders.get(a!.id, 1), first);
      assert.deepEqual(await store.orders.get(b!.id, 1), theirs);
      assert.equal(await store.orders.get(b!.id, 2), undefined, "another account's order");
      assert.equal(await store.orders.get(a!.id, 3), undefined);
      assert.equal(await store.orders.get(a!.id, 1.5), undefined);
    });

    it('when a transaction that inserted an order rolls back, then the order is gone and its id is handed out again', async (t) => {
      const { store, accounts: [a] } = await storeWithAccounts(t, backend, 1);
      const pet = await createPet(store, a!.id, { name: 'Rex', categoryId: 1 }, T0);
      await assert.rejects(
        store.db.transaction(async (tx) => {
          assert.equal((await store.orders.insert(tx, a!.id, pet.id, T0)).id, 1);
          throw new Rollback();
        }),
        Rollback,
      );
      assert.deepEqual(await store.orders.list({ accountId: a!.id, limit: 10 }), []);
      assert.equal((await store.db.transaction((tx) => store.orders.insert(tx, a!.id, pet.id, T0))).id, 1);
    });

    it('when orders are listed, then they come in ascending id order after afterId, at most limit, filtered by status, of that account only', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      const orders: Order[] = [];
      for (let i = 0; i < 5; i++) {
        const pet = await createPet(store, a!.id, { name: `P${i}`, categoryId: 1 }, T0);
        orders.push(await store.db.transaction((tx) => store.orders.insert(tx, a!.id, pet.id, T0)));
      }
      const cancelled = await store.db.transaction((tx) => store.orders.setStatus(tx, a!.id, 2, 'placed', 'cancelled', T1));
      assert.deepEqual(await store.orders.list({ accountId: a!.id, limit: 10 }), [orders[0], cancelled, ...orders.slice(2)]);
      assert.deepEqual((await store.orders.list({ accountId: a!.id, limit: 3, afterId: 1 })).map((o) => o.id), [2, 3, 4]);
      assert.deepEqual(await store.orders.list({ accountId: a!.id, limit: 10, status: 'cancelled' }), [cancelled]);
      assert.deepEqual((await store.orders.list({ accountId: a!.id, limit: 10, status: 'placed', afterId: 3 })).map((o) => o.id), [4, 5]);
      assert.deepEqual((await store.orders.list({ accountId: a!.id, limit: 2, status: 'placed' })).map((o) => o.id), [1, 3]);
      assert.deepEqual(await store.orders.list({ accountId: b!.id, limit: 10 }), []);
    });

    it('when setStatus finds the order in `from`, then it moves with its updatedAt; from any other status, or for another account, nothing changes', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      const pet = await createPet(store, a!.id, { name: 'Rex', categoryId: 1 }, T0);
      const order = await store.db.transaction((tx) => store.orders.insert(tx, a!.id, pet.id, T0));
      assert.equal(await store.db.transaction((tx) => store.orders.setStatus(tx, a!.id, order.id, 'delivered', 'cancelled', T1)), undefined);
      assert.equal(await store.db.transaction((tx) => store.orders.setStatus(tx, b!.id, order.id, 'placed', 'cancelled', T1)), undefined);
      assert.equal(await store.db.transaction((tx) => store.orders.setStatus(tx, a!.id, 99, 'placed', 'cancelled', T1)), undefined);
      assert.deepEqual(await store.orders.get(a!.id, order.id), order);
      const delivered = await store.db.transaction((tx) => store.orders.setStatus(tx, a!.id, order.id, 'placed', 'delivered', T1));
      assert.deepEqual(delivered, { ...order, status: 'delivered', updatedAt: T1 });
      assert.equal(await store.db.transaction((tx) => store.orders.setStatus(tx, a!.id, order.id, 'placed', 'cancelled', T1)), undefined, 'moves once');
      assert.deepEqual(await store.orders.get(a!.id, order.id), delivered);
    });

    it('when an order is locked, then lock returns it, and another transaction locking it waits until the first ends', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      const pet = await createPet(store, a!.id, { name: 'Rex', categoryId: 1 }, T0);
      const order = await store.db.transaction((tx) => store.orders.insert(tx, a!.id, pet.id, T0));
      assert.equal(await store.db.transaction((tx) => store.orders.lock(tx, b!.id, order.id)), undefined, "another account's order");
      assert.equal(await store.db.transaction((tx) => store.orders.lock(tx, a!.id, 99)), undefined);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const first = store.db.transaction(async (tx) => {
        assert.deepEqual(await store.orders.lock(tx, a!.id, order.id), order);
        locked();
        await held;
        return store.orders.setStatus(tx, a!.id, order.id, 'placed', 'delivered', T1);
      });
      await isLocked;
      let secondSaw = undefined as Order | undefined;
      const second = store.db.transaction(async (tx) => (secondSaw = await store.orders.lock(tx, a!.id, order.id)));
      try {
        await sleep(200);
        assert.equal(secondSaw, undefined, 'the second lock waits');
      } finally {
        release();
      }
      await first;
      assert.equal((await second)?.status, 'delivered', 'and then sees what the first committed');
    });
  });

  describe(`${backend.name}: pet status for orders`, () => {
    it('when a pet is locked, then lock returns it (no status when it has none), and nothing for an unknown pet or another account\'s', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      const rex = await createPet(store, a!.id, { name: 'Rex', categoryId: 1, status: 'available' }, T0);
      const bare = await createPet(store, a!.id, { name: 'Bare', categoryId: 1 }, T0);
      assert.deepEqual(await store.db.transaction((tx) => store.pets.lock(tx, a!.id, rex.id)), rex);
      assert.deepEqual(await store.db.transaction((tx) => store.pets.lock(tx, a!.id, bare.id)), { id: bare.id, name: 'Bare', categoryId: 1 });
      assert.equal(await store.db.transaction((tx) => store.pets.lock(tx, a!.id, 99)), undefined);
      assert.equal(await store.db.transaction((tx) => store.pets.lock(tx, b!.id, rex.id)), undefined);
    });

    it('when setStatus finds the pet in `from`, then it moves and comes back whole; otherwise nothing changes', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      const rex = await createPet(store, a!.id, { name: 'Rex', categoryId: 7, status: 'available' }, T0);
      assert.equal(await store.db.transaction((tx) => store.pets.setStatus(tx, a!.id, rex.id, 'pending', 'sold')), undefined);
      assert.equal(await store.db.transaction((tx) => store.pets.setStatus(tx, b!.id, rex.id, 'available', 'pending')), undefined);
      assert.deepEqual(await store.pets.get(a!.id, rex.id), rex);
      assert.deepEqual(await store.db.transaction((tx) => store.pets.setStatus(tx, a!.id, rex.id, 'available', 'pending')), { ...rex, status: 'pending' });
      assert.deepEqual(await store.pets.get(a!.id, rex.id), { ...rex, status: 'pending' });
    });

    it('when a pet read before (and cached) changes status, then the next read shows the change; when the change rolls back, the old status', async (t) => {
      const { store, accounts: [a] } = await storeWithAccounts(t, backend, 1);
      const rex = await createPet(store, a!.id, { name: 'Rex', categoryId: 1, status: 'available' }, T0);
      for (let i = 0; i < 2; i++) {
        assert.equal((await store.pets.get(a!.id, rex.id))?.status, 'available');
        assert.deepEqual((await store.pets.list({ accountId: a!.id, limit: 10, status: 'available' })).map((p) => p.id), [rex.id]);
      }
      await store.db.transaction((tx) => store.pets.setStatus(tx, a!.id, rex.id, 'available', 'pending'));
      assert.equal((await store.pets.get(a!.id, rex.id))?.status, 'pending');
      assert.deepEqual(await store.pets.list({ accountId: a!.id, limit: 10, status: 'available' }), []);
      await assert.rejects(
        store.db.transaction(async (tx) => {
          await store.pets.setStatus(tx, a!.id, rex.id, 'pending', 'sold');
          throw new Rollback();
        }),
        Rollback,
      );
      assert.equal((await store.pets.get(a!.id, rex.id))?.status, 'pending');
      assert.deepEqual(await store.pets.list({ accountId: a!.id, limit: 10, status: 'sold' }), []);
    });

    it('when two transactions lock one pet, then the second waits for the first and sees what it committed', async (t) => {
      const { store, accounts: [a] } = await storeWithAccounts(t, backend, 1);
      const rex = await createPet(store, a!.id, { name: 'Rex', categoryId: 1, status: 'available' }, T0);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const first = store.db.transaction(async (tx) => {
        await store.pets.lock(tx, a!.id, rex.id);
        locked();
        await held;
        await store.pets.setStatus(tx, a!.id, rex.id, 'available', 'pending');
      });
      await isLocked;
      let secondSaw = undefined as { status?: string } | undefined;
      const second = store.db.transaction(async (tx) => {
        secondSaw = await store.pets.lock(tx, a!.id, rex.id);
      });
      try {
        await sleep(200);
        assert.equal(secondSaw, undefined, 'the second lock waits');
      } finally {
        release();
      }
      await Promise.all([first, second]);
      assert.equal((secondSaw as { status?: string } | undefined)?.status, 'pending');
    });
  });
}
