// The event log over HTTP, on every store: each kind of change writes exactly one event of the
// right type and payload in its own transaction, a refused change writes none; listing (oldest
// first, type filter, after, cursors) and every bad input with its status and code; isolation
// between accounts. Every response is checked against the served document by the test app.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sharedApp, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

type Event = { id: string; type: string; createdAt: string; sequence: number; data: { object: Record<string, unknown>; previousStatus?: string } };
type ErrorBody = { code: string };
type Account = { accountId: string; key: string };

const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' };

function assertError(res: TestResponse, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal((res.body as ErrorBody).code, code, res.text);
}
const nextLink = (res: TestResponse) => /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];

for (const backend of backends) {
  describe(`events over HTTP (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;

    const events = async (account: Account, query = '') => {
      const res = await app.request('GET', `/v1/events?limit=100${query}`, { key: account.key });
      assert.equal(res.status, 200, res.text);
      return res.body as Event[];
    };
    const newPet = async (account: Account, body: Record<string, unknown>) => {
      const res = await app.request('POST', '/v1/pets', { key: account.key, body });
      assert.equal(res.status, 201, res.text);
      return res.body as Record<string, unknown> & { id: number };
    };

    test('when pets are created and orders placed, delivered and cancelled, then each change writes exactly its events, in order, with the objects as the API returns them', async () => {
      app = await getApp();
      const owner = await app.createAccount('Events owner');
      assert.deepEqual(await events(owner), [], 'a new account has no events');

      const rex = await newPet(owner, { name: 'Rex "the" \\ dög', categoryId: 3, status: 'available' });
      const tom = await newPet(owner, { name: 'Tom', categoryId: 4, status: 'available' });
      const plain = await newPet(owner, { name: 'Plain', categoryId: 5 });
      const byKey = await app.request('POST', '/v1/pets', { key: owner.key, body: { name: 'Keyed', categoryId: 6 }, headers: { 'idempotency-key': 'k-1' } });
      const replay = await app.request('POST', '/v1/pets', { key: owner.key, body: { name: 'Keyed', categoryId: 6 }, headers: { 'idempotency-key': 'k-1' } });
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');

      const placed = (await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: rex.id } })).body as Record<string, unknown> & { id: number };
      const delivered = (await app.request('POST', `/v1/store/orders/${placed.id}/deliver`, { key: owner.key })).body as Record<string, unknown>;
      const second = (await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: tom.id } })).body as Record<string, unknown> & { id: number };
      const cancelled = (await app.request('POST', `/v1/store/orders/${second.id}/cancel`, { key: owner.key })).body as Record<string, unknown>;
      // Asking again for a done move changes nothing: no event.
      assert.equal((await app.request('POST', `/v1/store/orders/${placed.id}/deliver`, { key: owner.key })).status, 200);

      const log = await events(owner);
      const petNow = async (id: number) => (await app.request('GET', `/v1/pets/${id}`, { key: owner.key })).body;
      assert.deepEqual(
        log.map((e) => [e.sequence, e.type, e.data]),
        [
          [1, 'pet.created', { object: rex }],
          [2, 'pet.created', { object: tom }],
          [3, 'pet.created', { object: plain }],
          [4, 'pet.created', { object: byKey.body }],
          [5, 'order.placed', { object: placed }],
          [6, 'pet.status_changed', { object: { ...rex, status: 'pending' }, previousStatus: 'available' }],
          [7, 'order.delivered', { object: delivered }],
          [8, 'pet.status_changed', { object: await petNow(rex.id), previousStatus: 'pending' }],
          [9, 'order.placed', { object: second }],
          [10, 'pet.status_changed', { object: { ...tom, status: 'pending' }, previousStatus: 'available' }],
          [11, 'order.cancelled', { object: cancelled }],
          [12, 'pet.status_changed', { object: await petNow(tom.id), previousStatus: 'pending' }],
        ],
      );
      assert.equal((log[7]!.data.object as { status: string }).status, 'sold');
      assert.equal((log[11]!.data.object as { status: string }).status, 'available');
      for (const e of log) {
        assert.match(e.id, /^evt_[0-9a-f]{32}$/);
        assert.match(e.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      }
      assert.equal(new Set(log.map((e) => e.id)).size, log.length);
      assert.equal(log[4]!.createdAt, placed.createdAt, 'the event is stamped with the change');

      // getEvent answers the same bytes the list holds.
      const one = await app.request('GET', `/v1/events/${log[5]!.id}`, { key: owner.key });
      assert.equal(one.status, 200);
      assert.deepEqual(one.body, log[5]);
    });

    test('when a change is refused (400, 404, 409), then no event is written', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const sold = await newPet(owner, { name: 'Sold', categoryId: 1, status: 'sold' });
      const before = (await events(owner)).length;
      assertError(await app.request('POST', '/v1/pets', { key: owner.key, body: { name: '', categoryId: 1 } }), 400, 'invalid_request');
      assertError(await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: sold.id } }), 409, 'pet_not_available');
      assertError(await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: 999 } }), 404, 'not_found');
      assertError(await app.request('POST', '/v1/store/orders/999/deliver', { key: owner.key }), 404, 'not_found');
      const available = await newPet(owner, { name: 'A', categoryId: 1, status: 'available' });
      const order = (await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: available.id } })).body as { id: number };
      await app.request('POST', `/v1/store/orders/${order.id}/cancel`, { key: owner.key });
      const after = (await events(owner)).length;
      assertError(await app.request('POST', `/v1/store/orders/${order.id}/deliver`, { key: owner.key }), 409, 'invalid_transition');
      assertError(await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: sold.id } }), 409, 'pet_not_available');
      assert.equal(after, before + 5, 'pet.created, order.placed + status_changed, order.cancelled + status_changed');
      assert.equal((await events(owner)).length, after);
    });

    test('when listing, then pages go oldest first with Link cursors, `type` filters one or several kinds, and `after` resumes from a sequence', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      for (let i = 0; i < 5; i++) {
        const pet = await newPet(owner, { name: `P${i}`, categoryId: 1, status: 'available' });
        if (i % 2 === 0) await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: pet.id } });
      }
      const all = await events(owner);
      assert.equal(all.length, 5 + 3 * 2);
      assert.deepEqual(all.map((e) => e.sequence), [...all.keys()].map((i) => i + 1));

      // Walk with limit 2 and a filter of two kinds.
      const wanted = all.filter((e) => e.type === 'order.placed' || e.type === 'pet.status_changed');
      const seen: Event[] = [];
      let path: string | undefined = '/v1/events?limit=2&type=order.placed,pet.status_changed';
      while (path) {
        const res = await app.request('GET', path, { key: owner.key });
        assert.equal(res.status, 200, res.text);
        seen.push(...(res.body as Event[]));
        path = nextLink(res);
        if (path) assert.match(path, /^\/v1\/events\?limit=2&type=order.placed%2Cpet.status_changed&cursor=/);
      }
      assert.deepEqual(seen, wanted);

      assert.deepEqual(await events(owner, '&type=order.placed'), all.filter((e) => e.type === 'order.placed'));
      assert.deepEqual(await events(owner, '&after=7'), all.slice(7));
      assert.deepEqual(await events(owner, `&after=${all.length}`), []);
      assert.deepEqual(await events(owner, '&after=3&type=pet.created'), all.filter((e) => e.sequence > 3 && e.type === 'pet.created'));

      // A cursor is bound to its filter, its account and its collection.
      const first = await app.request('GET', '/v1/events?limit=1&type=pet.created', { key: owner.key });
      const cursor = new URLSearchParams(nextLink(first)!.split('?')[1]).get('cursor')!;
      assertError(await app.request('GET', `/v1/events?cursor=${cursor}`, { key: owner.key }), 400, 'invalid_cursor');
      assertError(await app.request('GET', `/v1/events?type=order.placed&cursor=${cursor}`, { key: owner.key }), 400, 'invalid_cursor');
      const other = await app.createAccount();
      assertError(await app.request('GET', `/v1/events?type=pet.created&cursor=${cursor}`, { key: other.key }), 400, 'invalid_cursor');
      assertError(await app.request('GET', `/v1/store/orders?cursor=${cursor}`, { key: owner.key }), 400, 'invalid_cursor');
      const petsPage = await app.request('GET', '/v1/pets?limit=1', { key: owner.key });
      const petsCursor = new URLSearchParams(nextLink(petsPage)!.split('?')[1]).get('cursor')!;
      assertError(await app.request('GET', `/v1/events?cursor=${petsCursor}`, { key: owner.key }), 400, 'invalid_cursor');
    });

    test('when the query or id is bad, then 400 invalid_request (or 404) with the reason', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      for (const query of ['limit=0', 'limit=101', 'limit=x', 'type=pet.adopted', 'type=', 'type=pet.created,,order.placed', 'after=-1', 'after=1.5', 'after=x', 'unknown=1', 'after=1&cursor=abc']) {
        assertError(await app.request('GET', `/v1/events?${query}`, { key: owner.key }), 400, 'invalid_request');
      }
      const unknown = await app.request('GET', '/v1/events?type=pet.adopted', { key: owner.key });
      assert.match((unknown.body as { message: string }).message, /Unknown event type "pet\.adopted".*pet\.created/);
      assertError(await app.request('GET', '/v1/events?cursor=not-a-cursor', { key: owner.key }), 400, 'invalid_cursor');
      assertError(await app.request('GET', '/v1/events/evt_00000000000000000000000000000000', { key: owner.key }), 404, 'not_found');
      assertError(await app.request('GET', `/v1/events/${'x'.repeat(65)}`, { key: owner.key }), 400, 'invalid_request');
      assertError(await app.request('GET', '/v1/events/evt_%00', { key: owner.key }), 400, 'invalid_request');
      assertError(await app.request('GET', '/v1/events/evt-1', { key: owner.key }), 400, 'invalid_request');
      assertError(await app.request('GET', '/v1/events'), 401, 'unauthorized');
      assertError(await app.request('GET', '/v1/events/evt_1'), 401, 'unauthorized');
    });

    test('when two accounts change things, then each sees only its own events, and another account\'s event id answers 404', async () => {
      app = await getApp();
      const a = await app.createAccount('A');
      const b = await app.createAccount('B');
      await newPet(a, { name: 'A1', categoryId: 1 });
      await newPet(b, { name: 'B1', categoryId: 1 });
      await newPet(a, { name: 'A2', categoryId: 1 });
      const aLog = await events(a);
      const bLog = await events(b);
      assert.deepEqual(aLog.map((e) => [e.sequence, (e.data.object as { name: string }).name]), [[1, 'A1'], [2, 'A2']]);
      assert.deepEqual(bLog.map((e) => [e.sequence, (e.data.object as { name: string }).name]), [[1, 'B1']]);
      assertError(await app.request('GET', `/v1/events/${aLog[0]!.id}`, { key: b.key }), 404, 'not_found');
    });
  });
}

describe('events turned off (PETSTORE_EVENTS=false)', () => {
  test('when events are off, then changes write none and the log stays empty', async (t) => {
    const app = await startApp(t, { env: { ...env, PETSTORE_EVENTS: 'false' } });
    const owner = await app.createAccount();
    const pet = await app.request('POST', '/v1/pets', { key: owner.key, body: { name: 'Rex', categoryId: 1, status: 'available' } });
    await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: (pet.body as { id: number }).id } });
    const res = await app.request('GET', '/v1/events', { key: owner.key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, []);
  });
});

for (const backend of backends) {
  describe(`event retention (${backend.name})`, () => {
    test('when events are older than the retention, then pruning deletes them with their deliveries and jobs, and keeps younger ones', async (t) => {
      const hook = await startReceiver(() => ({ status: 500 }));
      t.after(() => hook.close());
      const app = await startApp(t, {
        backend,
        env: { ...env, PETSTORE_WEBHOOK_ALLOW_HTTP: 'true', PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32', PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0,3600' },
      });
      const owner = await app.createAccount();
      const endpoint = (await app.request('POST', '/v1/webhook-endpoints', { key: owner.key, body: { url: hook.url } })).body as { id: string };
      await app.request('POST', '/v1/pets', { key: owner.key, body: { name: 'Old', categoryId: 1 } });
      await hook.waitFor(1);
      // A pending delivery (next attempt in an hour) with its job.
      await eventually(async () => ((await app.store.webhooks.stats()).pending === 1 ? true : undefined));
      const cutoff = Date.now() + 10;
      await new Promise((resolve) => setTimeout(resolve, 20));
      const young = await app.request('POST', '/v1/pets', { key: owner.key, body: { name: 'Young', categoryId: 1 } });
      assert.equal(young.status, 201);
      await hook.waitFor(2);
      // The receiver answering is not the attempt being recorded: wait until both deliveries wait for their retry.
      const listDeliveries = async () => (await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, { key: owner.key })).body as Array<{ attempts: number; nextAttemptAt?: string }>;
      await eventually(async () => ((await listDeliveries()).filter((d) => d.attempts === 1 && d.nextAttemptAt !== undefined).length === 2 ? true : undefined));

      // "Now" is 30 days after the cutoff: only what came before it is older than the retention.
      assert.equal(await app.services.events.prune(cutoff + 30 * 86_400_000, 30), 1);
      const left = (await app.request('GET', '/v1/events', { key: owner.key })).body as Array<{ data: { object: { name: string } } }>;
      assert.deepEqual(left.map((e) => e.data.object.name), ['Young']);
      assert.equal((await listDeliveries()).length, 1);
      assert.equal((await app.store.webhooks.stats()).pending, 1);
      assert.deepEqual(await app.store.webhooks.claim(Date.now() + 7_200_000, 1000, 10, []).then((c) => c.map((d) => d.event.data.includes('Young'))), [true], 'the pruned delivery\'s job is gone');
    });
  });
}
