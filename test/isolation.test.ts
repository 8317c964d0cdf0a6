// Isolation between accounts, on every store backend: account B's key cannot read, list or
// learn the existence of account A's pets, A's cursors are refused for B, and a revoked
// key is refused on the very next request, also when another instance revoked it.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { createServices } from '../src/services/index.js';
import { createStore } from '../src/store/index.js';
import { sharedApp, type TestApp, type TestResponse } from './helpers/app.js';
import { backends } from './helpers/backends.js';
import { withoutId } from './helpers/fuzz.js';
import { sleep } from './helpers/wire.js';
import type { OpenApiDocument } from './helpers/openapi.js';

type ErrorBody = { code: string; message: string; status: number };
type Pet = { id: number; name: string; categoryId: number; status?: string };
type Account = { accountId: string; key: string; keyId: string };

const STATUSES = [undefined, 'available', 'pending', 'sold'] as const;
const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' };

/** Headers whose values legitimately differ between two otherwise identical answers. */
const VOLATILE = new Set(['date', 'x-request-id', 'ratelimit', 'content-length', 'keep-alive', 'connection']);

function headerShape(res: { headers: Headers }): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    out[name] = VOLATILE.has(name) ? '*' : value;
  });
  return out;
}

/** Every page of a listing: sizes, whether Link rel="next" was present, and the pets. */
async function pageThrough(app: TestApp, key: string, first: string): Promise<{ sizes: number[]; links: boolean[]; pets: Pet[] }> {
  const sizes: number[] = [];
  const links: boolean[] = [];
  const pets: Pet[] = [];
  let next: string | undefined = first;
  while (next) {
    const res = await app.request('GET', next, { key });
    assert.equal(res.status, 200, res.text);
    const page = res.body as Pet[];
    sizes.push(page.length);
    pets.push(...page);
    const link = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    links.push(link !== undefined);
    next = link;
    assert.ok(sizes.length < 200, 'paging terminates');
  }
  return { sizes, links, pets };
}

function nextCursor(res: TestResponse): string {
  const link = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  assert.ok(link, 'a next link');
  const cursor = new URL(link, 'http://x').searchParams.get('cursor');
  assert.ok(cursor);
  return cursor;
}

for (const backend of backends) {
  describe(`isolation between accounts (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    let a: Account;
    let b: Account;
    const petsOf: Record<'a' | 'b', Pet[]> = { a: [], b: [] };

    const create = async (account: Account, i: number): Promise<Pet> => {
      const status = STATUSES[i % STATUSES.length];
      const res = await app.request('POST', '/v1/pets', { key: account.key, body: { name: `pet ${i}`, categoryId: (i % 3) + 1, ...(status ? { status } : {}) } });
      assert.equal(res.status, 201, res.text);
      return res.body as Pet;
    };

    before(async () => {
      app = await getApp();
      a = await app.createAccount('A');
      b = await app.createAccount('B');
      // Interleaved, so every one of B's pets has A's pets on both sides in id order.
      for (let i = 0; i < 12; i++) {
        petsOf.a.push(await create(a, i));
        // Names of their own: both accounts number from 1, so ids alone cannot tell their pets apart.
        petsOf.b.push(await create(b, i + 1000));
        petsOf.a.push(await create(a, i + 100));
      }
    });

    test('when B asks for each of A\'s pet ids, then B gets its own pet with that id, or 404 not_found with the body and headers of a truly missing id', async () => {
      const bMax = Math.max(...petsOf.b.map((p) => p.id));
      assert.ok(petsOf.a.some((p) => p.id > bMax), 'A has ids B does not');
      for (const pet of petsOf.a) {
        const foreign = await app.request('GET', `/v1/pets/${pet.id}`, { key: b.key });
        if (pet.id <= bMax) {
          assert.equal(foreign.status, 200);
          assert.deepEqual(foreign.body, petsOf.b.find((p) => p.id === pet.id), 'B\'s own pet, never A\'s');
          assert.notEqual((foreign.body as Pet).name, pet.name);
          continue;
        }
        // A missing id with as many digits (then even Content-Length matches).
        const missingId = 10 ** String(pet.id).length - 1 > Math.max(...petsOf.a.map((p) => p.id)) ? 10 ** String(pet.id).length - 1 : 999_999_999_999;
        const missing = await app.request('GET', `/v1/pets/${missingId}`, { key: b.key });
        assert.equal(foreign.status, 404);
        assert.equal((foreign.body as ErrorBody).code, 'not_found');
        assert.deepEqual({ ...(foreign.body as ErrorBody), message: withoutId((foreign.body as ErrorBody).message, pet.id) }, {
          ...(missing.body as ErrorBody),
          message: withoutId((missing.body as ErrorBody).message, missingId),
        });
        assert.deepEqual(headerShape(foreign), headerShape(missing), 'the same headers');
        if (String(missingId).length === String(pet.id).length) {
          assert.equal(foreign.headers.get('content-length'), missing.headers.get('content-length'));
        }
        // And A still sees it.
        assert.deepEqual((await app.request('GET', `/v1/pets/${pet.id}`, { key: a.key })).body, pet);
      }
    });

    test('when B asks for A\'s pet with HEAD, then the same 404 as for a missing id', async () => {
      const pet = petsOf.a.at(-1)!;
      assert.ok(!petsOf.b.some((p) => p.id === pet.id), 'an id only A has');
      const foreign = await fetch(`${app.url}/v1/pets/${pet.id}`, { method: 'HEAD', headers: { authorization: `Bearer ${b.key}` } });
      const missing = await fetch(`${app.url}/v1/pets/999999999`, { method: 'HEAD', headers: { authorization: `Bearer ${b.key}` } });
      assert.equal(foreign.status, 404);
      assert.equal(missing.status, 404);
      assert.deepEqual(headerShape(foreign), headerShape(missing));
    });

    test('when B lists its pets, with or without a status filter and at any page size, then no pet of A appears and every pet of B appears exactly once', async () => {
      const aNames = new Set(petsOf.a.map((p) => p.name));
      for (const status of STATUSES) {
        for (const limit of [1, 2, 5, 100]) {
          const { pets } = await pageThrough(app, b.key, `/v1/pets?limit=${limit}${status ? `&status=${status}` : ''}`);
          assert.equal(pets.filter((p) => aNames.has(p.name)).length, 0, `no pet of A (status=${status}, limit=${limit})`);
          const expected = petsOf.b.filter((p) => !status || p.status === status);
          assert.deepEqual(pets, expected, `exactly B's pets in order (status=${status}, limit=${limit})`);
        }
      }
    });

    test('when A has many pets between and after B\'s, then B\'s pages (sizes, Link presence, content) are exactly those of an account alone', async () => {
      const alone = await app.createAccount('Alone');
      const crowded = await app.createAccount('Crowded');
      const noisy = await app.createAccount('Noisy');
      for (let i = 0; i < 5; i++) {
        await create(alone, i);
        await create(crowded, i);
        for (let j = 0; j < 6; j++) await create(noisy, i * 10 + j);
      }
      const strip = (pets: Pet[]) => pets.map(({ id: _id, ...rest }) => rest);
      for (const status of STATUSES) {
        // limit 5 equals the whole list: the look-ahead row must not come from another account.
        for (const limit of [1, 2, 4, 5, 6]) {
          const path = `/v1/pets?limit=${limit}${status ? `&status=${status}` : ''}`;
          const expected = await pageThrough(app, alone.key, path);
          const actual = await pageThrough(app, crowded.key, path);
          assert.deepEqual(actual.sizes, expected.sizes, `page sizes (${path})`);
          assert.deepEqual(actual.links, expected.links, `Link presence (${path})`);
          assert.deepEqual(strip(actual.pets), strip(expected.pets), `content (${path})`);
        }
      }
    });

    test('when A\'s cursor is presented with B\'s key, then 400 invalid_cursor, with or without a status filter, and B\'s own cursor still works', async () => {
      for (const status of STATUSES) {
        const query = `limit=1${status ? `&status=${status}` : ''}`;
        const first = await app.request('GET', `/v1/pets?${query}`, { key: a.key });
        const cursor = nextCursor(first);
        const refused = await app.request('GET', `/v1/pets?${query}&cursor=${cursor}`, { key: b.key });
        assert.equal(refused.status, 400, refused.text);
        assert.equal((refused.body as ErrorBody).code, 'invalid_cursor');
        assert.equal((await app.request('GET', `/v1/pets?${query}&cursor=${cursor}`, { key: a.key })).status, 200, 'A can use it');
        const own = nextCursor(await app.request('GET', `/v1/pets?${query}`, { key: b.key }));
        assert.equal((await app.request('GET', `/v1/pets?${query}&cursor=${own}`, { key: b.key })).status, 200, 'B can use its own');
      }
    });

    test('when B creates pets, even with an "accountId" field naming A, then A\'s pets and pages are unchanged', async () => {
      const before = await pageThrough(app, a.key, '/v1/pets?limit=7');
      const sneaky = await app.request('POST', '/v1/pets', { key: b.key, body: { name: 'Sneaky', categoryId: 1, accountId: a.accountId } });
      assert.equal(sneaky.status, 400);
      assert.match((sneaky.body as ErrorBody).message, /"accountId" is not allowed/);
      const created = await create(b, 999);
      const after = await pageThrough(app, a.key, '/v1/pets?limit=7');
      assert.deepEqual(after, before);
      // A may have a pet with the same number; it is A's own, never the one B created.
      const sameId = await app.request('GET', `/v1/pets/${created.id}`, { key: a.key });
      if (sameId.status === 200) assert.deepEqual(sameId.body, petsOf.a.find((p) => p.id === created.id));
      else assert.equal(sameId.status, 404);
    });

    test('when A and B use the same Idempotency-Key, then B gets its own new pet: no replay of A\'s pet and no 422 revealing the key was used', async (t) => {
      const doc = (await (await fetch(`${app.url}/v1/openapi.json`)).json()) as OpenApiDocument;
      const parameters = (doc.paths['/pets']?.post as unknown as { parameters?: Array<{ name: string; in: string }> }).parameters ?? [];
      if (!parameters.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')) {
        t.skip('the document declares no Idempotency-Key header');
        return;
      }
      const idem = `iso-${backend.name}-${Date.now()}`;
      const body = { name: 'Same body', categoryId: 3 };
      const first = await app.request('POST', '/v1/pets', { key: a.key, body, headers: { 'idempotency-key': idem } });
      assert.equal(first.status, 201);
      const other = await app.request('POST', '/v1/pets', { key: b.key, body, headers: { 'idempotency-key': idem } });
      assert.equal(other.status, 201, other.text);
      assert.notEqual((other.body as Pet).id, (first.body as Pet).id, 'a new pet for B');
      assert.equal(other.headers.get('idempotent-replayed'), null);
      const different = await app.request('POST', '/v1/pets', { key: b.key, body: { name: 'Different', categoryId: 4 }, headers: { 'idempotency-key': `${idem}-2` } });
      assert.equal(different.status, 201);
      const aDifferent = await app.request('POST', '/v1/pets', { key: a.key, body: { name: 'Other body', categoryId: 5 }, headers: { 'idempotency-key': `${idem}-2` } });
      assert.equal(aDifferent.status, 201, `A's use of a key B used is independent: ${aDifferent.text}`);
      const replay = await app.request('POST', '/v1/pets', { key: a.key, body, headers: { 'idempotency-key': idem } });
      assert.equal((replay.body as Pet).id, (first.body as Pet).id, 'A\'s own retry still replays');
    });

    /** An account with a second key and a pet, its first key used (and so cached) on every operation. */
    async function revocable(): Promise<{ account: Account; second: string; pet: Pet }> {
      const account = await app.createAccount('Revocable');
      const second = await app.services.apiKeys.create(account.accountId);
      const pet = (await app.request('POST', '/v1/pets', { key: account.key, body: { name: 'Kept', categoryId: 1 } })).body as Pet;
      for (const path of ['/v1/pets', `/v1/pets/${pet.id}`]) assert.equal((await app.request('GET', path, { key: account.key })).status, 200);
      return { account, second: second.key, pet };
    }

    async function assertRefusedEverywhere(account: Account, pet: Pet, second: string): Promise<void> {
      for (const [method, path, body] of [
        ['GET', '/v1/pets', undefined],
        ['POST', '/v1/pets', { name: 'After revoke', categoryId: 1 }],
        ['GET', `/v1/pets/${pet.id}`, undefined],
      ] as const) {
        const res = await app.request(method, path, { key: account.key, ...(body ? { body } : {}) });
        assert.equal(res.status, 401, `${method} ${path}: ${res.text}`);
        assert.match((res.body as ErrorBody).message, /revoked/);
        assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      }
      const list = await app.request('GET', '/v1/pets', { key: second });
      assert.equal(list.status, 200, 'the account\'s other key still works');
      assert.deepEqual((list.body as Pet[]).map((p) => p.name), ['Kept'], 'nothing was created with the revoked key');
    }

    /** A second instance: its own store (connection or pool) and services on the same database. */
    async function otherInstance(t: { after(fn: () => unknown): void }) {
      const store = await createStore(loadConfig({ PETSTORE_DATABASE_URL: app.config.database.url }));
      t.after(() => store.close());
      return createServices({ store, clock: { now: () => Date.now() }, environment: app.config.environment });
    }

    test('when a key is revoked through this instance, then every operation refuses it on the very next request, and the account\'s other key still works', async () => {
      const { account, second, pet } = await revocable();
      await app.services.apiKeys.revoke(account.keyId);
      await assertRefusedEverywhere(account, pet, second);
    });

    test(
      'when a key is revoked by another instance (its own store connection), then every operation refuses it on the very next request',
      {
        // PostgreSQL instances remember verified keys and hear of revocations by LISTEN/NOTIFY, a
        // moment after the commit: the promise there is one second (the next test).
        skip: backend.name === 'postgres' ? 'PostgreSQL: pushed by NOTIFY, refused within 1 s (next test)' : false,
      },
      async (t) => {
        const { account, second, pet } = await revocable();
        await (await otherInstance(t)).apiKeys.revoke(account.keyId);
        await assertRefusedEverywhere(account, pet, second);
      },
    );

    test('when a key is revoked by another instance, then every operation refuses it one second later at the latest', {
      skip: backend.name === 'sqlite' ? 'on SQLite the very next request already refuses it (data_version)' : false,
    }, async (t) => {
      const { account, second, pet } = await revocable();
      await (await otherInstance(t)).apiKeys.revoke(account.keyId);
      await sleep(1100);
      await assertRefusedEverywhere(account, pet, second);
    });

    /** The gap between two of `watcher`'s ids when `busy` creates `othersBetween` pets in between. */
    async function idGap(watcher: Account, busy: Account, othersBetween: number): Promise<number> {
      const first = await create(watcher, 1);
      for (let i = 0; i < othersBetween; i++) await create(busy, i);
      const second = await create(watcher, 2);
      return second.id - first.id;
    }

    test('when A creates pets between two of B\'s creates, then B\'s ids do not reveal it (the gap is the same as when A is idle)', async () => {
      const quiet = await app.createAccount('Quiet');
      const busy = await app.createAccount('Busy');
      assert.equal(await idGap(quiet, busy, 10), await idGap(quiet, busy, 0));
      assert.equal(await idGap(quiet, busy, 0), 1);
    });

    test('when B creates pets between two of A\'s creates, then A\'s ids do not reveal it either (the mirror case)', async () => {
      const watcher = await app.createAccount('Watcher');
      const other = await app.createAccount('Other');
      // Both directions on the same pair: whoever creates, the other's numbering is untouched.
      assert.equal(await idGap(other, watcher, 7), 1);
      assert.equal(await idGap(watcher, other, 7), 1);
    });

    test('when a new account creates its first pet in a store full of other accounts\' pets, then its id is 1: nothing tells how big the store is', async () => {
      assert.ok(petsOf.a.length + petsOf.b.length > 30, 'the store holds other pets');
      const newcomer = await app.createAccount('Newcomer');
      assert.deepEqual([(await create(newcomer, 0)).id, (await create(newcomer, 1)).id], [1, 2]);
    });

    test('when two accounts hold the same pets and one of them also has neighbours, then pages, ids, Link cursors\' positions are identical: paging reveals nothing about others', async () => {
      const alone = await app.createAccount('Alone2');
      const crowded = await app.createAccount('Crowded2');
      const noisy = await app.createAccount('Noisy2');
      for (let i = 0; i < 6; i++) {
        await create(noisy, i);
        await create(alone, i);
        await create(noisy, i + 50);
        await create(crowded, i);
      }
      // A cursor is base64url of (version, status, last id) and a MAC bound to the account:
      // the MAC differs by account; the position part must not.
      const position = (link: string | null) => {
        const cursor = new URL(/<([^>]+)>/.exec(link ?? '')?.[1] ?? '/', 'http://x').searchParams.get('cursor');
        return cursor ? Buffer.from(cursor, 'base64url').subarray(0, 10).toString('hex') : null;
      };
      for (const status of STATUSES) {
        for (const limit of [1, 2, 4]) {
          let aloneNext: string | null = `/v1/pets?limit=${limit}${status ? `&status=${status}` : ''}`;
          let crowdedNext: string | null = aloneNext;
          while (aloneNext || crowdedNext) {
            assert.ok(aloneNext && crowdedNext, 'the same number of pages');
            const x: TestResponse = await app.request('GET', aloneNext, { key: alone.key });
            const y: TestResponse = await app.request('GET', crowdedNext, { key: crowded.key });
            assert.deepEqual(y.body, x.body, `same pets, same ids (${aloneNext})`);
            assert.equal(position(y.headers.get('link')), position(x.headers.get('link')), 'same cursor position');
            [aloneNext, crowdedNext] = [x, y].map((r) => /<([^>]+)>; rel="next"/.exec(r.headers.get('link') ?? '')?.[1] ?? null) as [string | null, string | null];
          }
        }
      }
    });

    test(
      'when a cursor\'s last character is changed in its unused low bits, then 400 invalid_cursor, as for any edited cursor',
      async () => {
        const cursor = nextCursor(await app.request('GET', '/v1/pets?limit=1', { key: a.key }));
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
        const last = alphabet.indexOf(cursor.at(-1)!);
        const edited = cursor.slice(0, -1) + alphabet[last ^ 1];
        assert.notEqual(edited, cursor);
        const res = await app.request('GET', `/v1/pets?limit=1&cursor=${edited}`, { key: a.key });
        assert.equal(res.status, 400, res.text);
        assert.equal((res.body as ErrorBody).code, 'invalid_cursor');
      },
    );
  });
}
