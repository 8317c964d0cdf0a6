// Orders over HTTP, on every store: the lifecycle and the pet statuses it moves, every status
// each operation can answer, bad input, isolation between accounts, idempotent places, and one
// winner among concurrent orders for a pet. Every response is checked against the served
// document by the test app.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS } from '../../src/services/idempotency.js';
import { createServices } from '../../src/services/index.js';
import { placeOrderRequestHash } from '../../src/services/orders.js';
import { createStore } from '../../src/store/index.js';
import { sharedApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { claimIdempotencyKey } from '../helpers/store.js';

type Pet = { id: number; name: string; categoryId: number; status?: string };
type Order = { id: number; petId: number; status: string; createdAt: string; updatedAt: string };
type ErrorBody = { code: string; message: string; status: number };
type Account = { accountId: string; key: string };

const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' };
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function assertError(res: TestResponse, status: number, code: string, message?: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal((res.body as ErrorBody).code, code, res.text);
  if (message) assert.match((res.body as ErrorBody).message, message);
}

const nextLink = (res: TestResponse) => /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];

for (const backend of backends) {
  describe(`orders over HTTP (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    let owner: Account;

    const pet = async (account: Account, status?: string, name = 'Rex'): Promise<Pet> => {
      const res = await app.request('POST', '/v1/pets', { key: account.key, body: { name, categoryId: 1, ...(status ? { status } : {}) } });
      assert.equal(res.status, 201, res.text);
      return res.body as Pet;
    };
    const place = (account: Account, petId: unknown, headers: Record<string, string> = {}) =>
      app.request('POST', '/v1/store/orders', { key: account.key, body: { petId }, headers });
    const act = (account: Account, orderId: number | string, action: 'deliver' | 'cancel', body?: unknown) =>
      app.request('POST', `/v1/store/orders/${orderId}/${action}`, { key: account.key, ...(body === undefined ? {} : { body }) });
    const petStatus = async (account: Account, id: number) => ((await app.request('GET', `/v1/pets/${id}`, { key: account.key })).body as Pet).status;
    const listedIds = async (account: Account, query: string) => ((await app.request('GET', `/v1/pets?limit=100${query}`, { key: account.key })).body as Pet[]).map((p) => p.id);

    test('when an order is placed and delivered, then the pet goes available → pending → sold, visible at once to getPet and listPets (with and without the status filter)', async () => {
      app = await getApp();
      owner = await app.createAccount('Owner');
      const rex = await pet(owner, 'available');
      assert.deepEqual(await listedIds(owner, '&status=available'), [rex.id]);

      const placed = await place(owner, rex.id);
      assert.equal(placed.status, 201, placed.text);
      const order = placed.body as Order;
      assert.deepEqual(order, { id: 1, petId: rex.id, status: 'placed', createdAt: order.createdAt, updatedAt: order.createdAt });
      assert.match(order.createdAt, RFC3339_UTC);
      assert.equal(placed.headers.get('location'), `/v1/store/orders/${order.id}`);
      assert.equal(await petStatus(owner, rex.id), 'pending');
      assert.deepEqual(await listedIds(owner, '&status=available'), []);
      assert.deepEqual(await listedIds(owner, '&status=pending'), [rex.id]);
      assert.deepEqual((await app.request('GET', `/v1/store/orders/${order.id}`, { key: owner.key })).body, order);

      const delivered = await act(owner, order.id, 'deliver');
      assert.equal(delivered.status, 200, delivered.text);
      const done = delivered.body as Order;
      assert.deepEqual({ ...done, updatedAt: '' }, { ...order, status: 'delivered', updatedAt: '' });
      assert.ok(done.updatedAt >= order.createdAt);
      assert.equal(await petStatus(owner, rex.id), 'sold');
      assert.deepEqual(await listedIds(owner, '&status=sold'), [rex.id]);
      assert.deepEqual(await listedIds(owner, '&status=pending'), []);

      // Asking again is safe: 200, unchanged. The other move is refused, naming the status.
      const again = await act(owner, order.id, 'deliver', {});
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, done);
      assertError(await act(owner, order.id, 'cancel'), 409, 'invalid_transition', /is delivered/);
      assert.equal(await petStatus(owner, rex.id), 'sold');
      assertError(await place(owner, rex.id), 409, 'pet_not_available', /is sold/);
    });

    test('when an order is cancelled, then the pet is available again and can be ordered anew; a cancelled order cannot be delivered', async () => {
      const kit = await pet(owner, 'available', 'Kit');
      const first = (await place(owner, kit.id)).body as Order;
      const cancelled = await act(owner, first.id, 'cancel');
      assert.equal(cancelled.status, 200, cancelled.text);
      assert.equal((cancelled.body as Order).status, 'cancelled');
      assert.equal(await petStatus(owner, kit.id), 'available');
      assert.deepEqual((await act(owner, first.id, 'cancel')).body, cancelled.body, 'cancel again: unchanged');
      assertError(await act(owner, first.id, 'deliver'), 409, 'invalid_transition', /is cancelled/);
      assert.equal(await petStatus(owner, kit.id), 'available', 'a refused move changes nothing');
      const second = await place(owner, kit.id);
      assert.equal(second.status, 201);
      assert.equal((second.body as Order).id, first.id + 1, 'orders are numbered per account, in order');
      assert.equal(await petStatus(owner, kit.id), 'pending');
    });

    test('when the pet is not available (pending, sold, no status) or does not exist, then 409 pet_not_available naming its status, or 404 not_found', async () => {
      const pending = await pet(owner, 'pending');
      const sold = await pet(owner, 'sold');
      const none = await pet(owner);
      assertError(await place(owner, pending.id), 409, 'pet_not_available', new RegExp(`Pet ${pending.id} is pending`));
      assertError(await place(owner, sold.id), 409, 'pet_not_available', /is sold/);
      assertError(await place(owner, none.id), 409, 'pet_not_available', /has no status/);
      assertError(await place(owner, 999_999), 404, 'not_found', /No pet with id 999999/);
      assert.deepEqual([await petStatus(owner, pending.id), await petStatus(owner, sold.id), await petStatus(owner, none.id)], ['pending', 'sold', undefined]);
    });

    test('when inputs are bad, then 400 invalid_request (or invalid_json / invalid_content_type / invalid_cursor) and nothing changes', async () => {
      const cat = await pet(owner, 'available', 'Cat');
      const bodies: Array<[string, unknown]> = [
        ['missing petId', {}],
        ['petId 0', { petId: 0 }],
        ['petId -1', { petId: -1 }],
        ['petId "7"', { petId: '7' }],
        ['petId 1.5', { petId: 1.5 }],
        ['petId null', { petId: null }],
        ['unknown field', { petId: cat.id, quantity: 2 }],
        ['an array', [cat.id]],
      ];
      for (const [name, body] of bodies) assertError(await app.request('POST', '/v1/store/orders', { key: owner.key, body }), 400, 'invalid_request');
      // 2^63 is beyond int64 and beyond exact JSON numbers: refused, never rounded.
      assertError(await app.request('POST', '/v1/store/orders', { key: owner.key, rawBody: '{"petId": 9223372036854775808}', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request');
      assertError(await app.request('POST', '/v1/store/orders', { key: owner.key }), 400, 'invalid_request', /body is required/);
      assertError(await app.request('POST', '/v1/store/orders', { key: owner.key, rawBody: '{"petId": ', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
      assertError(await app.request('POST', '/v1/store/orders', { key: owner.key, rawBody: `petId=${cat.id}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 400, 'invalid_content_type');
      assert.equal(await petStatus(owner, cat.id), 'available');

      for (const orderId of ['0', '-1', 'abc', '1.5', '9223372036854775808', '1e3', '0x10']) {
        assertError(await app.request('GET', `/v1/store/orders/${orderId}`, { key: owner.key }), 400, 'invalid_request');
        assertError(await act(owner, orderId, 'deliver'), 400, 'invalid_request');
        assertError(await act(owner, orderId, 'cancel'), 400, 'invalid_request');
      }
      assertError(await act(owner, 1, 'cancel', { reason: 'changed my mind' }), 400, 'invalid_request', /takes no fields/);
      assertError(await act(owner, 1, 'cancel', []), 400, 'invalid_request');
      for (const query of ['limit=0', 'limit=101', 'limit=abc', 'limit=1&limit=2', 'status=lost', 'status=available', 'color=red']) {
        assertError(await app.request('GET', `/v1/store/orders?${query}`, { key: owner.key }), 400, 'invalid_request');
      }
      assertError(await app.request('GET', '/v1/store/orders?cursor=nope', { key: owner.key }), 400, 'invalid_cursor');
      // A pets cursor is not an orders cursor, though both come from the same account.
      for (let i = 0; i < 2; i++) await pet(owner, 'sold');
      const petCursor = new URL(nextLink(await app.request('GET', '/v1/pets?limit=1', { key: owner.key }))!, 'http://x').searchParams.get('cursor');
      assertError(await app.request('GET', `/v1/store/orders?limit=1&cursor=${petCursor}`, { key: owner.key }), 400, 'invalid_cursor');
    });

    test('when orders are listed, then they come oldest first, paged with Link rel="next", filtered by status, cursors bound to the filter', async () => {
      const lister = await app.createAccount('Lister');
      const placed: Order[] = [];
      for (let i = 0; i < 7; i++) placed.push((await place(lister, (await pet(lister, 'available', `L${i}`)).id)).body as Order);
      for (const o of placed.slice(0, 2)) await act(lister, o.id, 'deliver');
      await act(lister, placed[2]!.id, 'cancel');
      const walk = async (first: string) => {
        const seen: Order[] = [];
        let next: string | undefined = first;
        while (next) {
          const res = await app.request('GET', next, { key: lister.key });
          assert.equal(res.status, 200, res.text);
          assert.ok((res.body as Order[]).length <= 3);
          seen.push(...(res.body as Order[]));
          next = nextLink(res);
        }
        return seen.map((o) => [o.id, o.status]);
      };
      assert.deepEqual(await walk('/v1/store/orders?limit=3'), [[1, 'delivered'], [2, 'delivered'], [3, 'cancelled'], [4, 'placed'], [5, 'placed'], [6, 'placed'], [7, 'placed']]);
      assert.deepEqual(await walk('/v1/store/orders?limit=3&status=placed'), [[4, 'placed'], [5, 'placed'], [6, 'placed'], [7, 'placed']]);
      assert.deepEqual(await walk('/v1/store/orders?status=delivered&limit=1'), [[1, 'delivered'], [2, 'delivered']]);
      const first = await app.request('GET', '/v1/store/orders?limit=2&status=placed', { key: lister.key });
      assert.match(first.headers.get('link') ?? '', /^<\/v1\/store\/orders\?limit=2&status=placed&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
      const cursor = new URL(nextLink(first)!, 'http://x').searchParams.get('cursor');
      assertError(await app.request('GET', `/v1/store/orders?limit=2&cursor=${cursor}`, { key: lister.key }), 400, 'invalid_cursor', /status=placed/);
      assert.deepEqual((await app.request('GET', '/v1/store/orders', { key: (await app.createAccount('Empty')).key })).body, []);
    });

    test('when another account uses any order operation on this account\'s pets and orders, then 404 exactly as for missing ones, and nothing changes', async () => {
      const mine = await app.createAccount('Mine');
      const theirs = await app.createAccount('Theirs');
      // Give the other account fewer pets and orders, so these ids are missing there.
      const pets = [await pet(mine, 'available'), await pet(mine, 'available'), await pet(mine, 'available')];
      const orders = [(await place(mine, pets[0]!.id)).body as Order, (await place(mine, pets[1]!.id)).body as Order];
      const sameShape = (a: TestResponse, b: TestResponse, id: number, missing: number) => {
        assert.equal(a.status, 404);
        assert.equal((a.body as ErrorBody).message.replace(String(id), '{id}'), (b.body as ErrorBody).message.replace(String(missing), '{id}'));
      };
      const missingPet = 777_777;
      sameShape(await place(theirs, pets[2]!.id), await place(theirs, missingPet), pets[2]!.id, missingPet);
      const order = orders[1]!;
      sameShape(await app.request('GET', `/v1/store/orders/${order.id}`, { key: theirs.key }), await app.request('GET', '/v1/store/orders/777777', { key: theirs.key }), order.id, 777_777);
      for (const action of ['deliver', 'cancel'] as const) sameShape(await act(theirs, order.id, action), await act(theirs, 777_777, action), order.id, 777_777);
      assert.deepEqual((await app.request('GET', '/v1/store/orders', { key: theirs.key })).body, []);
      assert.deepEqual((await app.request('GET', '/v1/store/orders', { key: mine.key })).body, orders, 'unchanged');
      assert.deepEqual([await petStatus(mine, pets[0]!.id), await petStatus(mine, pets[2]!.id)], ['pending', 'available']);
      // The other account's own numbering is its own: its first order is 1.
      const own = await place(theirs, (await pet(theirs, 'available')).id);
      assert.equal((own.body as Order).id, 1);
      assert.deepEqual((await app.request('GET', `/v1/store/orders/${(own.body as Order).id}`, { key: mine.key })).body, orders[0], 'order 1 of each account is its own');
    });

    test('when a key is missing or invalid, then every order operation answers 401 before looking at the request', async () => {
      for (const [method, path] of [['GET', '/v1/store/orders'], ['POST', '/v1/store/orders'], ['GET', '/v1/store/orders/1'], ['POST', '/v1/store/orders/1/deliver'], ['POST', '/v1/store/orders/1/cancel']] as const) {
        for (const key of [undefined, 'psk_live_000000000000000000000000000000']) {
          const res = await app.request(method, path, { key, ...(method === 'POST' && path.endsWith('orders') ? { body: { petId: 'bad' } } : {}) });
          assertError(res, 401, 'unauthorized');
          assert.ok(res.headers.get('www-authenticate'));
        }
      }
    });

    test('when placeOrder is sent with an Idempotency-Key, then a retry replays the order, another body or a createPet key answers 422, and a retry after a refusal runs again', async () => {
      const buyer = await app.createAccount('Buyer');
      const dog = await pet(buyer, 'available', 'Dog');
      const key = randomUUID();
      const first = await place(buyer, dog.id, { 'idempotency-key': key });
      assert.equal(first.status, 201);
      const replay = await place(buyer, dog.id, { 'idempotency-key': `"${key}"` });
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(replay.body, first.body);
      assert.equal(replay.headers.get('location'), first.headers.get('location'));
      assert.equal(((await app.request('GET', '/v1/store/orders', { key: buyer.key })).body as Order[]).length, 1, 'one order');
      assertError(await place(buyer, dog.id + 1, { 'idempotency-key': key }), 422, 'idempotency_key_reused');

      const petKey = randomUUID();
      assert.equal((await app.request('POST', '/v1/pets', { key: buyer.key, body: { name: 'Cat', categoryId: 1, status: 'available' }, headers: { 'idempotency-key': petKey } })).status, 201);
      assertError(await place(buyer, dog.id, { 'idempotency-key': petKey }), 422, 'idempotency_key_reused');

      // A refusal is not remembered: once the pet is available again, the same key places it.
      const later = randomUUID();
      assertError(await place(buyer, dog.id, { 'idempotency-key': later }), 409, 'pet_not_available');
      await act(buyer, (first.body as Order).id, 'cancel');
      const retried = await place(buyer, dog.id, { 'idempotency-key': later });
      assert.equal(retried.status, 201, retried.text);
      assert.equal(retried.headers.get('idempotent-replayed'), null);
    });

    test('when a placeOrder with the same Idempotency-Key is still running, then 409 idempotency_key_in_use with Retry-After, and the pet is untouched', async () => {
      const waiter = await app.createAccount('Waiter');
      const p = await pet(waiter, 'available');
      const key = randomUUID();
      // What a first request holds while it runs: the claimed key, not completed yet.
      const claim = await claimIdempotencyKey(app.store, {
        accountId: waiter.accountId, key, requestHash: placeOrderRequestHash(p.id), now: Date.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS,
      });
      assert.deepEqual(claim, { outcome: 'claimed' });
      const res = await place(waiter, p.id, { 'idempotency-key': key });
      assertError(res, 409, 'idempotency_key_in_use');
      assert.equal(res.headers.get('retry-after'), '1');
      assert.equal(await petStatus(waiter, p.id), 'available');
    });

    test('when 50 orders for one pet arrive at once, then exactly one is placed and the others get 409 pet_not_available', async () => {
      const rush = await app.createAccount('Rush');
      const prize = await pet(rush, 'available', 'Prize');
      const results = await Promise.all(Array.from({ length: 50 }, () => place(rush, prize.id)));
      const statuses = results.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 201).length, 1, `statuses: ${statuses.join(',')}`);
      for (const r of results.filter((r) => r.status !== 201)) assertError(r, 409, 'pet_not_available', /is pending/);
      assert.equal(((await app.request('GET', '/v1/store/orders', { key: rush.key })).body as Order[]).length, 1);
      assert.equal(await petStatus(rush, prize.id), 'pending');
    });

    test('when deliver and cancel race on one order, then exactly one wins and the order and its pet agree', async () => {
      const racer = await app.createAccount('Racer');
      for (let round = 0; round < 5; round++) {
        const p = await pet(racer, 'available');
        const order = (await place(racer, p.id)).body as Order;
        const results = await Promise.all([act(racer, order.id, 'deliver'), act(racer, order.id, 'cancel'), act(racer, order.id, 'deliver'), act(racer, order.id, 'cancel')]);
        const final = (await app.request('GET', `/v1/store/orders/${order.id}`, { key: racer.key })).body as Order;
        for (const r of results) {
          if (r.status === 200) assert.equal((r.body as Order).status, final.status, 'every 200 shows the winning status');
          else assertError(r, 409, 'invalid_transition', new RegExp(`is ${final.status}`));
        }
        assert.equal(await petStatus(racer, p.id), final.status === 'delivered' ? 'sold' : 'available');
      }
    });

    test('when another instance (its own store connection) places and delivers an order, then this instance shows the pet\'s new status on the next request', async (t) => {
      const account = await app.createAccount('Shared');
      const p = await pet(account, 'available');
      // Fill this instance's caches (SQLite keeps pets and pages in memory).
      for (let i = 0; i < 2; i++) {
        assert.equal(await petStatus(account, p.id), 'available');
        assert.deepEqual(await listedIds(account, '&status=available'), [p.id]);
      }
      const store = await createStore(loadConfig({ PETSTORE_DATABASE_URL: app.config.database.url }));
      t.after(() => store.close());
      const other = await createServices({ store, clock: { now: () => Date.now() }, environment: app.config.environment });
      const order = await other.orders.place(account.accountId, p.id);
      assert.equal(await petStatus(account, p.id), 'pending');
      assert.deepEqual(await listedIds(account, '&status=available'), []);
      await other.orders.act(account.accountId, order.id, 'deliver');
      assert.equal(await petStatus(account, p.id), 'sold');
      assert.deepEqual(await listedIds(account, '&status=sold'), [p.id]);
    });
  });
}
