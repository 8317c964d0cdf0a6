import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { fixedClock } from '../src/clock.js';
import { PetNotAvailableError } from '../src/errors.js';
import { IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_RENEW_MS, IDEMPOTENCY_TTL_MS, runIdempotent } from '../src/services/idempotency.js';
import type { Store } from '../src/store/types.js';
import { startApp } from './helpers/app.js';
import { backends } from './helpers/backends.js';
import { claimIdempotencyKey, createPetWithIdempotencyKey } from './helpers/store.js';

type Pet = { id: number; name: string; categoryId: number; status?: string };
type ErrorBody = { code: string; status: number };

for (const backend of backends) {
  describe(`Idempotency-Key on POST /v1/pets (${backend.name})`, () => {
    test('when the same key and body are sent twice, then the first 201 is replayed and only one pet exists', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const headers = { 'idempotency-key': randomUUID() };
      const body = { name: 'Rex', categoryId: 7, status: 'available' };
      const first = await app.request('POST', '/v1/pets', { key, body, headers });
      const second = await app.request('POST', '/v1/pets', { key, body: { status: 'available', categoryId: 7, name: 'Rex' }, headers });
      assert.equal(first.status, 201);
      assert.equal(second.status, 201);
      assert.deepEqual(second.body, first.body);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      assert.equal(((await app.request('GET', '/v1/pets', { key })).body as Pet[]).length, 1);
    });

    test('when the key is sent quoted and unquoted, then both name the same key', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const id = randomUUID();
      const body = { name: 'Rex', categoryId: 1 };
      const a = await app.request('POST', '/v1/pets', { key, body, headers: { 'idempotency-key': `"${id}"` } });
      const b = await app.request('POST', '/v1/pets', { key, body, headers: { 'idempotency-key': id } });
      assert.equal((a.body as Pet).id, (b.body as Pet).id);
    });

    test('when the same key comes with a different body, then 422 idempotency_key_reused and nothing is created', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const headers = { 'idempotency-key': randomUUID() };
      await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 }, headers });
      const res = await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 2 }, headers });
      assert.equal(res.status, 422);
      assert.equal((res.body as ErrorBody).code, 'idempotency_key_reused');
      const noStatus = await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1, status: 'sold' }, headers });
      assert.equal(noStatus.status, 422);
      assert.equal(((await app.request('GET', '/v1/pets', { key })).body as Pet[]).length, 1);
    });

    test('when two accounts use the same key, then each gets its own pet', async (t) => {
      const app = await startApp(t, { backend });
      const a = await app.createAccount('A');
      const b = await app.createAccount('B');
      const headers = { 'idempotency-key': 'shared-key-1' };
      const body = { name: 'Rex', categoryId: 1 };
      const pa = (await app.request('POST', '/v1/pets', { key: a.key, body, headers })).body as Pet;
      const pb = await app.request('POST', '/v1/pets', { key: b.key, body, headers });
      assert.equal(pb.status, 201);
      assert.equal(pb.headers.get('idempotent-replayed'), null);
      // Each account numbers its own pets: both are pet 1, each in its own account.
      assert.deepEqual([pa.id, (pb.body as Pet).id], [1, 1]);
      assert.deepEqual((await app.request('GET', '/v1/pets', { key: b.key })).body, [pb.body]);
      assert.deepEqual((await app.request('GET', '/v1/pets', { key: a.key })).body, [pa]);
    });

    test('when 20 identical requests race, then exactly one pet is created and the others replay it or get 409', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const headers = { 'idempotency-key': randomUUID() };
      const body = { name: 'Racer', categoryId: 3 };
      const results = await Promise.all(Array.from({ length: 20 }, () => app.request('POST', '/v1/pets', { key, body, headers })));
      const created = results.filter((r) => r.status === 201);
      assert.ok(created.length >= 1);
      assert.equal(new Set(created.map((r) => (r.body as Pet).id)).size, 1, 'every 201 carries the same pet');
      for (const r of results.filter((r) => r.status !== 201)) {
        assert.equal(r.status, 409);
        assert.equal((r.body as ErrorBody).code, 'idempotency_key_in_use');
        assert.ok(r.headers.get('retry-after'));
      }
      assert.equal(((await app.request('GET', '/v1/pets', { key })).body as Pet[]).length, 1);
      const retry = await app.request('POST', '/v1/pets', { key, body, headers });
      assert.equal(retry.status, 201, 'after the race, a retry replays');
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    });

    for (const bad of ['', ' ', 'a b', 'x'.repeat(256), 'clé', '"unterminated', '""']) {
      test(`when the Idempotency-Key is ${JSON.stringify(bad).slice(0, 20)}, then 400 invalid_request`, async (t) => {
        const app = await startApp(t, { backend });
        const { key } = await app.createAccount();
        const res = await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 }, headers: { 'idempotency-key': bad } });
        assert.equal(res.status, 400);
        assert.equal((res.body as ErrorBody).code, 'invalid_request');
        assert.match((res.body as { message: string }).message, /idempotency-key/);
      });
    }

    test('when 24 hours have passed, then the key is forgotten and creates a new pet', async (t) => {
      const clock = fixedClock(Date.UTC(2027, 0, 1));
      const app = await startApp(t, { backend, clock });
      const { key } = await app.createAccount();
      const headers = { 'idempotency-key': 'daily-import' };
      const body = { name: 'Rex', categoryId: 1 };
      const first = (await app.request('POST', '/v1/pets', { key, body, headers })).body as Pet;
      clock.set(Date.UTC(2027, 0, 1) + IDEMPOTENCY_TTL_MS - 1);
      assert.equal(((await app.request('POST', '/v1/pets', { key, body, headers })).body as Pet).id, first.id, 'kept for 24 hours');
      clock.set(Date.UTC(2027, 0, 1) + IDEMPOTENCY_TTL_MS);
      const later = await app.request('POST', '/v1/pets', { key, body, headers });
      assert.equal(later.status, 201);
      assert.notEqual((later.body as Pet).id, first.id);
      assert.equal(await app.services.pets.purgeExpiredIdempotencyKeys(), 0, 'the renewed key is not purged');
    });

    test('when creating the pet fails, then the key is released and a retry succeeds', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const store = app.store as Store;
      const original = store.pets.insert;
      store.pets.insert = async () => {
        throw new Error('disk full');
      };
      const headers = { 'idempotency-key': randomUUID() };
      const body = { name: 'Rex', categoryId: 1 };
      assert.equal((await app.request('POST', '/v1/pets', { key, body, headers })).status, 500);
      store.pets.insert = original;
      const retry = await app.request('POST', '/v1/pets', { key, body, headers });
      assert.equal(retry.status, 201);
      assert.equal(retry.headers.get('idempotent-replayed'), null);
    });

    test('when a claim is older than the lease (its process died), then a retry takes it over and no duplicate is possible', async (t) => {
      const app = await startApp(t, { backend });
      const { accountId } = await app.createAccount();
      const store = app.store;
      const claim = { accountId, key: 'k1', requestHash: 'h1', ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS };
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: 1_000 }), { outcome: 'claimed' });
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: 2_000 }), { outcome: 'in_flight', requestHash: 'h1' });
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: 1_000 + IDEMPOTENCY_LEASE_MS }), { outcome: 'claimed' });
      // Both "owners" now try to complete: the first wins, the second creates nothing.
      const pet = { name: 'Once', categoryId: 1 };
      const won = await createPetWithIdempotencyKey(store, accountId, pet, new Date().toISOString(), 'k1');
      const lost = await createPetWithIdempotencyKey(store, accountId, pet, new Date().toISOString(), 'k1');
      assert.ok(won);
      assert.equal(lost, undefined);
      assert.equal((await store.pets.list({ accountId, limit: 10 })).length, 1);
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: 3_000 }), { outcome: 'completed', requestHash: 'h1', resourceId: won.id });
      assert.equal(await store.idempotency.purge(1_001 + IDEMPOTENCY_LEASE_MS), 1);
    });

    test('when a request took a stalled claim over and its create is refused because the first owner completed the key meanwhile, then it replays that result, not the refusal', async (t) => {
      const app = await startApp(t, { backend });
      const { accountId } = await app.createAccount();
      const store = app.store;
      const claim = { accountId, key: 'k1', requestHash: 'h1', ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS };
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: 1_000 }), { outcome: 'claimed' }, 'the first owner, then stalled');
      const deps = { db: store.db, idempotency: store.idempotency, clock: fixedClock(1_000 + IDEMPOTENCY_LEASE_MS) };
      let first: Pet | undefined;
      const second = await runIdempotent(deps, accountId, 'k1', 'h1', {
        replay: async (id) => `replayed ${id}`,
        create: async () => {
          // The first owner wakes up and commits while the second runs; the second then finds the
          // pet taken (as an order for the same pet would) and is refused.
          first = await createPetWithIdempotencyKey(store, accountId, { name: 'First', categoryId: 1 }, new Date().toISOString(), 'k1');
          throw new PetNotAvailableError(1, 'pending');
        },
      });
      assert.ok(first);
      assert.deepEqual(second, { value: `replayed ${first.id}`, replayed: true });
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: 5_000 }), { outcome: 'completed', requestHash: 'h1', resourceId: first.id });
    });

    test('when a create with a key is refused and nobody completed the key, then the refusal stands and the key is released for a retry', async (t) => {
      const app = await startApp(t, { backend });
      const { accountId } = await app.createAccount();
      const deps = { db: app.store.db, idempotency: app.store.idempotency, clock: fixedClock(1_000) };
      const refused = new PetNotAvailableError(1, 'sold');
      await assert.rejects(runIdempotent(deps, accountId, 'k2', 'h2', { replay: async () => 'no', create: async () => { throw refused; } }), (error) => error === refused);
      assert.deepEqual(await claimIdempotencyKey(app.store, { accountId, key: 'k2', requestHash: 'h2', now: 1_001 }), { outcome: 'claimed' });
    });

    test('when the owner renews its claim, then it is not taken over however long it runs, and once renewals stop it is', async (t) => {
      const app = await startApp(t, { backend });
      const { accountId } = await app.createAccount();
      const store = app.store;
      const claim = { accountId, key: 'k1', requestHash: 'h1', ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS };
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: 1_000 }), { outcome: 'claimed' });
      let last = 1_000;
      for (let now = 1_000 + IDEMPOTENCY_RENEW_MS; now <= 1_000 + 3 * IDEMPOTENCY_LEASE_MS; now += IDEMPOTENCY_RENEW_MS) {
        await store.idempotency.renew(accountId, 'k1', now);
        last = now;
        assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now }), { outcome: 'in_flight', requestHash: 'h1' });
      }
      // A late renewal never moves the claim back.
      await store.idempotency.renew(accountId, 'k1', 1_000);
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: last + IDEMPOTENCY_LEASE_MS - 1 }), { outcome: 'in_flight', requestHash: 'h1' });
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: last + IDEMPOTENCY_LEASE_MS }), { outcome: 'claimed' });
      // A completed key is not touched by renewals.
      const pet = await createPetWithIdempotencyKey(store, accountId, { name: 'Once', categoryId: 1 }, new Date().toISOString(), 'k1');
      await store.idempotency.renew(accountId, 'k1', last + 10 * IDEMPOTENCY_LEASE_MS);
      assert.deepEqual(await claimIdempotencyKey(store, { ...claim, now: last + 20 * IDEMPOTENCY_LEASE_MS }), { outcome: 'completed', requestHash: 'h1', resourceId: pet!.id });
    });

    if (backend.name === 'postgres') {
      test('when two instances share PostgreSQL, then a key used on one is replayed by the other', async (t) => {
        const one = await startApp(t, { backend });
        const two = await startApp(t, { backend, databaseUrl: one.config.database.url });
        const { key } = await one.createAccount();
        const headers = { 'idempotency-key': randomUUID() };
        const body = { name: 'Rex', categoryId: 1 };
        const a = await one.request('POST', '/v1/pets', { key, body, headers });
        const b = await two.request('POST', '/v1/pets', { key, body, headers });
        assert.deepEqual(b.body, a.body);
        assert.equal(b.headers.get('idempotent-replayed'), 'true');
      });
    }
  });
}
