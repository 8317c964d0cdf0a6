// Runs in the event log, on every store: a group commit's pet.created events are one row per
// account (event-log.ts, EventRow). When many creates share a batch, then the log still reads as
// one event per change everywhere: listing from every `after` (inside a run and across its
// ends), by id (a forged id with a run's sequence is not found), to a webhook endpoint (one
// delivery per event, its id), in the deliveries listing, and in pruning's count.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { petCreatedEvent } from '../src/services/domain-events.js';
import { petRunData, runData } from '../src/store/event-log.js';
import { startApp } from './helpers/app.js';
import { type Backend, backends } from './helpers/backends.js';
import { eventually, startReceiver } from './helpers/receiver.js';

type Event = { id: string; type: string; createdAt: string; sequence: number; data: { object: { id: number; name: string } } };

/** Rows and events (sum of spans) of an account's log, read from the database itself. */
async function logRows(backend: Backend, url: string, accountId: string): Promise<{ rows: number; events: number }> {
  const sql = 'SELECT count(*) AS rows, COALESCE(sum(span), 0) AS events FROM events WHERE account_id = $1';
  if (backend.name === 'sqlite') {
    const db = new Database(url, { readonly: true, fileMustExist: true });
    try {
      return db.prepare<[string], { rows: number; events: number }>(sql.replace('$1', '?')).get(accountId)!;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const row = (await client.query<{ rows: string; events: string }>(sql, [accountId])).rows[0]!;
    return { rows: Number(row.rows), events: Number(row.events) };
  } finally {
    await client.end();
  }
}

for (const backend of backends) {
  describe(`event log runs (${backend.name})`, () => {
    test('when 80 pets of two accounts are created at once, then their events are fewer rows but read as one event each: listed from every after, got by id, delivered and pruned one by one', async (t) => {
      const hook = await startReceiver();
      t.after(() => hook.close());
      const database = await backend.createDatabase();
      t.after(() => database.drop());
      const app = await startApp(t, {
        backend,
        databaseUrl: database.url,
        env: {
          PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000',
          PETSTORE_WEBHOOK_ALLOW_HTTP: 'true', PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
        },
      });
      const owner = await app.createAccount('Runs owner');
      const other = await app.createAccount('Runs other');
      const endpoint = (await app.request('POST', '/v1/webhook-endpoints', { key: owner.key, body: { url: hook.url, eventTypes: ['pet.created'] } })).body as { id: string };

      // Created in one event-loop turn through the service, so they share a group commit (over
      // HTTP from this process, requests are parsed in separate turns: batches of one). Names
      // JSON must escape, and the two accounts interleaved in the batch.
      const created = await Promise.all(
        Array.from({ length: 80 }, (_, i) =>
          app.services.pets.create(i % 4 === 3 ? other.accountId : owner.accountId, { name: `Pet "${i}" \\ ü`, categoryId: i + 1, status: 'available' }),
        ),
      );
      const mine = created.filter((_, i) => i % 4 !== 3);
      for (const pet of mine) assert.deepEqual((await app.request('GET', `/v1/pets/${pet.id}`, { key: owner.key })).body, pet);

      const stored = await logRows(backend, database.url, owner.accountId);
      assert.equal(stored.events, 60);
      assert.ok(stored.rows < 60, `runs are used: ${stored.rows} rows for 60 events`);

      // The whole log: one event per pet, sequences 1…60, each object as its create answered.
      const all = (await app.request('GET', '/v1/events?limit=100', { key: owner.key })).body as Event[];
      assert.deepEqual(all.map((e) => e.sequence), Array.from({ length: 60 }, (_, i) => i + 1));
      assert.equal(new Set(all.map((e) => e.id)).size, 60, 'distinct ids');
      const byPet = new Map(mine.map((pet) => [pet.id, pet]));
      for (const event of all) {
        assert.equal(event.type, 'pet.created');
        assert.deepEqual(event.data.object, byPet.get(event.data.object.id), `event ${event.sequence}`);
      }

      // Pages of 7 from every after: inside runs, at their ends, past the last.
      for (let after = 0; after <= 60; after++) {
        const res = await app.request('GET', `/v1/events?limit=7&after=${after}`, { key: owner.key });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, all.slice(after, after + 7), `after=${after}`);
      }
      // A type filter that matches the runs, and one that matches nothing.
      assert.deepEqual((await app.request('GET', '/v1/events?limit=100&after=30&type=pet.created,order.placed', { key: owner.key })).body, all.slice(30));
      assert.deepEqual((await app.request('GET', '/v1/events?type=order.placed', { key: owner.key })).body, []);

      // By id: each one; a run's sequence with other random digits, and another account's id, are not found.
      for (const event of all) assert.deepEqual((await app.request('GET', `/v1/events/${event.id}`, { key: owner.key })).body, event);
      const forged = all[10]!.id.slice(0, 16) + 'f'.repeat(20);
      assert.notEqual(forged, all[10]!.id);
      const notFound = await app.request('GET', `/v1/events/${forged}`, { key: owner.key });
      assert.equal(notFound.status, 404, notFound.text);
      assert.equal((notFound.body as { code: string }).code, 'not_found');
      const theirs = (await app.request('GET', '/v1/events?limit=1', { key: other.key })).body as Event[];
      assert.equal((await app.request('GET', `/v1/events/${theirs[0]!.id}`, { key: owner.key })).status, 404);

      // Delivered one by one: a webhook-id per event, the body the listed event.
      const received = await hook.waitFor(60);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(hook.received.length, 60, 'no delivery twice');
      assert.deepEqual(
        received.map((r) => JSON.parse(r.body) as Event).sort((a, b) => a.sequence - b.sequence),
        all,
      );
      assert.deepEqual(received.map((r) => r.headers['webhook-id']).sort(), all.map((e) => e.id).sort());
      const deliveries = await eventually(async () => {
        const res = await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=100&status=succeeded`, { key: owner.key });
        const list = res.body as Array<{ eventId: string; eventType: string }>;
        return list.length === 60 ? list : undefined;
      });
      assert.deepEqual(deliveries.map((d) => d.eventId).sort(), all.map((e) => e.id).sort());

      // Pruning counts events, not rows: 60 of the owner's and 20 of the other's.
      assert.equal(await app.services.events.prune(Date.now() + 31 * 86_400_000, 30), 80);
      assert.deepEqual((await app.request('GET', '/v1/events', { key: owner.key })).body, []);
    });
  });
}

for (const backend of backends) {
  describe(`event log runs of changes (${backend.name})`, () => {
    test('when 20 PATCHes of one account commit in one batch, then their pet.updated events are one row but read as one event each: listed in order, got by id, each with its own previous name', async (t) => {
      const database = await backend.createDatabase();
      t.after(() => database.drop());
      const app = await startApp(t, { backend, databaseUrl: database.url, env: { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' } });
      const owner = await app.createAccount('Change runs');
      const pets = await Promise.all(Array.from({ length: 20 }, (_, i) => app.services.pets.create(owner.accountId, { name: `Before ${i}`, categoryId: 1 })));
      const before = await logRows(backend, database.url, owner.accountId);
      // One event-loop turn through the service: one batch, one transaction, one append.
      const after = await Promise.all(pets.map((pet, i) => app.services.petChanges.update(owner.accountId, pet.id, { name: `After "${i}" \\ ü` })));
      const stored = await logRows(backend, database.url, owner.accountId);
      assert.equal(stored.events - before.events, 20);
      assert.equal(stored.rows - before.rows, 1, 'the batch\'s 20 pet.updated events are one row');

      const all = (await app.request('GET', '/v1/events?limit=100&type=pet.updated', { key: owner.key })).body as Array<Event & { data: { previousAttributes: { name: string } } }>;
      assert.deepEqual(all.map((e) => e.sequence), Array.from({ length: 20 }, (_, i) => 21 + i));
      assert.equal(new Set(all.map((e) => e.id)).size, 20, 'distinct ids');
      all.forEach((event, i) => {
        assert.deepEqual(event.data.object, after[i], `event ${event.sequence}`);
        assert.deepEqual(event.data.previousAttributes, { name: `Before ${i}` });
      });
      for (const event of all) assert.deepEqual((await app.request('GET', `/v1/events/${event.id}`, { key: owner.key })).body, event);
      for (let from = 18; from <= 40; from++) {
        const res = await app.request('GET', `/v1/events?limit=3&after=${from}`, { key: owner.key });
        assert.deepEqual((res.body as Event[]).map((e) => e.sequence), [from + 1, from + 2, from + 3].filter((seq) => seq <= 40), `after=${from}`);
      }
    });
  });
}

describe('a pet run row (event-log.ts)', () => {
  test('when a pet run is decoded, then each event is byte for byte the data petCreatedEvent writes for the pet, with or without a status', () => {
    const pets = [
      { name: 'Rex "the" \\ dög\n', categoryId: 3, status: 'available' as const },
      { name: 'Plain', categoryId: 5 },
      { name: '💡', categoryId: 7, status: 'sold' as const },
    ];
    const data = '{"firstPetId":41' + petRunData(pets);
    assert.deepEqual(
      runData({ span: 3, data }),
      pets.map((pet, k) => petCreatedEvent({ id: 41 + k, ...pet }).data),
    );
    // A single event's data and a JSON array of them read back as they were written.
    const single = petCreatedEvent({ id: 1, name: 'One', categoryId: 1 }).data;
    assert.deepEqual(runData({ span: 1, data: single }), [single]);
    assert.deepEqual(runData({ span: 2, data: `[${single},${single}]` }), [single, single]);
  });
});
