// Webhook signing secrets sealed at rest (issue 30, part 5), on both stores: what a copy of the
// database shows (the SQLite file and its WAL, pg_dump's output), the key file of the embedded
// default, sealing rows stored plain, rotating the key while a server delivers, and a key that
// does not open a row (its deliveries fail with a log line; the server goes on).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { runSecretsCommand } from '../../src/cli/secrets.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createStore } from '../../src/store/index.js';
import { createSqliteStore } from '../../src/store/sqlite/index.js';
import { storeConfig } from '../helpers/store-config.js';
import type { Store } from '../../src/store/types.js';
import { createSecretBox, newSecretKey, secretKeyFrom, SecretUnavailableError } from '../../src/webhooks/secret-box.js';
import { keyFileOf, keyFromFile, PLAIN_TEXT_WARNING } from '../../src/webhooks/secret-keys.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { type Backend, backends, sqliteBackend } from '../helpers/backends.js';
import { type Received, registerEndpoint, startReceiver, WEBHOOK_ENV } from '../helpers/webhooks.js';
import { TEST_PG_CONNECT_TIMEOUT_MS } from '../helpers/connect-timeout.js';

/** The CLI's config for a test database: a 10 s connect timeout, as the suites' apps have (CI's busy cores took over 2 s). */
const cliConfig = (env: Record<string, string>) => loadConfig({ PETSTORE_PG_CONNECT_TIMEOUT_MS: TEST_PG_CONNECT_TIMEOUT_MS, ...env });

const K1 = newSecretKey();
const K2 = newSecretKey();
const id = (key: string) => secretKeyFrom(key)!.id;

/** What a copy of the database holds: the SQLite file and its WAL, or pg_dump's output. */
function databaseCopy(backend: Backend, url: string): string {
  if (backend.name === 'postgres') return execFileSync('pg_dump', ['--no-owner', url], { encoding: 'latin1', maxBuffer: 256 * 1024 * 1024 });
  return [url, `${url}-wal`].filter((file) => existsSync(file)).map((file) => readFileSync(file).toString('latin1')).join('\n');
}

async function keyIds(store: Store): Promise<Array<{ secret_key_id: string | null; previous_secret_key_id: string | null }>> {
  return store.db.all('SELECT secret_key_id, previous_secret_key_id FROM webhook_endpoints ORDER BY id');
}

async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The receiver's deliveries, each verified (Standard Webhooks) with one of `secrets`. */
function verifyAll(received: readonly Received[], secrets: readonly string[]): void {
  for (const r of received) {
    const headers = { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature };
    assert.ok(secrets.some((secret) => { try { new Webhook(secret).verify(r.body, headers); return true; } catch { return false; } }), `delivery ${r.id} verifies`);
  }
}

/** Creates a pet; answers its id. */
async function createPet(app: TestApp, key: string): Promise<number> {
  const res = await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } });
  assert.equal(res.status, 201);
  return (res.body as { id: number }).id;
}

/** The first delivery of the event about pet `petId` (a retry of an earlier event may arrive between). */
function deliveryAbout(received: readonly Received[], petId: number): Received | undefined {
  return received.find((r) => (JSON.parse(r.body) as { data: { object: { id?: number } } }).data.object.id === petId);
}

async function appWith(t: TestContext, backend: Backend, env: Record<string, string>, databaseUrl?: string): Promise<TestApp> {
  return startApp(t, { backend, ...(databaseUrl ? { databaseUrl } : {}), env: { ...WEBHOOK_ENV, ...env } });
}

/** A receiver, a fresh database and an app on it that writes rows under `env` but delivers nothing (a later app does). */
async function writerApp(t: TestContext, backend: Backend, env: Record<string, string>): Promise<{ receiver: Awaited<ReturnType<typeof startReceiver>>; url: string; writer: TestApp }> {
  const receiver = await startReceiver();
  t.after(() => receiver.close());
  const database = await backend.createDatabase();
  t.after(() => database.drop());
  const writer = await appWith(t, backend, { ...env, PETSTORE_WEBHOOK_WORKER: 'false' }, database.url);
  return { receiver, url: database.url, writer };
}

describe('the sealing box', () => {
  it('when a sealed secret is opened with another endpoint id, an altered value or an unknown key, then it refuses, naming no secret', () => {
    const box = createSecretBox(secretKeyFrom(K1), secretKeyFrom(K2));
    const sealed = box.seal('whsec_abc', 'we_1');
    assert.equal(sealed.keyId, id(K1));
    assert.ok(!sealed.value.includes('whsec_'));
    assert.equal(box.open(sealed, 'we_1'), 'whsec_abc');
    assert.throws(() => box.open(sealed, 'we_2'), SecretUnavailableError);
    // Replace the first character with another one (a fixed 'A' left one value in 64 unaltered).
    const altered = `${sealed.value.startsWith('A') ? 'B' : 'A'}${sealed.value.slice(1)}`;
    assert.notEqual(altered, sealed.value);
    assert.throws(() => box.open({ ...sealed, value: altered }, 'we_1'), SecretUnavailableError);
    assert.throws(() => createSecretBox(secretKeyFrom(K2)).open(sealed, 'we_1'), (e: Error) => e instanceof SecretUnavailableError && e.message.includes(id(K1)));
    assert.equal(createSecretBox(undefined).open({ value: 'whsec_plain', keyId: null }, 'we_1'), 'whsec_plain');
  });

  it('when PETSTORE_SECRET_KEY is not 32 bytes of base64, then the config is refused without repeating the value', () => {
    for (const bad of ['short', Buffer.alloc(31).toString('base64'), `${K1}x`]) {
      assert.throws(() => loadConfig({ PETSTORE_SECRET_KEY: bad }), (e: Error) => e instanceof ConfigError && e.message.includes('PETSTORE_SECRET_KEY') && !e.message.includes(bad));
    }
    assert.equal(loadConfig({ PETSTORE_SECRET_KEY: K1, PETSTORE_SECRET_KEY_PREVIOUS: K2 }).secrets.previousKey?.id, id(K2));
  });
});

for (const backend of backends) {
  // Each test has its own database and receiver: they run at once.
  describe(`sealed webhook secrets (${backend.name})`, { concurrency: true }, () => {
    it('when a key is set, then secrets are stored sealed under its id (nothing whsec_ in a copy of the database) and deliveries verify, before and after a rotation', async (t) => {
      const receiver = await startReceiver();
      t.after(() => receiver.close());
      const app = await appWith(t, backend, { PETSTORE_SECRET_KEY: K1 });
      const { key } = await app.createAccount();
      const endpoint = await registerEndpoint(app.url, key, receiver.url);
      await createPet(app, key);
      await until('the first delivery', () => receiver.received[0]);
      const rotated = await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { key });
      assert.equal(rotated.status, 200);
      const { secret } = rotated.body as { secret: string };
      const secondPet = await createPet(app, key);
      const second = await until('the delivery about the second pet', () => deliveryAbout(receiver.received, secondPet));
      assert.equal(second.signature.split(' ').length, 2, 'signed with the new and the previous secret');
      verifyAll([second], [secret]);
      verifyAll(receiver.received, [endpoint.secret]);
      assert.deepEqual(await keyIds(app.store), [{ secret_key_id: id(K1), previous_secret_key_id: id(K1) }]);
      const copy = databaseCopy(backend, app.config.database.url);
      assert.ok(copy.includes(endpoint.id), 'the copy holds the endpoint');
      assert.ok(!copy.includes('whsec_'), 'no secret in plain text');
    });

    it('when rows are stored plain, then `petstore secrets seal` seals them once a key is set, online, and deliveries still verify with the secrets shown', async (t) => {
      // Rows as a release before sealing wrote them (and PostgreSQL without a key still does).
      // Its worker off: only the app after sealing delivers (this one has no key, or the key file's).
      const { receiver, url, writer: before } = await writerApp(t, backend, {});
      const database = { url };
      const { key } = await before.createAccount();
      const plainStore = backend.name === 'sqlite' ? createSqliteStore(database.url) : await createStore(storeConfig(database.url, { pgConnectTimeoutMs: 10_000 }));
      t.after(() => plainStore.close());
      const endpoint = await plainEndpoint(before, plainStore, key, receiver.url);
      assert.ok(databaseCopy(backend, database.url).includes(endpoint.secret), 'stored plain: the check below can fail');
      const config = cliConfig({ PETSTORE_DATABASE_URL: database.url, PETSTORE_SECRET_KEY: K1 });
      const first = await runSecretsCommand('secrets seal', config);
      assert.deepEqual([first.code, first.value], [0, { resealed: 1, unopenable: [], compacted: true }]);
      assert.equal((await runSecretsCommand('secrets seal', config)).text.split('\n')[0], 'Sealed the secrets of 0 webhook endpoint(s).', 'once');
      assert.deepEqual(await keyIds(plainStore), [{ secret_key_id: id(K1), previous_secret_key_id: null }]);
      assert.ok(!databaseCopy(backend, database.url).includes('whsec_'), 'no secret in plain text after sealing');
      const after = await appWith(t, backend, { PETSTORE_SECRET_KEY: K1 }, database.url);
      await createPet(after, key);
      verifyAll([await until('a delivery', () => receiver.received[0])], [endpoint.secret]);
    });

    it('when the key is rotated while a server delivers, then every row ends under the new key and no delivery fails', async (t) => {
      const { receiver, url, writer: old } = await writerApp(t, backend, { PETSTORE_SECRET_KEY: K1 });
      const database = { url };
      const { key } = await old.createAccount();
      const endpoints = [];
      for (let i = 0; i < 3; i++) endpoints.push(await registerEndpoint(old.url, key, receiver.url));
      const app = await appWith(t, backend, { PETSTORE_SECRET_KEY: K2, PETSTORE_SECRET_KEY_PREVIOUS: K1 }, database.url);
      let creating = true;
      const creates = (async () => {
        while (creating) {
          await createPet(app, key);
          await sleep(20);
        }
      })();
      await sleep(200);
      const rotation = await runSecretsCommand('secrets rotate-key', cliConfig({ PETSTORE_DATABASE_URL: database.url, PETSTORE_SECRET_KEY: K2, PETSTORE_SECRET_KEY_PREVIOUS: K1 }));
      await sleep(200);
      creating = false;
      await creates;
      assert.deepEqual([rotation.code, (rotation.value as { resealed: number }).resealed], [0, 3]);
      assert.deepEqual(await keyIds(app.store), endpoints.map(() => ({ secret_key_id: id(K2), previous_secret_key_id: null })));
      const pets = (await app.request('GET', '/v1/store/inventory', { key })).body as { total: number };
      type Delivery = { status: string; attempts: number };
      const deliveriesOf = async (endpointId: string) =>
        (await app.request('GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`, { key })).body as Delivery[];
      // A delivery is marked succeeded just after its receiver answers: wait for the rows, not the receiver.
      for (const endpoint of endpoints) {
        const deliveries = await until('every delivery settled', async () => {
          const listed = await deliveriesOf(endpoint.id);
          return listed.length === pets.total && listed.every((d) => d.status !== 'pending') ? listed : undefined;
        });
        assert.ok(deliveries.every((d) => d.status === 'succeeded' && d.attempts === 1), JSON.stringify(deliveries));
      }
      assert.equal(receiver.received.length, pets.total * 3);
      verifyAll(receiver.received, endpoints.map((e) => e.secret));
      // The old key alone no longer opens anything.
      const oldOnly = await runSecretsCommand('secrets rotate-key', cliConfig({ PETSTORE_DATABASE_URL: database.url, PETSTORE_SECRET_KEY: K1 }));
      assert.deepEqual([oldOnly.code, (oldOnly.value as { unopenable: string[] }).unopenable.length], [1, 3]);
    });

    it('when a sealed row\'s key is missing, then its deliveries fail as signing_failed with a server log line, and the server goes on', async (t) => {
      const { receiver, url, writer: old } = await writerApp(t, backend, { PETSTORE_SECRET_KEY: K1 });
      const database = { url };
      const { key } = await old.createAccount();
      const endpoint = await registerEndpoint(old.url, key, receiver.url);
      const app = await appWith(t, backend, { PETSTORE_SECRET_KEY: K2 }, database.url);
      await createPet(app, key);
      const delivery = await until('the failed attempt', async () => {
        const listed = (await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, { key })).body as Array<{ attempts: number; lastError?: string }>;
        return listed.find((d) => d.attempts > 0);
      });
      assert.equal(delivery.lastError, 'signing_failed');
      assert.equal(receiver.received.length, 0, 'nothing unsigned or wrongly signed was sent');
      const line = app.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l.msg).startsWith('webhook attempt not sent'));
      assert.ok(line, 'a server log line');
      assert.equal(line.endpointId, endpoint.id);
      assert.match(String(line.reason), new RegExp(`sealed under key ${id(K1)}.*only key ${id(K2)}`));
      assert.ok(!app.logs.some((l) => l.includes('whsec_')), 'no secret logged');
      assert.equal((await app.request('GET', '/v1/pets', { key })).status, 200, 'the server goes on');
    });
  });
}

/** An endpoint written plain, as before sealing: through a store without keys, the secret known to the test. */
async function plainEndpoint(app: TestApp, plain: Store, key: string, url: string): Promise<{ id: string; secret: string }> {
  const auth = await app.services.apiKeys.authenticate(key);
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const made = await plain.webhooks.createEndpoint(auth.accountId, { id: `we_plain${Date.now()}`, url, eventMask: -1, description: undefined, secret, createdAt: new Date().toISOString() }, 16);
  return { id: made!.id, secret };
}

describe('the embedded default\'s key file', () => {
  it('when no key is set on SQLite, then a key file is made beside the database (mode 0600) on first start and used again at the next', async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    const first = await createStore(cliConfig({ PETSTORE_DATABASE_URL: database.url }));
    const file = keyFileOf(database.url);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    await first.migrate();
    const account = await first.accounts.create({ id: 'acct_keyfile', name: 'Key file', createdAt: new Date().toISOString() });
    await first.webhooks.createEndpoint(account.id, { id: 'we_keyfile', url: 'https://example.com/h', eventMask: -1, description: undefined, secret: 'whsec_kf', createdAt: new Date().toISOString() }, 16);
    await first.close();
    const [row] = await (async () => {
      const again = await createStore(cliConfig({ PETSTORE_DATABASE_URL: database.url }));
      t.after(() => again.close());
      return again.db.all<{ secret: string; secret_key_id: string }>('SELECT secret, secret_key_id FROM webhook_endpoints');
    })();
    assert.equal(row!.secret_key_id, keyFromFile(file).id);
    assert.equal(createSecretBox(keyFromFile(file)).open({ value: row!.secret, keyId: row!.secret_key_id }, 'we_keyfile'), 'whsec_kf');
  });
});

describe('PostgreSQL without a key', { skip: backends.some((b) => b.name === 'postgres') ? false : 'needs PETSTORE_TEST_POSTGRES_URL' }, () => {
  it('when PETSTORE_SECRET_KEY is unset, then the service serves, /readyz says secrets are plain text, and new secrets are stored plain', async (t) => {
    const postgres = backends.find((b) => b.name === 'postgres')!;
    const app = await appWith(t, postgres, {});
    const ready = await app.request('GET', '/readyz');
    assert.deepEqual([ready.status, ready.body], [200, { status: 'ready', details: [PLAIN_TEXT_WARNING] }]);
    const { key } = await app.createAccount();
    await registerEndpoint(app.url, key, 'http://127.0.0.1:9/h');
    assert.deepEqual(await keyIds(app.store), [{ secret_key_id: null, previous_secret_key_id: null }]);
    const sealed = await appWith(t, postgres, { PETSTORE_SECRET_KEY: K1 }, app.config.database.url);
    assert.deepEqual((await sealed.request('GET', '/readyz')).body, { status: 'ready' });
  });
});
