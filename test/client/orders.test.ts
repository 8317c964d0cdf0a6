// @petstore/client's orders (experimental) against the real server on each store: every method,
// the pet statuses they move, paging with Link rel="next", idempotent places, retries after a
// lost answer (place replays, deliver/cancel answer the order unchanged), and PetstoreError
// fields for each error the order operations document.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { ListOrdersParams, Order, OrderStatus, Petstore, PetStatus } from '@petstore/client';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertErrorFromAnswer, type Attempt, loseAnswer, newAccountClient, petstoreError, type RecordingOptions, UUID } from './helpers.js';

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const query = (a: Attempt) => Object.fromEntries(new URL(a.url).searchParams);

for (const backend of backends) {
  describe(`@petstore/client orders against the real server (${backend.name})`, () => {
    // A high limit: the paging test makes 45 orders; 429s are the pets and retries suites' concern.
    const getApp = sharedApp({ backend, env: { PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' } });
    let app: TestApp;
    before(async () => {
      app = await getApp();
    });

    /** A client of a fresh account, and `pet()`: a new pet of it, `available` unless told otherwise (`null`: no status). */
    async function client(options: RecordingOptions = {}) {
      const account = await newAccountClient(app, options);
      const pet = async (status: PetStatus | null = 'available') => account.petstore.pets.create({ name: 'Rex', categoryId: 1, ...(status ? { status } : {}) });
      return { ...account, pet };
    }
    const petStatus = async (petstore: Petstore, id: number) => (await petstore.pets.list({ limit: 100 })).data.find((p) => p.id === id)?.status;

    test('when an order is placed, then place returns it placed, get and list return the same order, and its pet is pending', async () => {
      const { petstore, pet } = await client();
      const rex = await pet();
      const order = await petstore.orders.place({ petId: rex.id });
      assert.deepEqual(order, { id: order.id, petId: rex.id, status: 'placed', createdAt: order.createdAt, updatedAt: order.createdAt });
      assert.match(order.createdAt, RFC3339_UTC);
      assert.deepEqual(await petstore.orders.get(order.id), order);
      assert.deepEqual(await petstore.orders.list(), { data: [order] });
      assert.equal(await petStatus(petstore, rex.id), 'pending');
    });

    test('when an order is delivered, then deliver returns it delivered and its pet is sold; delivering again answers 200 with the order unchanged', async () => {
      const { petstore, attempts, pet } = await client();
      const rex = await pet();
      const placed = await petstore.orders.place({ petId: rex.id });
      const delivered = await petstore.orders.deliver(placed.id);
      assert.deepEqual(delivered, { ...placed, status: 'delivered', updatedAt: delivered.updatedAt });
      assert.ok(delivered.updatedAt >= placed.createdAt);
      assert.equal(await petStatus(petstore, rex.id), 'sold');
      assert.deepEqual(await petstore.orders.deliver(placed.id), delivered, 'already delivered: unchanged');
      assert.deepEqual(await petstore.orders.get(placed.id), delivered);
      const moves = attempts.filter((a) => a.url.endsWith('/deliver'));
      assert.deepEqual(moves.map((a) => [a.method, new URL(a.url).pathname, a.status]), [
        ['POST', `/v1/store/orders/${placed.id}/deliver`, 200],
        ['POST', `/v1/store/orders/${placed.id}/deliver`, 200],
      ]);
    });

    test('when an order is cancelled, then cancel returns it cancelled and its pet is available again (orderable anew); cancelling again answers 200 unchanged', async () => {
      const { petstore, pet } = await client();
      const rex = await pet();
      const placed = await petstore.orders.place({ petId: rex.id });
      const cancelled = await petstore.orders.cancel(placed.id);
      assert.deepEqual(cancelled, { ...placed, status: 'cancelled', updatedAt: cancelled.updatedAt });
      assert.equal(await petStatus(petstore, rex.id), 'available');
      assert.deepEqual(await petstore.orders.cancel(placed.id), cancelled, 'already cancelled: unchanged');
      const again = await petstore.orders.place({ petId: rex.id });
      assert.notEqual(again.id, placed.id, 'a second order for the same pet');
      assert.deepEqual((await petstore.orders.list()).data, [cancelled, again]);
    });

    test('when any write is called, then it carries a generated UUID Idempotency-Key of its own, deliver and cancel included (the server accepts it there), and reads carry none', async () => {
      const { petstore, attempts, pet } = await client();
      const [a, b] = [await pet(), await pet()];
      attempts.length = 0;
      const first = await petstore.orders.place({ petId: a.id });
      const second = await petstore.orders.place({ petId: b.id });
      await petstore.orders.deliver(first.id);
      await petstore.orders.cancel(second.id);
      await petstore.orders.get(first.id);
      await petstore.orders.list();
      assert.deepEqual(attempts.map((x) => [x.method, x.status, x.replayed]), [
        ['POST', 201, null], ['POST', 201, null], ['POST', 200, null], ['POST', 200, null], ['GET', 200, null], ['GET', 200, null],
      ]);
      const keys = attempts.slice(0, 4).map((x) => x.idempotencyKey ?? '');
      for (const key of keys) assert.match(key, UUID);
      assert.equal(new Set(keys).size, 4, 'a key of its own per call');
      assert.deepEqual(attempts.slice(4).map((x) => x.idempotencyKey), [null, null]);
    });

    test('when place is called twice with the same idempotencyKey and petId, then the second replays the first order and only one exists', async () => {
      const { petstore, attempts, pet } = await client();
      const rex = await pet();
      attempts.length = 0;
      const first = await petstore.orders.place({ petId: rex.id }, { idempotencyKey: 'checkout-2026-11-23-42' });
      const second = await petstore.orders.place({ petId: rex.id }, { idempotencyKey: 'checkout-2026-11-23-42' });
      assert.deepEqual(second, first);
      assert.deepEqual(attempts.map((x) => [x.status, x.idempotencyKey, x.replayed]), [
        [201, 'checkout-2026-11-23-42', null],
        [201, 'checkout-2026-11-23-42', 'true'],
      ]);
      assert.deepEqual((await petstore.orders.list()).data, [first]);
      assert.equal(await petStatus(petstore, rex.id), 'pending');
    });

    test('when the answer to place is lost after the server placed the order, then the retry (same key) replays it: one order', async () => {
      const lost = loseAnswer();
      const { petstore, attempts, pet } = await client({ maxRetries: 2, onAnswer: lost.onAnswer });
      const rex = await pet();
      attempts.length = 0;
      lost.armOnce();
      const order = await petstore.orders.place({ petId: rex.id });
      assert.deepEqual(attempts.map((a) => [a.status, a.replayed, a.error === undefined]), [[201, null, false], [201, 'true', true]]);
      assert.equal(attempts[0]!.idempotencyKey, attempts[1]!.idempotencyKey, 'the same key on the retry');
      assert.deepEqual((await petstore.orders.list()).data, [order]);
    });

    test('when the answer to deliver or cancel is lost after the server moved the order, then the retry answers 200 with the order as moved', async () => {
      const lost = loseAnswer();
      const { petstore, attempts, pet } = await client({ maxRetries: 2, onAnswer: lost.onAnswer });
      const [a, b] = [await pet(), await pet()];
      const [toDeliver, toCancel] = [await petstore.orders.place({ petId: a.id }), await petstore.orders.place({ petId: b.id })];
      for (const [order, move, status] of [[toDeliver, 'deliver', 'delivered'], [toCancel, 'cancel', 'cancelled']] as const) {
        attempts.length = 0;
        lost.armOnce();
        const moved = await petstore.orders[move](order.id);
        assert.equal(moved.status, status);
        assert.deepEqual(moved, await petstore.orders.get(order.id));
        assert.deepEqual(attempts.slice(0, 2).map((x) => [x.status, x.error === undefined]), [[200, false], [200, true]], move);
      }
      assert.equal(await petStatus(petstore, a.id), 'sold');
      assert.equal(await petStatus(petstore, b.id), 'available');
    });

    test('when list is called with limit, status and cursor, then it returns one page, and nextCursor from Link rel="next" until the last page', async () => {
      const { petstore, attempts, pet } = await client();
      const orders: Order[] = [];
      for (let i = 0; i < 5; i += 1) orders.push(await petstore.orders.place({ petId: (await pet()).id }));
      orders[1] = await petstore.orders.deliver(orders[1]!.id);
      orders[3] = await petstore.orders.cancel(orders[3]!.id);
      const first = await petstore.orders.list({ limit: 2 });
      assert.deepEqual(first.data, orders.slice(0, 2));
      assert.ok(first.nextCursor);
      const second = await petstore.orders.list({ limit: 2, cursor: first.nextCursor });
      assert.deepEqual(second.data, orders.slice(2, 4));
      assert.deepEqual(await petstore.orders.list({ limit: 2, cursor: second.nextCursor }), { data: orders.slice(4) }, 'no nextCursor on the last page');
      const params: ListOrdersParams = { status: 'placed', limit: 2 };
      const placed = await petstore.orders.list(params);
      assert.deepEqual(placed.data, [orders[0], orders[2]]);
      assert.deepEqual(await petstore.orders.list({ ...params, cursor: placed.nextCursor }), { data: [orders[4]] });
      assert.deepEqual(query(attempts.at(-1)!), { limit: '2', status: 'placed', cursor: placed.nextCursor });
      assert.deepEqual(query(attempts.at(-5)!), { limit: '2' }, 'only the parameters given are sent');
      for (const status of ['delivered', 'cancelled'] as const) {
        assert.deepEqual(await petstore.orders.list({ status }), { data: orders.filter((o) => o.status === status) });
      }
    });

    test('when listAll pages through 45 orders with limit 20, then each comes exactly once in id order, one request per page, fetched as iterated', async () => {
      const { petstore, attempts, accountId } = await client();
      const created: Order[] = [];
      // Through the services: the pets and orders are this test's data, not what it tests.
      for (let i = 0; i < 45; i += 1) {
        const pet = await app.services.pets.create(accountId, { name: `Pet ${i}`, categoryId: 1, status: 'available' });
        const order = await app.services.orders.place(accountId, pet.id);
        created.push(i % 3 === 0 ? await app.services.orders.act(accountId, order.id, 'cancel') : order);
      }
      const all: Order[] = [];
      for await (const order of petstore.orders.listAll({ limit: 20 })) all.push(order);
      assert.deepEqual(all, created);
      assert.deepEqual(attempts.map((a) => query(a).limit), ['20', '20', '20'], '20 + 20 + 5');

      attempts.length = 0;
      const cancelled: Order[] = [];
      for await (const order of petstore.orders.listAll({ status: 'cancelled', limit: 10 })) cancelled.push(order);
      assert.deepEqual(cancelled, created.filter((o) => o.status === 'cancelled'));
      assert.equal(cancelled.length, 15);
      assert.equal(attempts.length, 2, '10 + 5');
      assert.ok(attempts.every((a) => query(a).status === 'cancelled'));

      attempts.length = 0;
      let seen = 0;
      for await (const order of petstore.orders.listAll()) {
        assert.equal(order.id, created[seen]!.id);
        if (++seen === 25) break;
      }
      assert.equal(attempts.length, 2, 'the default page size (20), and pages are fetched only as the loop asks for them');
    });

    test('when petId or orderId is invalid (400), then PetstoreError invalid_request with the server\'s fields, not retried', async () => {
      const cases: Array<[string, (petstore: Petstore) => Promise<unknown>, string]> = [
        ['petId 0', (p) => p.orders.place({ petId: 0 }), 'invalid_request'],
        ['a fractional petId', (p) => p.orders.place({ petId: 1.5 }), 'invalid_request'],
        ['a petId that is a string', (p) => p.orders.place({ petId: '1' as unknown as number }), 'invalid_request'],
        ['an unknown field', (p) => p.orders.place({ petId: 1, quantity: 2 } as { petId: number }), 'invalid_request'],
        ['orderId 0', (p) => p.orders.get(0), 'invalid_request'],
        ['a fractional orderId to deliver', (p) => p.orders.deliver(1.5), 'invalid_request'],
        ['limit out of range', (p) => p.orders.list({ limit: 101 }), 'invalid_request'],
        ['an unknown status', (p) => p.orders.list({ status: 'lost' as OrderStatus }), 'invalid_request'],
        ['a forged cursor', (p) => p.orders.list({ cursor: 'AQAAAAAAAAAAAqc7bj8koVGDL7ScVq_Rl-c' }), 'invalid_cursor'],
      ];
      for (const [what, call, code] of cases) {
        const { petstore, attempts } = await client({ maxRetries: 2 });
        const error = await petstoreError(call(petstore));
        assert.equal(error.code, code, what);
        assertErrorFromAnswer(error, attempts, 400, code);
      }
    });

    test('when the pet belongs to another account (404), then place fails with PetstoreError not_found, not retried, and that pet is untouched', async () => {
      const owner = await client();
      const rex = await owner.pet();
      const stranger = await client();
      const error = await petstoreError(stranger.petstore.orders.place({ petId: rex.id }));
      assertErrorFromAnswer(error, stranger.attempts, 404, 'not_found');
      assert.equal(await petStatus(owner.petstore, rex.id), 'available');
      assert.deepEqual((await stranger.petstore.orders.list()).data, []);
    });

    test('when the order belongs to another account or does not exist (404), then get, deliver and cancel fail with PetstoreError not_found, not retried', async () => {
      const owner = await client();
      const order = await owner.petstore.orders.place({ petId: (await owner.pet()).id });
      const stranger = await client();
      const calls: Array<(p: Petstore) => Promise<unknown>> = [
        (p) => p.orders.get(order.id),
        (p) => p.orders.deliver(order.id),
        (p) => p.orders.cancel(order.id),
        (p) => p.orders.get(9007199254740991),
      ];
      for (const call of calls) {
        stranger.attempts.length = 0;
        assertErrorFromAnswer(await petstoreError(call(stranger.petstore)), stranger.attempts, 404, 'not_found');
      }
      assert.deepEqual(await owner.petstore.orders.get(order.id), order, 'the owner\'s order did not move');
    });

    test('when the pet is not available (409), then place fails with PetstoreError pet_not_available, not retried, and no order is made', async () => {
      const { petstore, attempts, pet } = await client({ maxRetries: 2 });
      const ordered = await pet();
      await petstore.orders.place({ petId: ordered.id });
      for (const petId of [ordered.id, (await pet('sold')).id, (await pet('pending')).id, (await pet(null)).id]) {
        attempts.length = 0;
        // A key of the caller's own: an error is not remembered, so this is not a replay either.
        const error = await petstoreError(petstore.orders.place({ petId }, { idempotencyKey: `order-pet-${petId}` }));
        assertErrorFromAnswer(error, attempts, 409, 'pet_not_available');
        assert.equal(error.retryAfter, undefined);
      }
      assert.equal((await petstore.orders.list()).data.length, 1);
    });

    test('when a move cannot start from the order\'s status (409), then deliver and cancel fail with PetstoreError invalid_transition, not retried, nothing changes', async () => {
      const { petstore, attempts, pet } = await client({ maxRetries: 2 });
      const delivered = await petstore.orders.deliver((await petstore.orders.place({ petId: (await pet()).id })).id);
      const cancelled = await petstore.orders.cancel((await petstore.orders.place({ petId: (await pet()).id })).id);
      for (const call of [() => petstore.orders.cancel(delivered.id), () => petstore.orders.deliver(cancelled.id)]) {
        attempts.length = 0;
        const error = await petstoreError(call());
        assertErrorFromAnswer(error, attempts, 409, 'invalid_transition');
      }
      assert.deepEqual((await petstore.orders.list()).data, [delivered, cancelled]);
      assert.equal(await petStatus(petstore, delivered.petId), 'sold');
      assert.equal(await petStatus(petstore, cancelled.petId), 'available');
    });

    test('when an idempotency key is reused with another petId or from createPet (422), then PetstoreError idempotency_key_reused, not retried, nothing placed', async () => {
      const { petstore, attempts, pet } = await client();
      const [a, b] = [await pet(), await pet()];
      const first = await petstore.orders.place({ petId: a.id }, { idempotencyKey: 'checkout-7' });
      await petstore.pets.create({ name: 'Tom', categoryId: 1 }, { idempotencyKey: 'import-7' });
      for (const idempotencyKey of ['checkout-7', 'import-7']) {
        attempts.length = 0;
        const error = await petstoreError(petstore.orders.place({ petId: b.id }, { idempotencyKey }));
        assertErrorFromAnswer(error, attempts, 422, 'idempotency_key_reused');
      }
      assert.deepEqual((await petstore.orders.list()).data, [first]);
      assert.equal(await petStatus(petstore, b.id), 'available');
    });
  });
}
