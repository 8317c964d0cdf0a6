// The Store contract: every backend must behave the same through the interface.
// Each test gets a fresh, real database (no mocks); PostgreSQL runs only when
// PETSTORE_TEST_POSTGRES_URL is set (see test/helpers/backends.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { ApiError, InvalidTransitionError, NotFoundError, PetNotAvailableError, StoreUnavailableError } from '../src/errors.js';
import { createServices } from '../src/services/index.js';
import type { NewPet, Order, Pet, PetStatus } from '../src/schemas/index.js';
import { createStore } from '../src/store/index.js';
import type { Account, ApiKeyRecord, Store } from '../src/store/types.js';
import { type Backend, type BackendDatabase, backends, postgresAdminUrl, withPostgresAdmin } from './helpers/backends.js';
import { createPet } from './helpers/store.js';
import { storeConfig } from './helpers/store-config.js';
import { silentServer } from './helpers/silent-server.js';
import { loadConfig } from '../src/config.js';

const POOL_MAX = 4;
const T0 = '2024-05-01T12:00:00.000Z';

async function openStore(t: TestContext, backend: Backend, url?: string): Promise<{ store: Store; database: BackendDatabase }> {
  // A given url belongs to another store of the same test, which drops it.
  const database = url ? { url, drop: async () => {} } : await backend.createDatabase();
  const store = await createStore(storeConfig(database.url, { pgPoolMax: POOL_MAX })).catch(async (error: unknown) => {
    await database.drop();
    throw error;
  });
  t.after(async () => {
    await store.close();
    await database.drop();
  });
  return { store, database };
}

async function migratedStore(t: TestContext, backend: Backend): Promise<Store> {
  const { store } = await openStore(t, backend);
  await store.migrate();
  return store;
}

/** A store for `databaseUrl` but reached at 127.0.0.1:port (a proxy, or nothing listening). */
async function storeThroughPort(t: TestContext, backend: Backend, databaseUrl: string, port: number): Promise<Store> {
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const { store } = await openStore(t, backend, url.toString());
  return store;
}

const uid = () => randomBytes(6).toString('hex');

function newAccount(overrides: Partial<Account> = {}): Account {
  return { id: `acct_${uid()}`, name: 'Test account', createdAt: T0, ...overrides };
}

function newKey(accountId: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id: `key_${uid()}`,
    accountId,
    environment: 'production',
    keyHash: randomBytes(32).toString('hex'),
    hint: uid().slice(0, 4),
    createdAt: T0,
    revokedAt: null,
    name: null,
    scopes: null,
    expiresAt: null,
    lastUsedAt: null,
    ...overrides,
  };
}

async function withAccount(store: Store, overrides: Partial<Account> = {}): Promise<Account> {
  return store.accounts.create(newAccount(overrides));
}

/** A migrated store and `count` new accounts in it: the setup most tests here start from. */
async function storeWithAccounts(t: TestContext, backend: Backend, count: 1): Promise<[Store, Account]>;
async function storeWithAccounts(t: TestContext, backend: Backend, count: 2): Promise<[Store, Account, Account]>;
async function storeWithAccounts(t: TestContext, backend: Backend, count: number): Promise<[Store, ...Account[]]> {
  const store = await migratedStore(t, backend);
  const accounts: Account[] = [];
  for (let i = 0; i < count; i++) accounts.push(await withAccount(store));
  return [store, ...accounts];
}

const isUnavailable = (error: unknown) => error instanceof StoreUnavailableError;
/** Rejected, but by the database (a constraint), not reported as an outage. */
const isConstraintError = (error: unknown) => error instanceof Error && !(error instanceof StoreUnavailableError);

/**
 * Runs `call` until it succeeds, allowing only StoreUnavailableError before that. Idle clients
 * whose connection died may not have noticed yet; each failed call discards one, so success
 * must come within POOL_MAX + 1 attempts.
 */
async function afterDeadClients<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; attempt < POOL_MAX; attempt++) {
    try {
      return await call();
    } catch (error) {
      assert.ok(isUnavailable(error), `unexpected error: ${String(error)}`);
    }
  }
  return call();
}

/** The order service on `store` (the rules are the service's), its clock at `clock.at`. */
async function orderService(store: Store, clock = { at: T0 }) {
  return (await createServices({ store, clock: { now: () => Date.parse(clock.at) }, environment: 'production' })).orders;
}

/** Refused with exactly `expected`: its class, code and message. */
const refusal = (expected: ApiError) => (error: unknown) =>
  error instanceof ApiError && error.constructor === expected.constructor && error.code === expected.code && error.message === expected.message;
const petNotFound = (id: number) => new NotFoundError(`No pet with id ${id}. List your pets with GET /v1/pets.`);
const orderNotFound = (id: number) => new NotFoundError(`No order with id ${id}. List your orders with GET /v1/store/orders.`);

/** Walks every page of listPets and returns the pets in the order seen. */
async function walk(store: Store, accountId: string, pageSize: number, status?: PetStatus): Promise<Pet[]> {
  const seen: Pet[] = [];
  let afterId = 0;
  for (;;) {
    const page = await store.pets.list({ accountId, limit: pageSize, status, afterId });
    assert.ok(page.length <= pageSize, `page of ${page.length} exceeds limit ${pageSize}`);
    seen.push(...page);
    if (page.length < pageSize) return seen;
    afterId = page[page.length - 1]!.id;
  }
}

for (const backend of backends) {
  describe(backend.name, () => {
    describe('migrations', () => {
      it('when the database is empty, then pendingMigrations lists every version in order without applying any', async (t) => {
        const { store } = await openStore(t, backend);
        const pending = await store.pendingMigrations();
        assert.ok(pending.length > 0);
        assert.ok(pending.every((v, i) => Number.isInteger(v) && v > 0 && (i === 0 || v > pending[i - 1]!)), `not ascending: ${pending}`);
        assert.deepEqual(await store.pendingMigrations(), pending);
        // Still all pending: listing applied nothing.
        assert.deepEqual(await store.migrate(), pending);
      });

      it('when migrate runs on an empty database, then it applies every version and none stays pending', async (t) => {
        const { store } = await openStore(t, backend);
        const pending = await store.pendingMigrations();
        assert.deepEqual(await store.migrate(), pending);
        assert.deepEqual(await store.pendingMigrations(), []);
        const account = await withAccount(store);
        assert.deepEqual(await store.accounts.get(account.id), account);
      });

      it('when migrate runs again, from the same or another store, then it applies nothing and keeps the data', async (t) => {
        const { store, database } = await openStore(t, backend);
        await store.migrate();
        const account = await withAccount(store);
        assert.deepEqual(await store.migrate(), []);
        const { store: other } = await openStore(t, backend, database.url);
        assert.deepEqual(await other.pendingMigrations(), []);
        assert.deepEqual(await other.migrate(), []);
        assert.deepEqual(await other.accounts.get(account.id), account);
      });

      it('when two stores migrate the same fresh database at once, then both succeed and each version is applied once', async (t) => {
        const { store: first, database } = await openStore(t, backend);
        const { store: second } = await openStore(t, backend, database.url);
        const expected = await first.pendingMigrations();
        const [a, b] = await Promise.all([first.migrate(), second.migrate()]);
        assert.deepEqual([...a, ...b].sort((x, y) => x - y), expected);
        assert.deepEqual(await first.pendingMigrations(), []);
        assert.deepEqual(await second.pendingMigrations(), []);
      });
    });

    describe('ping and close', () => {
      it('when the database is reachable, then ping resolves', async (t) => {
        const store = await migratedStore(t, backend);
        await store.ping();
      });

      it('when close is called twice, then both calls resolve', async (t) => {
        const { store } = await openStore(t, backend);
        await store.ping();
        await store.close();
        await store.close();
      });
    });

    describe('accounts', () => {
      it('when an account is created, then getAccount returns it exactly', async (t) => {
        const store = await migratedStore(t, backend);
        const account = newAccount({ name: 'Zoë’s Pets 🐾 — 東京' });
        assert.deepEqual(await store.accounts.create(account), account);
        assert.deepEqual(await store.accounts.get(account.id), account);
      });

      it('when the account id is unknown, then getAccount returns undefined', async (t) => {
        const store = await migratedStore(t, backend);
        await withAccount(store);
        assert.equal(await store.accounts.get('acct_unknown'), undefined);
      });

      it('when timestamps are stored, then they come back as the same ISO strings', async (t) => {
        const store = await migratedStore(t, backend);
        const times = ['0001-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z', '2024-02-29T23:59:59.999Z', '9999-12-31T23:59:59.999Z'];
        for (const createdAt of times) {
          const account = await withAccount(store, { createdAt });
          assert.equal((await store.accounts.get(account.id))?.createdAt, createdAt);
          const key = await store.apiKeys.create(newKey(account.id, { createdAt, revokedAt: createdAt }));
          assert.deepEqual(await store.apiKeys.findByHash(key.keyHash), key);
        }
      });
    });

    describe('API keys', () => {
      it('when a key is created, then findApiKeyByHash returns the same record', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        const active = newKey(account.id, { environment: 'staging' });
        const revoked = newKey(account.id, { revokedAt: '2024-05-02T00:00:00.123Z' });
        assert.deepEqual(await store.apiKeys.create(active), active);
        assert.deepEqual(await store.apiKeys.create(revoked), revoked);
        assert.deepEqual(await store.apiKeys.findByHash(active.keyHash), active);
        assert.deepEqual(await store.apiKeys.findByHash(revoked.keyHash), revoked);
      });

      it('when the hash is unknown, then findApiKeyByHash returns undefined', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        await store.apiKeys.create(newKey(account.id));
        assert.equal(await store.apiKeys.findByHash('0'.repeat(64)), undefined);
      });

      it('when an account has several keys, then listApiKeys returns only its keys by createdAt then id (byte order)', async (t) => {
        const [store, account, other] = await storeWithAccounts(t, backend, 2);
        const t1 = '2024-05-01T00:00:00.000Z';
        const t2 = '2024-05-01T00:00:00.001Z';
        const t3 = '2024-06-01T00:00:00.000Z';
        // Inserted out of order; ties on createdAt sort by id in byte order ('A' < 'a' < 'z').
        const keys = [
          newKey(account.id, { id: 'key_b', createdAt: t2 }),
          newKey(account.id, { id: 'key_z', createdAt: t1 }),
          newKey(other.id, { id: 'key_0', createdAt: t1 }),
          newKey(account.id, { id: 'key_a', createdAt: t1, revokedAt: t3 }),
          newKey(account.id, { id: 'key_0x', createdAt: t3 }),
          newKey(account.id, { id: 'key_A', createdAt: t1 }),
        ];
        for (const key of keys) await store.apiKeys.create(key);
        const listed = await store.apiKeys.list(account.id);
        assert.deepEqual(listed.map((k) => k.id), ['key_A', 'key_a', 'key_z', 'key_b', 'key_0x']);
        assert.deepEqual(listed, ['key_A', 'key_a', 'key_z', 'key_b', 'key_0x'].map((id) => keys.find((k) => k.id === id)));
        assert.deepEqual(await store.apiKeys.list('acct_without_keys'), []);
      });

      it('when a key is revoked twice, then it keeps the first revocation time', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        const key = await store.apiKeys.create(newKey(account.id));
        const first = '2024-05-02T10:00:00.000Z';
        const revoked = { ...key, revokedAt: first };
        assert.deepEqual(await store.apiKeys.revoke(key.id, first), revoked);
        assert.deepEqual(await store.apiKeys.revoke(key.id, '2024-05-03T10:00:00.000Z'), revoked);
        assert.deepEqual(await store.apiKeys.findByHash(key.keyHash), revoked);
        assert.deepEqual(await store.apiKeys.list(account.id), [revoked]);
      });

      it('when the key id is unknown, then revokeApiKey returns undefined', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        const key = await store.apiKeys.create(newKey(account.id));
        assert.equal(await store.apiKeys.revoke('key_unknown', T0), undefined);
        assert.deepEqual(await store.apiKeys.findByHash(key.keyHash), key);
      });

      it('when a key has an environment outside the enum, then the store rejects it', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        const bad = { ...newKey(account.id), environment: 'development' } as unknown as ApiKeyRecord;
        await assert.rejects(store.apiKeys.create(bad), isConstraintError);
        assert.deepEqual(await store.apiKeys.list(account.id), []);
      });
    });

    describe('pets', () => {
      it('when two accounts create pets in turn, then each account numbers its own from 1, in creation order', async (t) => {
        const [store, a, b] = await storeWithAccounts(t, backend, 2);
        const ids: Record<string, number[]> = { a: [], b: [] };
        for (let i = 0; i < 7; i++) {
          const owner = i % 3 === 2 ? 'b' : 'a';
          ids[owner]!.push((await createPet(store, owner === 'a' ? a.id : b.id, { name: `Pet ${i}`, categoryId: 1 }, T0)).id);
        }
        assert.deepEqual(ids, { a: [1, 2, 3, 4, 5], b: [1, 2] });
        // Both accounts have a pet 1; each sees its own.
        assert.equal((await store.pets.get(a.id, 1))?.name, 'Pet 0');
        assert.equal((await store.pets.get(b.id, 1))?.name, 'Pet 2');
      });

      it('when many creates for several accounts run at once, then each account\'s ids are 1…n in call order, unique, with no gaps', async (t) => {
        const [store, a, b] = await storeWithAccounts(t, backend, 2);
        const c = await withAccount(store);
        const owners = Array.from({ length: 90 }, (_, i) => [a, b, c][i % 3]!.id);
        const created = await Promise.all(owners.map((owner, i) => createPet(store, owner, { name: `P${i}`, categoryId: 1 }, T0)));
        for (const account of [a, b, c]) {
          const mine = created.filter((_, i) => owners[i] === account.id).map((p) => p.id);
          if (backend.name === 'sqlite') assert.deepEqual(mine, Array.from({ length: 30 }, (_, i) => i + 1), 'one queue: ids follow the calls');
          else assert.deepEqual([...mine].sort((x, y) => x - y), Array.from({ length: 30 }, (_, i) => i + 1));
          assert.deepEqual((await store.pets.list({ accountId: account.id, limit: 100 })).map((p) => p.id), [...mine].sort((x, y) => x - y));
        }
      });

      it('when two stores (connections or processes) create pets for one account at once, then every id is unique and each store sees ascending ids', async (t) => {
        const { store, database } = await openStore(t, backend);
        await store.migrate();
        const { store: other } = await openStore(t, backend, database.url);
        const account = await withAccount(store);
        const results = await Promise.all(
          Array.from({ length: 60 }, (_, i) => createPet(i % 2 ? other : store, account.id, { name: `P${i}`, categoryId: 1 }, T0)),
        );
        const ids = results.map((p) => p.id);
        assert.equal(new Set(ids).size, 60, 'unique');
        assert.deepEqual([...ids].sort((x, y) => x - y), Array.from({ length: 60 }, (_, i) => i + 1));
        const next = await createPet(other, account.id, { name: 'After', categoryId: 1 }, T0);
        assert.equal(next.id, 61);
      });

      it('when a create fails, then no id is ever handed out twice: later ids are above every id returned before', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        const first = await createPet(store, account.id, { name: 'One', categoryId: 1 }, T0);
        const bad = { name: 'Bad', categoryId: 1, status: 'lost' } as unknown as NewPet;
        const outcomes = await Promise.allSettled([
          createPet(store, account.id, { name: 'Two', categoryId: 1 }, T0),
          createPet(store, account.id, bad, T0),
          createPet(store, account.id, { name: 'Three', categoryId: 1 }, T0),
        ]);
        assert.equal(outcomes[1]!.status, 'rejected');
        const [two, three] = [outcomes[0], outcomes[2]].map((o) => (o!.status === 'fulfilled' ? o.value : assert.fail(String(o))));
        const after = await createPet(store, account.id, { name: 'Four', categoryId: 1 }, T0);
        const ids = [first.id, two!.id, three!.id, after.id];
        assert.equal(new Set(ids).size, 4);
        assert.ok(after.id > Math.max(first.id, two!.id, three!.id), `ids ${ids.join(', ')}`);
        assert.deepEqual((await store.pets.list({ accountId: account.id, limit: 10 })).map((p) => p.name), ['One', ...[two!, three!].sort((x, y) => x.id - y.id).map((p) => p.name), 'Four']);
      });

      it('when a pet has no status, then the status property is absent from every result', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        const created = await createPet(store, account.id, { name: 'Rex', categoryId: 3 }, T0);
        assert.deepEqual(created, { id: created.id, name: 'Rex', categoryId: 3 });
        assert.equal('status' in created, false);
        const fetched = await store.pets.get(account.id, created.id);
        assert.ok(fetched);
        assert.equal('status' in fetched, false);
        const [listed] = await store.pets.list({ accountId: account.id, limit: 10 });
        assert.ok(listed);
        assert.equal('status' in listed, false);
        assert.deepEqual(fetched, created);
        assert.deepEqual(listed, created);
      });

      it('when a pet has a status, then createPet, getPet and listPets return it', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        for (const status of ['available', 'pending', 'sold'] as const) {
          const created = await createPet(store, account.id, { name: status, categoryId: 2, status }, T0);
          assert.deepEqual(created, { id: created.id, name: status, categoryId: 2, status });
          assert.deepEqual(await store.pets.get(account.id, created.id), created);
          assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 1, afterId: created.id - 1 }), [created]);
        }
      });

      it('when a name uses Unicode and a category id is the largest safe integer, then both round-trip exactly', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        const names = [
          '👩‍👩‍👧‍👦 family',
          'Ærøskøbing',
          '東京のネコ',
          'שלום',
          '\u00e9', // precomposed é
          'e\u0301', // e + combining acute: must stay distinct from the one above
          '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
          'ＦＵＬＬＷＩＤＴＨ',
          '🐈'.repeat(127),
          "O'Brien; DROP TABLE pets; --",
        ];
        const created: Pet[] = [];
        for (const name of names) created.push(await createPet(store, account.id, { name, categoryId: Number.MAX_SAFE_INTEGER }, T0));
        for (const [i, pet] of created.entries()) {
          assert.equal(pet.name, names[i]);
          const fetched = await store.pets.get(account.id, pet.id);
          assert.ok(fetched);
          assert.equal(fetched.name, names[i]);
          assert.equal(Buffer.compare(Buffer.from(fetched.name), Buffer.from(names[i]!)), 0);
          assert.equal(fetched.categoryId, Number.MAX_SAFE_INTEGER);
        }
        assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 100 }), created);
      });

      it("when an account asks for another account's pet or an unknown id, then getPet returns undefined", async (t) => {
        const [store, owner, stranger] = await storeWithAccounts(t, backend, 2);
        const pet = await createPet(store, owner.id, { name: 'Mine', categoryId: 1 }, T0);
        assert.deepEqual(await store.pets.get(owner.id, pet.id), pet);
        assert.equal(await store.pets.get(stranger.id, pet.id), undefined);
        assert.equal(await store.pets.get(owner.id, pet.id + 1), undefined);
        assert.equal(await store.pets.get(owner.id, 0), undefined);
        assert.equal(await store.pets.get(owner.id, pet.id + 0.5), undefined);
      });

      it('when pets are listed, then they come in ascending id order, at most limit, for that account only', async (t) => {
        const [store, a, b] = await storeWithAccounts(t, backend, 2);
        const mine: Pet[] = [];
        for (let i = 0; i < 6; i++) {
          mine.push(await createPet(store, a.id, { name: `A${i}`, categoryId: i + 1 }, T0));
          await createPet(store, b.id, { name: `B${i}`, categoryId: i + 1 }, T0);
        }
        assert.deepEqual(await store.pets.list({ accountId: a.id, limit: 100 }), mine);
        assert.deepEqual(await store.pets.list({ accountId: a.id, limit: 4 }), mine.slice(0, 4));
        assert.deepEqual(await store.pets.list({ accountId: a.id, limit: 0 }), []);
        assert.deepEqual(await store.pets.list({ accountId: 'acct_nobody', limit: 10 }), []);
      });

      it('when a status filter is given, then listPets returns only pets with that status, in id order', async (t) => {
        const [store, account, other] = await storeWithAccounts(t, backend, 2);
        const statuses: (PetStatus | undefined)[] = ['sold', undefined, 'available', 'sold', 'pending', undefined, 'sold'];
        const pets: Pet[] = [];
        for (const [i, status] of statuses.entries()) {
          const pet: NewPet = status ? { name: `P${i}`, categoryId: 1, status } : { name: `P${i}`, categoryId: 1 };
          pets.push(await createPet(store, account.id, pet, T0));
          await createPet(store, other.id, { name: `O${i}`, categoryId: 1, status: 'sold' }, T0);
        }
        for (const status of ['available', 'pending', 'sold'] as const) {
          assert.deepEqual(
            await store.pets.list({ accountId: account.id, limit: 100, status }),
            pets.filter((p) => p.status === status),
          );
        }
        const sold = pets.filter((p) => p.status === 'sold');
        assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 2, status: 'sold' }), sold.slice(0, 2));
      });

      it('when afterId is given, then listPets returns only pets with a greater id (keyset)', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        const pets: Pet[] = [];
        for (let i = 0; i < 5; i++) pets.push(await createPet(store, account.id, { name: `P${i}`, categoryId: 1, status: 'available' }, T0));
        const pivot = pets[1]!.id;
        assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 10, afterId: pivot }), pets.slice(2));
        assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 2, afterId: pivot }), pets.slice(2, 4));
        assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 10, afterId: pivot, status: 'available' }), pets.slice(2));
        assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 10, afterId: pivot + 0.5 }), pets.slice(2));
        assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 10, afterId: pets[4]!.id }), []);
        assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 10, afterId: Number.MAX_SAFE_INTEGER }), []);
      });

      it('when 1 000 pets are walked in pages of 7, then each is seen exactly once, in order', async (t) => {
        const [store, account, other] = await storeWithAccounts(t, backend, 2);
        const statuses = [undefined, 'available', 'pending', 'sold'] as const;
        const pets: Pet[] = [];
        for (let i = 0; i < 1000; i++) {
          const status = statuses[i % statuses.length];
          pets.push(await createPet(store, account.id, status ? { name: `P${i}`, categoryId: i + 1, status } : { name: `P${i}`, categoryId: i + 1 }, T0));
          if (i % 100 === 0) await createPet(store, other.id, { name: `O${i}`, categoryId: 1, status: 'sold' }, T0);
        }
        const seen = await walk(store, account.id, 7);
        assert.equal(seen.length, 1000);
        assert.equal(new Set(seen.map((p) => p.id)).size, 1000);
        assert.deepEqual(seen, pets);
        assert.deepEqual(await walk(store, account.id, 7, 'sold'), pets.filter((p) => p.status === 'sold'));
      });

      it('when a pet has a status outside the enum, then the store rejects it', async (t) => {
        const [store, account] = await storeWithAccounts(t, backend, 1);
        const bad = { name: 'Bad', categoryId: 1, status: 'lost' } as unknown as NewPet;
        await assert.rejects(createPet(store, account.id, bad, T0), isConstraintError);
        assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 10 }), []);
      });

      it('when a pet names an unknown account, then the store rejects it', async (t) => {
        const store = await migratedStore(t, backend);
        await assert.rejects(createPet(store, 'acct_unknown', { name: 'Orphan', categoryId: 1 }, T0), isConstraintError);
        assert.deepEqual(await store.pets.list({ accountId: 'acct_unknown', limit: 10 }), []);
      });
    });

    describe('orders (the rules of services/orders.ts on this store; the repository: store-contract-orders)', () => {
      it('when an available pet is ordered, then the order is placed with the account\'s next order id and the pet is pending; an unavailable or unknown pet is refused, changing nothing', async (t) => {
        const [store, a, b] = await storeWithAccounts(t, backend, 2);
        const orders = await orderService(store);
        const pet = await createPet(store, a.id, { name: 'Rex', categoryId: 1, status: 'available' }, T0);
        const placed = await orders.place(a.id, pet.id);
        assert.deepEqual(placed, { id: 1, petId: pet.id, status: 'placed', createdAt: T0, updatedAt: T0 });
        assert.equal((await store.pets.get(a.id, pet.id))?.status, 'pending');
        await assert.rejects(orders.place(a.id, pet.id), refusal(new PetNotAvailableError(pet.id, 'pending')));
        const bare = await createPet(store, a.id, { name: 'Bare', categoryId: 1 }, T0);
        await assert.rejects(orders.place(a.id, bare.id), refusal(new PetNotAvailableError(bare.id, undefined)));
        await assert.rejects(orders.place(a.id, 999), refusal(petNotFound(999)));
        await assert.rejects(orders.place(b.id, pet.id), refusal(petNotFound(pet.id)), 'another account\'s pet');
        assert.deepEqual(await store.orders.list({ accountId: a.id, limit: 10 }), [placed]);
        assert.deepEqual(await store.orders.list({ accountId: b.id, limit: 10 }), []);
      });

      it('when an order is moved, then the order and its pet change together; a move from another status or of an unknown order changes nothing', async (t) => {
        const [store, a, b] = await storeWithAccounts(t, backend, 2);
        const clock = { at: T0 };
        const orders = await orderService(store, clock);
        const pet = await createPet(store, a.id, { name: 'Rex', categoryId: 1, status: 'available' }, T0);
        const order = await orders.place(a.id, pet.id);
        const T1 = '2024-05-02T00:00:00.000Z';
        clock.at = T1;
        assert.deepEqual(await orders.act(a.id, order.id, 'deliver'), { ...order, status: 'delivered', updatedAt: T1 });
        assert.equal((await store.pets.get(a.id, pet.id))?.status, 'sold');
        await assert.rejects(orders.act(a.id, order.id, 'cancel'), refusal(new InvalidTransitionError(order.id, 'delivered', 'cancelled')));
        assert.deepEqual(await store.orders.get(a.id, order.id), { ...order, status: 'delivered', updatedAt: T1 });
        assert.equal((await store.pets.get(a.id, pet.id))?.status, 'sold');
        await assert.rejects(orders.act(a.id, 42, 'cancel'), refusal(orderNotFound(42)));
        await assert.rejects(orders.act(b.id, order.id, 'cancel'), refusal(orderNotFound(order.id)), 'another account\'s order');
        assert.equal(await store.orders.get(b.id, order.id), undefined);
        assert.equal(await store.orders.get(a.id, order.id + 0.5), undefined);
      });

      it('when orders are listed, then they come in ascending id order after afterId, at most limit, filtered by status', async (t) => {
        const [store, a] = await storeWithAccounts(t, backend, 1);
        const service = await orderService(store);
        const orders: Order[] = [];
        for (let i = 0; i < 5; i++) {
          const pet = await createPet(store, a.id, { name: `P${i}`, categoryId: 1, status: 'available' }, T0);
          orders.push(await service.place(a.id, pet.id));
        }
        const cancelled = await service.act(a.id, orders[1]!.id, 'cancel');
        assert.deepEqual((await store.orders.list({ accountId: a.id, limit: 3, afterId: 1 })).map((o) => o.id), [2, 3, 4]);
        assert.deepEqual(await store.orders.list({ accountId: a.id, limit: 10, status: 'cancelled' }), [cancelled]);
        assert.deepEqual((await store.orders.list({ accountId: a.id, limit: 10, status: 'placed', afterId: 3 })).map((o) => o.id), [4, 5]);
      });
    });

    describe('settings', () => {
      it('when a setting is absent, then it is created; when present, then the first value is returned', async (t) => {
        const store = await migratedStore(t, backend);
        let calls = 0;
        assert.equal(await store.settings.getOrCreate('cursor_secret', () => (calls++, 'first')), 'first');
        assert.equal(await store.settings.getOrCreate('cursor_secret', () => (calls++, 'second')), 'first');
        assert.equal(await store.settings.getOrCreate('other', () => 'x'), 'x');
        assert.ok(calls >= 1);
      });

      it('when many callers race for the same setting, then all of them get the one value that was stored', async (t) => {
        const { store, database } = await openStore(t, backend);
        await store.migrate();
        const { store: other } = await openStore(t, backend, database.url);
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? store : other).settings.getOrCreate('race', () => `value-${i}`)),
        );
        assert.equal(new Set(results).size, 1);
        assert.match(results[0]!, /^value-\d+$/);
        assert.equal(await store.settings.getOrCreate('race', () => 'late'), results[0]);
      });
    });

    describe('transactions', () => {
      const setting = (tx: Pick<Store['db'], 'get'>, key: string) => tx.get<{ value: string }>('SELECT value FROM settings WHERE key = ?', [key]);

      it('when a transaction issues statements together and all succeed, then each gets its own answer and all are kept', async (t) => {
        const store = await migratedStore(t, backend);
        const answers = await store.db.transaction((tx) =>
          Promise.all([
            tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['a', '1']),
            tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['b', '2']),
            tx.get<{ value: string }>('SELECT value FROM settings WHERE key = ?', ['a']),
          ]),
        );
        assert.deepEqual(answers, [1, 1, { value: '1' }]);
        assert.deepEqual([await setting(store.db, 'a'), await setting(store.db, 'b')], [{ value: '1' }, { value: '2' }]);
      });

      it('when one of the statements issued together fails, then the transaction rejects, keeps nothing, and the next one commits', async (t) => {
        const store = await migratedStore(t, backend);
        await assert.rejects(
          store.db.transaction((tx) =>
            Promise.all([
              tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['kept-not', '1']),
              tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['kept-not', '2']), // the same primary key
              tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['after', '3']),
            ]),
          ),
        );
        assert.equal(await setting(store.db, 'kept-not'), undefined);
        assert.equal(await setting(store.db, 'after'), undefined);
        await store.db.transaction((tx) => tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['next', '4']));
        assert.deepEqual(await setting(store.db, 'next'), { value: '4' });
      });

      it('when a loop of statements is still running after a sibling statement failed, then none of its later statements is kept, alone or in the next transaction', async (t) => {
        const store = await migratedStore(t, backend);
        let loopEnded: Promise<unknown> = Promise.resolve();
        await assert.rejects(
          store.db.transaction((tx) => {
            const loop = (async () => {
              for (let i = 0; i < 20; i++) await tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', [`loop-${i}`, String(i)]);
            })();
            loopEnded = loop.catch((error: Error) => error);
            const failing = tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['loop-0', 'taken']); // the loop's first key
            return Promise.all([loop, failing]);
          }),
          (error: Error) => /duplicate key|UNIQUE constraint/.test(error.message),
        );
        await store.db.transaction((tx) => tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['next', '1']));
        assert.match(String(await loopEnded), /statement was issued after its transaction ended|current transaction is aborted/);
        const kept = await store.db.all<{ key: string }>("SELECT key FROM settings WHERE key LIKE 'loop-%'");
        assert.deepEqual(kept, []);
      });

      // SQLite runs each statement as it is issued: one issued later is simply run.
      const late = backend.name === 'postgres' ? 'refused' : 'kept';
      it(`when the work says its last statements are issued, then they are kept, and a statement issued after them is ${late}`, async (t) => {
        const store = await migratedStore(t, backend);
        const answers = await store.db.transaction(async (tx) => {
          const writes = Promise.all([
            tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['last-a', '1']),
            tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['last-b', '2']),
          ]);
          tx.lastStatementsIssued();
          const after = tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['late', '3']);
          if (late === 'refused') await assert.rejects(after, /issued after lastStatementsIssued/);
          else assert.equal(await after, 1);
          return writes;
        });
        assert.deepEqual(answers, [1, 1]);
        assert.deepEqual([await setting(store.db, 'last-a'), await setting(store.db, 'last-b')], [{ value: '1' }, { value: '2' }]);
        assert.deepEqual(await setting(store.db, 'late'), late === 'refused' ? undefined : { value: '3' });
      });

      it('when one of the last statements fails, then the transaction rejects with its error, keeps nothing, and the next one commits', async (t) => {
        const store = await migratedStore(t, backend);
        await assert.rejects(
          store.db.transaction(async (tx) => {
            await tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['first', '1']);
            const writes = Promise.all([
              tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['dup', '1']),
              tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['dup', '2']), // the same primary key
            ]);
            tx.lastStatementsIssued();
            return writes;
          }),
          (error: Error) => /duplicate key|UNIQUE constraint/.test(error.message),
        );
        assert.deepEqual([await setting(store.db, 'first'), await setting(store.db, 'dup')], [undefined, undefined]);
        await store.db.transaction((tx) => tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['next', '4']));
        assert.deepEqual(await setting(store.db, 'next'), { value: '4' });
      });

      if (backend.name === 'postgres') {
        it('when the work swallows a failed statement, then the transaction rejects: PostgreSQL rolled it back', async (t) => {
          const store = await migratedStore(t, backend);
          await assert.rejects(
            store.db.transaction(async (tx) => {
              await tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['swallowed', '1']);
              await tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['swallowed', '2']).catch(() => 0);
            }),
            /rolled the transaction back \(COMMIT answered ROLLBACK\)/,
          );
          assert.equal(await setting(store.db, 'swallowed'), undefined);
        });
      }

      it('when the work fails before its first statement, then nothing is kept and the store goes on', async (t) => {
        const store = await migratedStore(t, backend);
        await assert.rejects(store.db.transaction(async () => Promise.reject(new Error('decided against it'))), /decided against it/);
        await store.db.transaction((tx) => tx.run('INSERT INTO settings (key, value) VALUES (?, ?)', ['then', '1']));
        assert.deepEqual(await setting(store.db, 'then'), { value: '1' });
      });
    });

    if (backend.name === 'postgres') {
      describe('outages', () => {
        it('when an admin terminates the store connections, then calls succeed or throw StoreUnavailableError, and succeed again afterwards', async (t) => {
          const { store, database } = await openStore(t, backend);
          await store.migrate();
          const account = await withAccount(store);
          // Fill the pool so idle clients die too (an unhandled idle error would crash this process).
          await Promise.all(Array.from({ length: POOL_MAX }, () => store.accounts.get(account.id)));
          assert.ok((store.poolStats?.().idle ?? 0) >= 1, 'the pool holds idle connections');
          const name = new URL(database.url).pathname.slice(1);
          const { rowCount } = await withPostgresAdmin((admin) =>
            admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]),
          );
          assert.ok((rowCount ?? 0) >= 1, 'no connection was terminated');

          const outcomes = await Promise.allSettled(Array.from({ length: POOL_MAX * 2 }, () => store.accounts.get(account.id)));
          for (const outcome of outcomes) {
            if (outcome.status === 'fulfilled') assert.deepEqual(outcome.value, account);
            else assert.ok(isUnavailable(outcome.reason), `unexpected error: ${String(outcome.reason)}`);
          }
          assert.deepEqual(await afterDeadClients(() => store.accounts.get(account.id)), account);
          const again = await Promise.all(Array.from({ length: POOL_MAX * 2 }, () => store.accounts.get(account.id)));
          assert.ok(again.every((a) => a?.id === account.id));
        });

        it('when nothing listens at the database address, then every method throws StoreUnavailableError quickly', async (t) => {
          const port = await freePort();
          const store = await storeThroughPort(t, backend, postgresAdminUrl!, port);
          const started = Date.now();
          await assert.rejects(store.ping(), isUnavailable);
          await assert.rejects(store.migrate(), isUnavailable);
          await assert.rejects(store.pendingMigrations(), isUnavailable);
          await assert.rejects(store.accounts.get('acct_x'), isUnavailable);
          await assert.rejects(createPet(store, 'acct_x', { name: 'Rex', categoryId: 1 }, T0), isUnavailable);
          await assert.rejects(store.settings.getOrCreate('k', () => 'v'), isUnavailable);
          assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
        });

        // The timeout turns a missing connect timeout (a hang) into a failure.
        it('when the server accepts connections but never answers, then calls fail with StoreUnavailableError after the connect timeout', { timeout: 10_000 }, async (t) => {
          const silent = await silentServer();
          t.after(() => silent.close());
          const store = await storeThroughPort(t, backend, postgresAdminUrl!, silent.port);
          const started = Date.now();
          await assert.rejects(store.ping(), isUnavailable);
          const elapsed = Date.now() - started;
          assert.ok(elapsed < 5000, `took ${elapsed} ms`);
        });

        it('when it never answers and PETSTORE_PG_CONNECT_TIMEOUT_MS is set, then calls fail after that timeout, not the 2 s default', async (t) => {
          const silent = await silentServer();
          t.after(() => silent.close());
          const config = loadConfig({ PETSTORE_DATABASE_URL: `postgres://postgres@127.0.0.1:${silent.port}/nothing`, PETSTORE_PG_CONNECT_TIMEOUT_MS: '300' });
          assert.equal(config.database.pgConnectTimeoutMs, 300);
          const store = await createStore(config);
          t.after(() => store.close());
          const started = Date.now();
          await assert.rejects(store.ping(), isUnavailable);
          const waited = Date.now() - started;
          assert.ok(waited >= 250 && waited < 1900, `failed after ${waited} ms`);
        });

        it('when the connection drops and the server comes back, then calls throw StoreUnavailableError and then succeed without a restart', async (t) => {
          const { database } = await openStore(t, backend);
          const target = new URL(postgresAdminUrl!);
          const proxy = createProxy(target.hostname, Number(target.port || 5432));
          const port = await proxy.start(0);
          t.after(() => proxy.stop());
          const store = await storeThroughPort(t, backend, database.url, port);
          await store.migrate();
          const account = await withAccount(store);
          await Promise.all(Array.from({ length: POOL_MAX }, () => store.accounts.get(account.id)));

          await proxy.stop(); // resets every open connection, then refuses new ones
          await assert.rejects(store.accounts.get(account.id), isUnavailable);
          await assert.rejects(store.ping(), isUnavailable);
          await assert.rejects(createPet(store, account.id, { name: 'Rex', categoryId: 1 }, T0), isUnavailable);

          await proxy.start(port);
          await afterDeadClients(() => store.ping());
          assert.deepEqual(await store.accounts.get(account.id), account);
          const pet = await createPet(store, account.id, { name: 'Rex', categoryId: 1 }, T0);
          assert.deepEqual(await store.pets.list({ accountId: account.id, limit: 10 }), [pet]);
        });
      });
    }
  });
}

function listen(server: net.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as net.AddressInfo).port);
    });
  });
}

function closeServer(server: net.Server, sockets: Set<net.Socket>): Promise<void> {
  for (const socket of sockets) socket.resetAndDestroy();
  sockets.clear();
  return new Promise((resolve) => server.close(() => resolve()));
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  const port = await listen(server, 0);
  await closeServer(server, new Set());
  return port;
}

/** A TCP proxy to PostgreSQL that can be cut (connections reset, port closed) and restored. */
function createProxy(host: string, targetPort: number) {
  let server: net.Server | undefined;
  const sockets = new Set<net.Socket>();
  return {
    async start(port: number): Promise<number> {
      server = net.createServer((client) => {
        const upstream = net.connect(targetPort, host);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => {});
          socket.on('close', () => {
            sockets.delete(socket);
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream).pipe(client);
      });
      return listen(server, port);
    },
    async stop(): Promise<void> {
      if (!server) return;
      const closing = server;
      server = undefined;
      await closeServer(closing, sockets);
    },
  };
}
