// @petstore/client's inventory operations (experimental) against the real server on each store:
// pets.update / pets.delete and categories.put / delete with ETags (etagOf, ifMatch), categories, inventory, and the
// PetstoreError of each error these operations document.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { etagOf, type PetStatus } from '@petstore/client';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertErrorFromAnswer, loseAnswer, newAccountClient, petstoreError, type RecordingOptions } from './helpers.js';

const STRONG_ETAG = /^"[^"]+"$/;

for (const backend of backends) {
  describe(`@petstore/client pets, categories and inventory against the real server (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env: { PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' } });
    let app: TestApp;
    before(async () => {
      app = await getApp();
    });

    async function client(options: RecordingOptions = {}) {
      const account = await newAccountClient(app, options);
      const pet = (status: PetStatus | null = 'available', categoryId = 1) =>
        account.petstore.pets.create({ name: 'Rexx', categoryId, ...(status ? { status } : {}) });
      return { ...account, pet };
    }

    test('when a pet is created, read and updated, then etagOf gives each answer\'s strong ETag, and it changes with the pet', async () => {
      const { petstore, attempts, pet } = await client();
      const rexx = await pet();
      const created = etagOf(rexx);
      assert.match(created ?? '', STRONG_ETAG);
      assert.equal(etagOf(await petstore.pets.get(rexx.id)), created);
      const rex = await petstore.pets.update(rexx.id, { name: 'Rex' });
      assert.deepEqual(rex, { ...rexx, name: 'Rex' });
      assert.match(etagOf(rex) ?? '', STRONG_ETAG);
      assert.notEqual(etagOf(rex), created);
      const patch = attempts.at(-1)!;
      assert.equal(patch.method, 'PATCH');
      assert.equal(new URL(patch.url).pathname, `/v1/pets/${rexx.id}`);
      const listed = (await petstore.pets.list()).data[0]!;
      assert.deepEqual(listed, rex);
      assert.equal(etagOf(listed), undefined, 'list items carry no tag');
    });

    test('when update is given the current tag, then it applies; a stale tag fails with 412 precondition_failed, not retried, and nothing changes', async () => {
      const { petstore, attempts, pet } = await client({ maxRetries: 2 });
      const rexx = await pet();
      const renamed = await petstore.pets.update(rexx.id, { name: 'Rex' }, { ifMatch: etagOf(rexx) });
      assert.equal(renamed.name, 'Rex');
      attempts.length = 0;
      const stale = await petstoreError(petstore.pets.update(rexx.id, { status: 'sold' }, { ifMatch: etagOf(rexx) }));
      assertErrorFromAnswer(stale, attempts, 412, 'precondition_failed');
      attempts.length = 0;
      const staleDelete = await petstoreError(petstore.pets.delete(rexx.id, { ifMatch: etagOf(rexx) }));
      assertErrorFromAnswer(staleDelete, attempts, 412, 'precondition_failed');
      assert.deepEqual((await petstore.pets.list()).data, [renamed]);
      const star = await petstore.pets.update(rexx.id, { status: null }, { ifMatch: '*' });
      assert.deepEqual(star, { id: rexx.id, name: 'Rex', categoryId: 1 }, 'status: null removes the status');
    });

    test('when ifMatch is given as undefined (etagOf of a list item), then the call throws a TypeError and sends nothing, rather than change the pet unconditionally', async () => {
      const { petstore, attempts, pet } = await client();
      const rexx = await pet();
      const [listed] = (await petstore.pets.list()).data;
      assert.equal(etagOf(listed!), undefined);
      attempts.length = 0;
      for (const call of [
        () => petstore.pets.update(rexx.id, { status: 'sold' }, { ifMatch: etagOf(listed!) }),
        () => petstore.pets.delete(rexx.id, { ifMatch: etagOf(listed!) }),
        () => petstore.categories.put(1, 'Dogs', { ifNoneMatch: undefined }),
        () => petstore.categories.delete(1, { ifMatch: undefined }),
      ]) {
        await assert.rejects(call(), (err: Error) => err instanceof TypeError && /no ETag is known for this object/.test(err.message));
      }
      assert.equal(attempts.length, 0, 'nothing was sent');
      assert.deepEqual(await petstore.pets.get(rexx.id), rexx, 'the pet is unchanged');
    });

    test('when a conditional update loses its answer, then it is not repeated (a repeat would answer 412); an unconditional one is, and applies once', async () => {
      const lose = loseAnswer();
      const { petstore, attempts, pet } = await client({ maxRetries: 2, onAnswer: lose.onAnswer });
      const rexx = await pet();
      attempts.length = 0;
      lose.armOnce();
      const lost = await petstoreError(petstore.pets.update(rexx.id, { name: 'Rex' }, { ifMatch: etagOf(rexx) }));
      assert.equal(lost.code, 'network_error');
      assert.deepEqual(attempts.map((a) => a.status), [200], 'one attempt, whose answer was lost');
      attempts.length = 0;
      lose.armOnce();
      const retried = await petstore.pets.update(rexx.id, { name: 'Rexy' });
      assert.equal(retried.name, 'Rexy');
      assert.deepEqual(attempts.map((a) => a.status), [200, 200]);
    });

    test('when a pet with a placed order is updated or deleted, then 409 pet_has_open_order for its status and the delete; its name still changes', async () => {
      const { petstore, attempts, pet } = await client();
      const rexx = await pet();
      await petstore.orders.place({ petId: rexx.id });
      attempts.length = 0;
      assertErrorFromAnswer(await petstoreError(petstore.pets.update(rexx.id, { status: 'available' })), attempts, 409, 'pet_has_open_order');
      attempts.length = 0;
      assertErrorFromAnswer(await petstoreError(petstore.pets.delete(rexx.id)), attempts, 409, 'pet_has_open_order');
      assert.equal((await petstore.pets.update(rexx.id, { name: 'Rex' })).name, 'Rex');
    });

    test('when a pet is deleted, then delete resolves, the pet is gone from lists, and a second delete fails with 404 not_found', async () => {
      const { petstore, attempts, pet } = await client();
      const rexx = await pet();
      const kept = await pet('sold');
      assert.equal(await petstore.pets.delete(rexx.id), undefined);
      assert.deepEqual((await petstore.pets.list()).data, [kept]);
      attempts.length = 0;
      assertErrorFromAnswer(await petstoreError(petstore.pets.delete(rexx.id)), attempts, 404, 'not_found');
    });

    test('when categories are named, listed, read and deleted, then each call returns the server\'s answer; filters by categoryId list only those pets', async () => {
      const { petstore, attempts, pet } = await client();
      const dog = await pet('available', 1);
      await pet('sold', 2);
      // Category 1 exists already (a pet uses it): 200; 3 did not: 201.
      assert.deepEqual(await petstore.categories.put(1, 'Dogs'), { id: 1, name: 'Dogs', petCount: 1 });
      assert.equal(attempts.at(-1)!.status, 200);
      assert.deepEqual(await petstore.categories.put(1, 'Hounds'), { id: 1, name: 'Hounds', petCount: 1 });
      assert.deepEqual(await petstore.categories.put(3, 'Cats'), { id: 3, name: 'Cats', petCount: 0 });
      assert.equal(attempts.at(-1)!.status, 201);
      assert.deepEqual(await petstore.categories.get(2), { id: 2, petCount: 1 });
      const page = await petstore.categories.list({ limit: 2 });
      assert.deepEqual(page.data.map((c) => c.id), [1, 2]);
      assert.ok(page.nextCursor);
      assert.deepEqual((await petstore.categories.list({ limit: 2, cursor: page.nextCursor })).data.map((c) => c.id), [3]);
      const all = [];
      for await (const category of petstore.categories.listAll({ limit: 1 })) all.push(category.id);
      assert.deepEqual(all, [1, 2, 3]);
      assert.deepEqual((await petstore.pets.list({ categoryId: 1 })).data, [dog]);
      const walked = [];
      for await (const p of petstore.pets.listAll({ categoryId: 1, status: 'available' })) walked.push(p);
      assert.deepEqual(walked, [dog]);
      attempts.length = 0;
      assertErrorFromAnswer(await petstoreError(petstore.categories.put(3, 'HOUNDS')), attempts, 409, 'category_name_taken');
      attempts.length = 0;
      assertErrorFromAnswer(await petstoreError(petstore.categories.delete(1)), attempts, 409, 'category_in_use');
      assert.equal(await petstore.categories.delete(3), undefined);
      attempts.length = 0;
      assertErrorFromAnswer(await petstoreError(petstore.categories.get(3)), attempts, 404, 'not_found');
    });

    test('when categories are changed conditionally, then put and get give their ETag, a stale ifMatch or a create-only put of an existing one fails with 412 (not retried), and the current tag applies', async () => {
      const { petstore, attempts } = await client({ maxRetries: 2 });
      const reptiles = await petstore.categories.put(300, 'Reptiles', { ifNoneMatch: '*' });
      const tag = etagOf(reptiles);
      assert.match(tag ?? '', STRONG_ETAG);
      assert.equal(etagOf(await petstore.categories.get(300)), tag);
      attempts.length = 0;
      assertErrorFromAnswer(await petstoreError(petstore.categories.put(300, 'Lizards', { ifNoneMatch: '*' })), attempts, 412, 'precondition_failed');
      const lizards = await petstore.categories.put(300, 'Lizards', { ifMatch: tag });
      assert.equal(lizards.name, 'Lizards');
      assert.notEqual(etagOf(lizards), tag);
      attempts.length = 0;
      assertErrorFromAnswer(await petstoreError(petstore.categories.delete(300, { ifMatch: tag })), attempts, 412, 'precondition_failed');
      await petstore.categories.delete(300, { ifMatch: etagOf(lizards) });
      assert.equal((await petstoreError(petstore.categories.get(300))).status, 404);
    });

    test('when the inventory is read, then it counts the account\'s pets by status, after creates, updates, deletes and orders', async () => {
      const { petstore, pet } = await client();
      assert.deepEqual(await petstore.inventory.get(), { available: 0, pending: 0, sold: 0, withoutStatus: 0, total: 0 });
      const a = await pet('available');
      const b = await pet('available');
      const c = await pet(null);
      await petstore.orders.place({ petId: a.id });
      await petstore.pets.update(c.id, { status: 'sold' });
      await petstore.pets.delete(b.id);
      assert.deepEqual(await petstore.inventory.get(), { available: 0, pending: 1, sold: 1, withoutStatus: 0, total: 2 });
    });
  });
}
