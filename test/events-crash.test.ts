// The event log agrees with the state it describes, even when the server is killed (SIGKILL)
// while pets are created and orders placed, delivered and cancelled on two accounts: after each
// restart, replaying a pet's status changes from its creation ends at its status; each order
// has its placed event and, once moved, the one matching move, each followed by its pet's
// status change; no event without its change (none for a refused one); each account's
// sequence is 1..N (the counter rolls back with its transaction: no gaps); once the log is
// fanned out to the endpoints, every event has its pending delivery and job, and only one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Order, Pet } from '../src/schemas/index.js';
import { createStore } from '../src/store/index.js';
import { backends } from './helpers/backends.js';
import { call, createFixture, type Fixture, killAndDrop, listAll, listAllPets, type ServerChild, startServer } from './helpers/durability.js';
import { type ApiEvent, listEvents, registerEndpoint, WEBHOOK_ENV } from './helpers/webhooks.js';
import { storeConfig } from './helpers/store-config.js';

const PETS = 16;
const WORKERS = 8;
const ROUNDS = 2;


const TRANSITION = { placed: ['available', 'pending'], delivered: ['pending', 'sold'], cancelled: ['pending', 'available'] } as const;

/** Checks one account's events against its pets and orders (see the file's comment); a summary. */
function checkAccount(events: ApiEvent[], pets: Pet[], orders: Order[]): string {
  const sequences = events.map((e) => e.sequence);
  assert.deepEqual(sequences, Array.from({ length: events.length }, (_, i) => i + 1), 'sequence is 1..N, no gap, no duplicate');
  assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'event ids are unique');
  const bySeq = new Map(events.map((e) => [e.sequence, e]));

  // Each pet: one pet.created, as created; its status changes replay to its status.
  const petsById = new Map(pets.map((p) => [p.id, p]));
  const created = events.filter((e) => e.type === 'pet.created');
  assert.equal(created.length, pets.length, 'one pet.created per pet, none for a pet that does not exist');
  for (const e of created) {
    const pet = petsById.get(e.data.object.id);
    assert.ok(pet, `pet.created ${e.sequence} refers to pet ${e.data.object.id}, which exists`);
    const { status: _created, ...createdFields } = e.data.object;
    const { status: _now, ...petFields } = pet;
    assert.deepEqual(createdFields, petFields, `pet.created ${e.sequence} is pet ${pet.id} as created`);
  }
  const changes = new Map<number, ApiEvent[]>();
  for (const e of events.filter((e) => e.type === 'pet.status_changed')) changes.set(e.data.object.id, [...(changes.get(e.data.object.id) ?? []), e]);
  for (const pet of pets) {
    let status = created.find((e) => e.data.object.id === pet.id)!.data.object.status;
    for (const e of changes.get(pet.id) ?? []) {
      assert.equal(e.data.previousStatus, status, `pet ${pet.id}: event ${e.sequence} starts where the last one ended`);
      status = e.data.object.status;
    }
    assert.equal(status, pet.status, `pet ${pet.id}: its status changes end at its status`);
  }
  for (const id of changes.keys()) assert.ok(petsById.has(id), `status changes of pet ${id}, which exists`);

  // Each order: order.placed and, once moved, exactly the matching event; each right before its pet's change.
  const ordersById = new Map(orders.map((o) => [o.id, o]));
  const orderEvents = events.filter((e) => e.type.startsWith('order.'));
  for (const e of orderEvents) {
    const order = ordersById.get(e.data.object.id);
    assert.ok(order, `${e.type} ${e.sequence} refers to order ${e.data.object.id}, which exists`);
    const status = e.type.slice('order.'.length) as keyof typeof TRANSITION;
    assert.equal(e.data.object.status, status, `${e.type} ${e.sequence} carries the order ${status}`);
    if (status !== 'placed') assert.deepEqual(e.data.object, order, `${e.type} ${e.sequence} is the order as stored`);
    else assert.deepEqual(e.data.object, { ...order, status: 'placed', updatedAt: order.createdAt }, `order.placed ${e.sequence} is the order as placed`);
    const effect = bySeq.get(e.sequence + 1);
    assert.ok(effect?.type === 'pet.status_changed', `${e.type} ${e.sequence} is followed by its pet's change`);
    assert.equal(effect.data.object.id, order.petId, `event ${effect.sequence} changes the order's pet`);
    assert.deepEqual([effect.data.previousStatus, effect.data.object.status], TRANSITION[status], `event ${effect.sequence}: ${status} moves the pet`);
  }
  for (const order of orders) {
    const mine = orderEvents.filter((e) => e.data.object.id === order.id).map((e) => e.type);
    assert.deepEqual(mine, order.status === 'placed' ? ['order.placed'] : ['order.placed', `order.${order.status}`], `order ${order.id} (${order.status}) has its events and no other`);
  }
  // Nothing else: every event is accounted for by a pet or an order move.
  const moved = orders.filter((o) => o.status !== 'placed').length;
  assert.equal(events.length, pets.length + 2 * (orders.length + moved), 'no event without its change');
  return `${events.length} events (${pets.length} pets, ${orders.length} orders, ${moved} moved)`;
}

/** Fanned out (as the worker would: it is off), every event has one pending delivery to its account's endpoint and its job, and nothing else is there. */
async function checkOutbox(fixture: Fixture, events: number): Promise<void> {
  const store = await createStore(storeConfig(fixture.url, { pgPoolMax: 2 }));
  try {
    while ((await store.webhooks.fanOut(1000)) > 0);
  } finally {
    await store.close();
  }
  const sql = {
    // A row of the log holds a run of `span` events (event-log.ts, EventRow).
    events: 'SELECT COALESCE(sum(span), 0) AS n FROM events',
    deliveries: "SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'",
    jobs: "SELECT count(*) AS n FROM jobs WHERE kind = 'webhook.deliver'",
    eventsWithoutDelivery:
      'SELECT COALESCE(sum(e.span - (SELECT count(*) FROM webhook_deliveries d WHERE d.account_id = e.account_id AND d.event_seq BETWEEN e.seq AND e.seq + e.span - 1)), 0) AS n FROM events e',
    deliveriesWithoutJob:
      "SELECT count(*) AS n FROM webhook_deliveries d WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'webhook.deliver' AND j.account_id = d.account_id AND j.ref = d.event_seq AND j.grp = d.endpoint_id)",
  };
  const counts: Record<string, number> = {};
  if (fixture.backend === 'sqlite') {
    const db = new Database(fixture.url, { readonly: true, fileMustExist: true });
    try {
      for (const [name, q] of Object.entries(sql)) counts[name] = db.prepare<[], { n: number }>(q).get()!.n;
    } finally {
      db.close();
    }
  } else {
    const client = new pg.Client({ connectionString: fixture.url });
    await client.connect();
    try {
      for (const [name, q] of Object.entries(sql)) counts[name] = Number((await client.query<{ n: string }>(q)).rows[0]!.n);
    } finally {
      await client.end();
    }
  }
  assert.deepEqual(counts, { events, deliveries: events, jobs: events, eventsWithoutDelivery: 0, deliveriesWithoutJob: 0 }, 'one pending delivery and one job per event');
}

describe('SIGKILL while changes write events', { concurrency: true }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when the server is killed during concurrent creates and order moves ${ROUNDS} times, then after each restart the events and the state agree exactly`, { timeout: 160_000 }, async (t) => {
      const fixture = await createFixture(backend, 1);
      const accounts = [fixture.key, fixture.others[0]!.key];
      // The worker is off: deliveries stay pending, so the outbox can be checked row for row.
      const env = { ...fixture.env, ...WEBHOOK_ENV, PETSTORE_WEBHOOK_WORKER: 'false' };
      let server: ServerChild | undefined;
      t.after(() => killAndDrop(fixture, server));
      server = await startServer(env);
      // Nothing listens there: the endpoint only makes the changes write deliveries.
      for (const key of accounts) await registerEndpoint(server.url, key, 'http://127.0.0.1:9/hook');
      for (const key of accounts) {
        for (let i = 0; i < PETS; i++) {
          assert.equal((await call(server.url, key, 'POST', '/v1/pets', { name: `Pet ${i}`, categoryId: 1, status: 'available' }))?.status, 201);
        }
      }

      for (let round = 1; round <= ROUNDS; round++) {
        const url = server.url;
        let stop = false;
        let acknowledged = 0;
        let refused = 0;
        const worker = async (key: string, w: number) => {
          for (let n = 0; !stop; n++) {
            if (n % 5 === 0) {
              const made = await call(url, key, 'POST', '/v1/pets', { name: `r${round}-w${w}-${n}`, categoryId: 2, ...(n % 3 ? { status: 'available' } : {}) });
              if (!made) return;
              assert.equal(made.status, 201);
              acknowledged++;
            }
            // Workers share pets: many placements are refused (409, the pet is not available).
            const petId = 1 + ((w * 7 + n * 5) % PETS);
            const placed = await call(url, key, 'POST', '/v1/store/orders', { petId });
            if (!placed) return;
            if (placed.status === 409) {
              refused++;
              continue;
            }
            assert.equal(placed.status, 201, JSON.stringify(placed.body));
            acknowledged++;
            const order = placed.body as Order;
            const [action, other] = (w + n) % 2 ? ['deliver', 'cancel'] : ['cancel', 'deliver'];
            const moved = await call(url, key, 'POST', `/v1/store/orders/${order.id}/${action}`);
            if (!moved) return;
            assert.equal(moved.status, 200, JSON.stringify(moved.body));
            acknowledged++;
            // A move of an order already moved is refused and must leave no event.
            const again = await call(url, key, 'POST', `/v1/store/orders/${order.id}/${other}`);
            if (!again) return;
            assert.equal(again.status, 409, JSON.stringify(again.body));
            refused++;
          }
        };
        const load = Promise.all(accounts.flatMap((key) => Array.from({ length: WORKERS / 2 }, (_, w) => worker(key, w))));
        const started = Date.now();
        await sleep(700 + Math.floor(Math.random() * 600));
        // A loaded machine may have refused nothing yet (CI, once): the kill waits for both kinds (up to 20 s).
        while ((acknowledged === 0 || refused === 0) && Date.now() - started < 20_000) await sleep(50);
        server.kill('SIGKILL');
        await server.exited;
        stop = true;
        await load;
        assert.ok(acknowledged > 0 && refused > 0, `the load made changes (${acknowledged}) and had some refused (${refused}) before the kill`);

        server = await startServer(env);
        let total = 0;
        const summaries: string[] = [];
        for (const key of accounts) {
          const [events, pets, orders] = await Promise.all([
            listEvents(server.url, key),
            listAllPets(server.url, key),
            listAll<Order>(server.url, key, '/v1/store/orders?limit=100'),
          ]);
          summaries.push(checkAccount(events, pets, orders));
          total += events.length;
        }
        await checkOutbox(fixture, total);
        t.diagnostic(`${backend.name} round ${round}: ${acknowledged} changes acknowledged and ${refused} refused before the kill; ${summaries.join('; ')}; outbox complete`);
        // Later rounds need available pets: cancel what is placed (two more events each).
        for (const key of accounts) {
          for (const order of (await listAll<Order>(server.url, key, '/v1/store/orders?limit=100&status=placed'))) {
            assert.equal((await call(server.url, key, 'POST', `/v1/store/orders/${order.id}/cancel`))?.status, 200);
          }
        }
      }
    });
  }
});
