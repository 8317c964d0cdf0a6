import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { backends } from '../helpers/backends.js';
import { startApp, type TestApp } from '../helpers/app.js';

type Pet = { id: number; name: string; categoryId: number; status?: string };

function nextLink(res: { headers: Headers }): string | undefined {
  const link = res.headers.get('link');
  if (!link) return undefined;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  assert.ok(match, `Link header has the form <…>; rel="next": ${link}`);
  return match[1];
}

async function walk(app: TestApp, key: string, first: string): Promise<{ pets: Pet[]; pages: number }> {
  const pets: Pet[] = [];
  let path: string | undefined = first;
  let pages = 0;
  while (path) {
    const res = await app.request('GET', path, { key });
    assert.equal(res.status, 200);
    pets.push(...(res.body as Pet[]));
    pages += 1;
    path = nextLink(res);
  }
  return { pets, pages };
}

for (const backend of backends) {
  describe(`pets over HTTP (${backend.name})`, () => {
    test('when a pet is created, then 201 returns it with a positive id and its Location (with or without an Idempotency-Key, replayed too), and GET there returns the same pet', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const created = await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 7, status: 'available' } });
      assert.equal(created.status, 201);
      const pet = created.body as Pet;
      assert.ok(Number.isInteger(pet.id) && pet.id >= 1);
      assert.deepEqual(pet, { id: pet.id, name: 'Rex', categoryId: 7, status: 'available' });
      assert.equal(created.headers.get('location'), `/v1/pets/${pet.id}`);
      for (let attempt = 0; attempt < 2; attempt++) {
        const keyed = await app.request('POST', '/v1/pets', { key, body: { name: 'Keyed', categoryId: 7 }, headers: { 'idempotency-key': 'location-test' } });
        assert.equal(keyed.status, 201);
        assert.equal(keyed.headers.get('idempotent-replayed'), attempt === 0 ? null : 'true');
        assert.equal(keyed.headers.get('location'), `/v1/pets/${(keyed.body as Pet).id}`);
      }
      const fetched = await app.request('GET', created.headers.get('location')!, { key });
      assert.equal(fetched.status, 200);
      assert.deepEqual(fetched.body, pet);
      assert.match(fetched.headers.get('content-type') ?? '', /^application\/json/);
    });

    test('when a pet is created without status, then status is omitted (not null) everywhere', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const created = await app.request('POST', '/v1/pets', { key, body: { name: 'Tom', categoryId: 1 } });
      assert.equal(created.status, 201);
      assert.equal(created.text.includes('status'), false);
      const id = (created.body as Pet).id;
      assert.equal((await app.request('GET', `/v1/pets/${id}`, { key })).text.includes('status'), false);
      assert.equal((await app.request('GET', '/v1/pets', { key })).text.includes('status'), false);
    });

    test('when a name has emoji, accents and CJK, then it round-trips exactly', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const name = 'Zoë 🐶 ポチ — Ωmega 𝔘';
      const created = await app.request('POST', '/v1/pets', { key, body: { name, categoryId: 3 } });
      assert.equal(created.status, 201);
      assert.equal((created.body as Pet).name, name);
      const fetched = await app.request('GET', `/v1/pets/${(created.body as Pet).id}`, { key });
      assert.equal((fetched.body as Pet).name, name);
    });

    test('when names are at the 255-character limit (counted in code points), then they are accepted', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      for (const name of ['a'.repeat(255), '🐶'.repeat(255)]) {
        const res = await app.request('POST', '/v1/pets', { key, body: { name, categoryId: 1 } });
        assert.equal(res.status, 201);
        assert.equal((res.body as Pet).name, name);
      }
    });

    test('when categoryId is the largest exact integer, then it round-trips', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const res = await app.request('POST', '/v1/pets', { key, body: { name: 'Big', categoryId: Number.MAX_SAFE_INTEGER } });
      assert.equal(res.status, 201);
      assert.equal((res.body as Pet).categoryId, Number.MAX_SAFE_INTEGER);
    });

    test('when listing with no parameters, then at most 20 pets come back in ascending id order', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      for (let i = 0; i < 25; i++) await app.request('POST', '/v1/pets', { key, body: { name: `p${i}`, categoryId: 1 } });
      const res = await app.request('GET', '/v1/pets', { key });
      const pets = res.body as Pet[];
      assert.equal(pets.length, 20);
      assert.deepEqual(pets.map((p) => p.id), [...pets.map((p) => p.id)].sort((a, b) => a - b));
      assert.equal(nextLink(res), `/v1/pets?limit=20&cursor=${new URL(nextLink(res)!, app.url).searchParams.get('cursor')}`);
    });

    test('when the account has no pets, then the list is an empty array with no Link', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const res = await app.request('GET', '/v1/pets', { key });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, []);
      assert.equal(res.headers.get('link'), null);
    });

    test('when filtering by status, then only pets with that status come back and Link keeps the filter', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const statuses = ['available', 'pending', 'sold', undefined];
      for (let i = 0; i < 24; i++) {
        const status = statuses[i % 4];
        await app.request('POST', '/v1/pets', { key, body: { name: `p${i}`, categoryId: 1, ...(status ? { status } : {}) } });
      }
      const first = await app.request('GET', '/v1/pets?status=sold&limit=4', { key });
      assert.ok((first.body as Pet[]).every((p) => p.status === 'sold'));
      const next = nextLink(first)!;
      assert.match(next, /^\/v1\/pets\?limit=4&status=sold&cursor=[A-Za-z0-9_-]+$/);
      const { pets } = await walk(app, key, '/v1/pets?status=sold&limit=4');
      assert.equal(pets.length, 6);
      assert.ok(pets.every((p) => p.status === 'sold'));
    });

    test('when walking all pages, then every pet appears exactly once and the last page has no Link', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      for (let i = 0; i < 23; i++) await app.request('POST', '/v1/pets', { key, body: { name: `p${i}`, categoryId: i + 1 } });
      const { pets, pages } = await walk(app, key, '/v1/pets?limit=5');
      assert.equal(pages, 5);
      assert.equal(pets.length, 23);
      assert.equal(new Set(pets.map((p) => p.id)).size, 23);
    });

    test('when pets are created while walking, then every pet that existed at the start appears exactly once', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      const before: number[] = [];
      for (let i = 0; i < 30; i++) {
        before.push(((await app.request('POST', '/v1/pets', { key, body: { name: `p${i}`, categoryId: 1 } })).body as Pet).id);
      }
      const seen: number[] = [];
      let path: string | undefined = '/v1/pets?limit=4';
      let n = 0;
      while (path) {
        const [res] = await Promise.all([
          app.request('GET', path, { key }),
          app.request('POST', '/v1/pets', { key, body: { name: `during${n++}`, categoryId: 2 } }),
        ]);
        seen.push(...(res.body as Pet[]).map((p) => p.id));
        path = nextLink(res);
      }
      assert.equal(new Set(seen).size, seen.length, 'no pet appears twice');
      for (const id of before) assert.ok(seen.includes(id), `pet ${id} was listed`);
    });

    test('when another account holds a pet, then its id answers 404 exactly like a missing id, and lists never show it', async (t) => {
      const app = await startApp(t, { backend });
      const a = await app.createAccount('A');
      const b = await app.createAccount('B');
      const pet = (await app.request('POST', '/v1/pets', { key: a.key, body: { name: 'Secret', categoryId: 1 } })).body as Pet;
      const theirs = await app.request('GET', `/v1/pets/${pet.id}`, { key: b.key });
      const missing = await app.request('GET', `/v1/pets/${pet.id + 1000}`, { key: b.key });
      assert.equal(theirs.status, 404);
      assert.equal((theirs.body as { code: string }).code, 'not_found');
      assert.equal(
        (theirs.body as { message: string }).message.replace(String(pet.id), 'N'),
        (missing.body as { message: string }).message.replace(String(pet.id + 1000), 'N'),
      );
      assert.deepEqual((await app.request('GET', '/v1/pets', { key: b.key })).body, []);
      assert.equal(((await app.request('GET', '/v1/pets', { key: a.key })).body as Pet[]).length, 1);
    });

    test("when a cursor from one account is used by another, then 400 invalid_cursor", async (t) => {
      const app = await startApp(t, { backend });
      const a = await app.createAccount('A');
      const b = await app.createAccount('B');
      for (let i = 0; i < 3; i++) await app.request('POST', '/v1/pets', { key: a.key, body: { name: `p${i}`, categoryId: 1 } });
      const next = nextLink(await app.request('GET', '/v1/pets?limit=1', { key: a.key }))!;
      const res = await app.request('GET', next, { key: b.key });
      assert.equal(res.status, 400);
      assert.equal((res.body as { code: string }).code, 'invalid_cursor');
    });

    test('when the cursor is tampered with, truncated, or used with another status filter, then 400 invalid_cursor', async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      for (let i = 0; i < 3; i++) await app.request('POST', '/v1/pets', { key, body: { name: `p${i}`, categoryId: 1, status: 'sold' } });
      const cursor = new URL(nextLink(await app.request('GET', '/v1/pets?limit=1', { key }))!, app.url).searchParams.get('cursor')!;
      const flipped = cursor.slice(0, 5) + (cursor[5] === 'A' ? 'B' : 'A') + cursor.slice(6);
      for (const bad of [flipped, cursor.slice(0, -2), `${cursor}AA`, 'abc', '!!!!', 'x'.repeat(512)]) {
        const res = await app.request('GET', `/v1/pets?limit=1&cursor=${encodeURIComponent(bad)}`, { key });
        assert.equal(res.status, 400, bad);
        assert.equal((res.body as { code: string }).code, 'invalid_cursor', bad);
      }
      const mismatch = await app.request('GET', `/v1/pets?limit=1&status=sold&cursor=${cursor}`, { key });
      assert.equal(mismatch.status, 400);
      assert.equal((mismatch.body as { code: string }).code, 'invalid_cursor');
      const tooLong = await app.request('GET', `/v1/pets?cursor=${'x'.repeat(513)}`, { key });
      assert.equal(tooLong.status, 400);
      assert.equal((tooLong.body as { code: string }).code, 'invalid_request');
    });

    test('when a server restarts on the same store, then cursors issued before still work', async (t) => {
      const first = await startApp(t, { backend });
      const { key } = await first.createAccount();
      for (let i = 0; i < 3; i++) await first.request('POST', '/v1/pets', { key, body: { name: `p${i}`, categoryId: 1 } });
      const next = nextLink(await first.request('GET', '/v1/pets?limit=2', { key }))!;
      const second = await startApp(t, { backend, databaseUrl: first.config.database.url });
      const res = await second.request('GET', next, { key });
      assert.equal(res.status, 200);
      assert.equal((res.body as Pet[]).length, 1);
    });
  });
}
