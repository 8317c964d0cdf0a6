// @petstore/client's pets against the real server on each store: every method, paging with
// Link rel="next", idempotent creates, and PetstoreError fields for each error status.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { inspect } from 'node:util';
import { type NewPet, type Pet, Petstore, type PetStatus } from '@petstore/client';
import type { Transaction } from '../../src/store/core/sql.js';
import type { Store } from '../../src/store/types.js';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertErrorFromAnswer, type Attempt, newAccountClient, petstoreError, type RecordingOptions, recordingClient, UUID } from './helpers.js';

const STATUSES: PetStatus[] = ['available', 'pending', 'sold'];

for (const backend of backends) {
  describe(`@petstore/client pets against the real server (${backend.name})`, () => {
    // A high limit: the paging tests make hundreds of pets; the 429 tests have their own server.
    const getApp = sharedApp({ backend, env: { PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' } });
    let app: TestApp;
    before(async () => {
      app = await getApp();
    });

    const client = (options: RecordingOptions = {}) => newAccountClient(app, options);

    test('when a pet is created, then create returns it with its id, and get (deprecated) and list return the same pet', async () => {
      const { petstore } = await client();
      const rex = await petstore.pets.create({ name: 'Rex', categoryId: 7, status: 'available' });
      assert.deepEqual(rex, { id: rex.id, name: 'Rex', categoryId: 7, status: 'available' });
      const tom = await petstore.pets.create({ name: 'Tom', categoryId: 2 });
      assert.equal('status' in tom, false, 'no status: omitted, not null');
      assert.deepEqual(await petstore.pets.get(rex.id), rex);
      assert.deepEqual(await petstore.pets.list(), { data: [rex, tom] });
    });

    test('when create is called without an idempotency key, then each call sends a generated UUID Idempotency-Key of its own', async () => {
      const { petstore, attempts } = await client();
      const a = await petstore.pets.create({ name: 'A', categoryId: 1 });
      const b = await petstore.pets.create({ name: 'A', categoryId: 1 });
      assert.notEqual(a.id, b.id, 'two calls, two pets');
      assert.deepEqual(attempts.map((x) => [x.method, x.status, x.replayed]), [['POST', 201, null], ['POST', 201, null]]);
      assert.match(attempts[0]!.idempotencyKey ?? '', UUID);
      assert.match(attempts[1]!.idempotencyKey ?? '', UUID);
      assert.notEqual(attempts[0]!.idempotencyKey, attempts[1]!.idempotencyKey);
      await petstore.pets.list();
      assert.equal(attempts[2]!.idempotencyKey, null, 'reads carry none');
    });

    test('when create is called twice with the same idempotencyKey and body, then the second replays the first pet and only one exists', async () => {
      const { petstore, attempts } = await client();
      const newPet: NewPet = { name: 'Once', categoryId: 3, status: 'pending' };
      const first = await petstore.pets.create(newPet, { idempotencyKey: 'import-2026-11-23-row-1' });
      const second = await petstore.pets.create({ ...newPet }, { idempotencyKey: 'import-2026-11-23-row-1' });
      assert.deepEqual(second, first);
      assert.deepEqual(attempts.map((x) => [x.idempotencyKey, x.replayed]), [['import-2026-11-23-row-1', null], ['import-2026-11-23-row-1', 'true']]);
      assert.deepEqual((await petstore.pets.list()).data, [first]);
    });

    test('when list is called with limit, status and cursor, then it returns one page, and nextCursor from Link rel="next" until the last page', async () => {
      const { petstore, attempts } = await client();
      const pets: Pet[] = [];
      for (let i = 0; i < 5; i += 1) pets.push(await petstore.pets.create({ name: `P${i}`, categoryId: 1, status: i < 3 ? 'sold' : 'available' }));
      const first = await petstore.pets.list({ limit: 2 });
      assert.deepEqual(first.data, pets.slice(0, 2));
      assert.ok(first.nextCursor);
      const second = await petstore.pets.list({ limit: 2, cursor: first.nextCursor });
      assert.deepEqual(second.data, pets.slice(2, 4));
      const last = await petstore.pets.list({ limit: 2, cursor: second.nextCursor });
      assert.deepEqual(last, { data: pets.slice(4) }, 'no nextCursor on the last page');
      const sold = await petstore.pets.list({ status: 'sold', limit: 2 });
      assert.deepEqual(sold.data, pets.slice(0, 2));
      assert.deepEqual(await petstore.pets.list({ status: 'sold', limit: 2, cursor: sold.nextCursor }), { data: pets.slice(2, 3) });
      const query = (a: Attempt) => Object.fromEntries(new URL(a.url).searchParams);
      assert.deepEqual(query(attempts.at(-1)!), { limit: '2', status: 'sold', cursor: sold.nextCursor });
      assert.deepEqual(query(attempts.at(-5)!), { limit: '2' }, 'only the parameters given are sent');
    });

    test('when listAll pages through 250 pets, then each comes exactly once in id order, one request per page, fetched as iterated', async () => {
      const { petstore, attempts, accountId } = await client();
      const created: Pet[] = [];
      // Through the service: the pets are this test's data, not what it tests.
      for (let i = 0; i < 250; i += 1) {
        created.push(await app.services.pets.create(accountId, { name: `Pet ${i}`, categoryId: 1 + (i % 4), status: STATUSES[i % 3]! }));
      }
      const all: Pet[] = [];
      for await (const pet of petstore.pets.listAll({ limit: 100 })) all.push(pet);
      assert.deepEqual(all, created);
      assert.equal(attempts.length, 3, '100 + 100 + 50');

      attempts.length = 0;
      const pending: Pet[] = [];
      for await (const pet of petstore.pets.listAll({ status: 'pending' })) pending.push(pet);
      assert.deepEqual(pending, created.filter((p) => p.status === 'pending'));
      assert.equal(attempts.length, Math.ceil(pending.length / 20), 'the default page size (20)');
      assert.ok(attempts.every((a) => new URL(a.url).searchParams.get('status') === 'pending'));

      attempts.length = 0;
      let seen = 0;
      for await (const pet of petstore.pets.listAll({ limit: 10 })) {
        assert.equal(pet.id, created[seen]!.id);
        if (++seen === 15) break;
      }
      assert.equal(attempts.length, 2, 'pages are fetched only as the loop asks for them');
    });

    test('when a request is invalid (400), then PetstoreError has the server\'s status, code, message and X-Request-Id, and it is not retried', async () => {
      const cases: Array<[string, (petstore: Petstore) => Promise<unknown>, string]> = [
        ['limit out of range', (p) => p.pets.list({ limit: 1000 }), 'invalid_request'],
        ['a blank name', (p) => p.pets.create({ name: ' ', categoryId: 1 }), 'invalid_request'],
        ['a forged cursor', (p) => p.pets.list({ cursor: 'AQAAAAAAAAAAAqc7bj8koVGDL7ScVq_Rl-c' }), 'invalid_cursor'],
        ['a fractional id', (p) => p.pets.get(1.5), 'invalid_request'],
      ];
      for (const [what, call, code] of cases) {
        const { petstore, attempts } = await client({ maxRetries: 2 });
        const error = await petstoreError(call(petstore));
        assertErrorFromAnswer(error, attempts, 400, code);
        assert.equal(error.retryAfter, undefined, what);
      }
    });

    test('when the API key is unknown (401), then PetstoreError unauthorized, not retried', async () => {
      const { attempts, petstore } = recordingClient(app.url, `psk_live_${'a'.repeat(36)}`);
      assertErrorFromAnswer(await petstoreError(petstore.pets.list()), attempts, 401, 'unauthorized');
    });

    test('when the pet does not exist (404), then PetstoreError not_found, not retried', async () => {
      const { petstore, attempts } = await client();
      assertErrorFromAnswer(await petstoreError(petstore.pets.get(9007199254740991)), attempts, 404, 'not_found');
    });

    test('when an idempotency key is reused with another body (422), then PetstoreError idempotency_key_reused, not retried, nothing created', async () => {
      const { petstore, attempts } = await client();
      const first = await petstore.pets.create({ name: 'Rex', categoryId: 1 }, { idempotencyKey: 'row-7' });
      attempts.length = 0;
      const error = await petstoreError(petstore.pets.create({ name: 'Rex', categoryId: 2 }, { idempotencyKey: 'row-7' }));
      assertErrorFromAnswer(error, attempts, 422, 'idempotency_key_reused');
      assert.deepEqual((await petstore.pets.list()).data, [first]);
    });

    test('when the same key is still in flight (409), then PetstoreError idempotency_key_in_use with retryAfter; with retries, the call waits and gets the replay', async (t) => {
      const store = app.store as Store;
      const original = store.db.transaction;
      const claim = store.idempotency.insertClaim;
      let armed = false;
      // Arms the hold when the key is claimed (its claim commits first), so the next transaction,
      // the create's, waits before it starts: a request in flight that holds no lock.
      store.idempotency.insertClaim = async (...args) => {
        const inserted = await claim.apply(store.idempotency, args);
        if (args[2] === 'held-1') armed = inserted;
        return inserted;
      };
      let release = () => {};
      const released = new Promise<void>((resolve) => (release = resolve));
      let entered = () => {};
      const inside = new Promise<void>((resolve) => (entered = resolve));
      // Holds the first create inside the server, after its key was claimed: a real in-flight request.
      store.db.transaction = async <T>(work: (tx: Transaction) => Promise<T>): Promise<T> => {
        if (armed) {
          armed = false;
          entered();
          await released;
        }
        return original.call(store.db, work) as Promise<T>;
      };
      t.after(() => {
        store.db.transaction = original;
        store.idempotency.insertClaim = claim;
        release();
      });
      const { petstore, key } = await client();
      const newPet = { name: 'Held', categoryId: 1 };
      const first = petstore.pets.create(newPet, { idempotencyKey: 'held-1' });
      await inside;

      const once = recordingClient(app.url, key, { maxRetries: 0 });
      const error = await petstoreError(once.petstore.pets.create(newPet, { idempotencyKey: 'held-1' }));
      assertErrorFromAnswer(error, once.attempts, 409, 'idempotency_key_in_use');
      assert.equal(error.retryAfter, 1);

      const retrying = recordingClient(app.url, key, { maxRetries: 2, onAnswer: (a) => a.status === 409 && release() });
      const started = Date.now();
      const [created, replayed] = await Promise.all([first, retrying.petstore.pets.create(newPet, { idempotencyKey: 'held-1' })]);
      assert.deepEqual(replayed, created);
      assert.deepEqual(retrying.attempts.map((a) => [a.status, a.replayed, a.idempotencyKey]), [[409, null, 'held-1'], [201, 'true', 'held-1']]);
      assert.ok(Date.now() - started >= 1000, 'waited Retry-After (1 s) before retrying');
      assert.deepEqual((await petstore.pets.list()).data, [created]);
    });
  });
}

describe('new Petstore(options)', () => {
  test('when only apiKey is given, then the defaults are the local server and the example API beside /v1', () => {
    const petstore = new Petstore({ apiKey: 'k' });
    assert.equal(petstore.baseUrl, 'http://127.0.0.1:8080/v1');
    assert.equal(petstore.exampleApiUrl, 'http://127.0.0.1:8080/example/v1');
    const behindPrefix = new Petstore({ apiKey: 'k', baseUrl: 'https://api.example.com/petstore/v1/' });
    assert.equal(behindPrefix.baseUrl, 'https://api.example.com/petstore/v1');
    assert.equal(behindPrefix.exampleApiUrl, 'https://api.example.com/petstore/example/v1');
  });

  test('when an option is wrong, then the constructor throws a TypeError naming it', () => {
    for (const [options, pattern] of [
      [{ apiKey: '' }, /apiKey/],
      [{ apiKey: 'k', baseUrl: 'http://127.0.0.1:8080' }, /must end in \/v1/],
      [{ apiKey: 'k', baseUrl: '127.0.0.1:8080/v1' }, /baseUrl must be an absolute URL|http\(s\)/],
      [{ apiKey: 'k', exampleApiUrl: 'ftp://x/example/v1' }, /exampleApiUrl/],
      [{ apiKey: 'k', maxRetries: -1 }, /maxRetries/],
      [{ apiKey: 'k', maxRetries: 1.5 }, /maxRetries/],
      [{ apiKey: 'k', timeoutMs: 0 }, /timeoutMs/],
    ] as const) {
      assert.throws(() => new Petstore(options), (e: unknown) => e instanceof TypeError && pattern.test(e.message), JSON.stringify(options));
    }
  });

  test('when the client is printed, then the API key is not in it', () => {
    const petstore = new Petstore({ apiKey: 'psk_live_secret' });
    assert.doesNotMatch(JSON.stringify(petstore), /secret/);
    assert.doesNotMatch(inspect(petstore, { showHidden: true, depth: 5 }), /secret/);
  });
});
