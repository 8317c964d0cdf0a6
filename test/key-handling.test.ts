// API key handling: the secret is never stored (only its SHA-256), never logged, never
// echoed; keys work only in their own environment; a key with a bad checksum is refused
// without a store lookup; the lookup is by hash.
//
// Timing: there are deliberately no timing assertions. The defence is structural and is
// asserted as such: the store is only ever asked for SHA-256(key) (an equality lookup on a
// unique index, whose cost does not depend on how much of a guessed key is right), and the
// stored hash is then compared with timingSafeEqual. The checksum comparison before it is
// not constant-time, but the checksum is a public function of the key's other characters.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import { generateKey, parseKey } from '../src/services/api-keys.js';
import type { Store } from '../src/store/types.js';
import { startApp, type TestApp } from './helpers/app.js';
import { backends } from './helpers/backends.js';
import { cliJson, startServerProcess } from './helpers/process.js';
import { send } from './helpers/wire.js';

type ErrorBody = { code: string; message: string; status: number };
type CliKey = { id: string; key: string; accountId: string; hint: string };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** The random part of a key: what must never appear anywhere. */
const secretOf = (key: string) => key.slice('psk_live_'.length, 'psk_live_'.length + 30);

/** Every way key material could show up in text: the whole key, its secret, or a long piece of it. */
function assertNoKeyMaterial(text: string, keys: string[], where: string): void {
  for (const key of keys) {
    assert.equal(text.includes(key), false, `${where}: contains a whole key`);
    assert.equal(text.includes(secretOf(key)), false, `${where}: contains a key's secret part`);
    for (let i = 0; i + 12 <= 30; i += 6) {
      assert.equal(text.includes(secretOf(key).slice(i, i + 12)), false, `${where}: contains 12 characters of a key's secret`);
    }
  }
  assert.doesNotMatch(text, /psk_(live|test)_[0-9A-Za-z]{8,}/, `${where}: contains something key-shaped`);
}

/** A key with a valid shape and prefix whose checksum is wrong. */
function withBadChecksum(key: string): string {
  const last = key.at(-1) === 'A' ? 'B' : 'A';
  const bad = key.slice(0, -1) + last;
  assert.equal(parseKey(bad), undefined);
  return bad;
}

/** Requests that use keys properly and improperly; none may put key material in logs. */
async function useKeys(url: string, key: string, revokedKey: string, otherEnvironmentKey: string): Promise<void> {
  const auth = (value: string): [string, string] => ['Authorization', value];
  const json: [string, string] = ['Content-Type', 'application/json'];
  const body = new Uint8Array(Buffer.from('{"name":"Rex","categoryId":1}'));
  const created = await send(url, { method: 'POST', target: '/v1/pets', headers: [auth(`Bearer ${key}`), json], body });
  assert.equal(created.status, 201, created.text);
  const petId = (created.json as { id: number }).id;
  const expectations: Array<[Parameters<typeof send>[1], number]> = [
    [{ method: 'GET', target: '/v1/pets', headers: [auth(`Bearer ${key}`)] }, 200],
    [{ method: 'GET', target: `/v1/pets/${petId}`, headers: [auth(`Bearer ${key}`)] }, 200],
    [{ method: 'GET', target: '/v1/pets?limit=0', headers: [auth(`Bearer ${key}`)] }, 400],
    [{ method: 'GET', target: '/v1/pets', headers: [auth(`Basic ${key}`)] }, 401],
    [{ method: 'GET', target: '/v1/pets', headers: [auth(`Basic ${Buffer.from(`${key}:`).toString('base64')}`)] }, 401],
    [{ method: 'GET', target: '/v1/pets', headers: [auth(`Bearer ${withBadChecksum(key)}`)] }, 401],
    [{ method: 'GET', target: '/v1/pets', headers: [auth(`Bearer ${key.slice(0, -1)}`)] }, 401],
    [{ method: 'GET', target: '/v1/pets', headers: [auth(`Bearer ${key}x`)] }, 401],
    [{ method: 'GET', target: '/v1/pets', headers: [auth(`Bearer ${revokedKey}`)] }, 401],
    [{ method: 'GET', target: '/v1/pets', headers: [auth(`Bearer ${otherEnvironmentKey}`)] }, 401],
    [{ method: 'GET', target: '/v1/pets', headers: [auth(key)] }, 401],
    [{ method: 'POST', target: '/v1/pets', headers: [auth(`Bearer ${withBadChecksum(key)}`), json], body }, 401],
    [{ method: 'GET', target: '/v1/pets', headers: [['X-Api-Key', key]] }, 401],
    [{ method: 'GET', target: '/v1/pets', headers: [['Cookie', `key=${key}`]] }, 401],
    [{ method: 'DELETE', target: '/v1/pets', headers: [auth(`Bearer ${key}`)] }, 405],
    [{ method: 'GET', target: '/nope', headers: [auth(`Bearer ${key}`)] }, 404],
  ];
  for (const [request, status] of expectations) {
    const res = await send(url, request);
    assert.equal(res.status, status, `${request.method} ${request.target} ${JSON.stringify(request.headers)}: ${res.text}`);
    // Refusals never echo the key presented.
    assertNoKeyMaterial(res.text + JSON.stringify(res.headers), [key, revokedKey, otherEnvironmentKey], `the answer to ${request.method} ${request.target}`);
  }
}

/** A key in the query string: refused as an unknown parameter. */
async function keyInQuery(url: string, key: string): Promise<void> {
  for (const auth of [[], [['Authorization', `Bearer ${key}`]]] as Array<Array<[string, string]>>) {
    const res = await send(url, { method: 'GET', target: `/v1/pets?key=${key}`, headers: auth });
    const body = res.json as ErrorBody;
    if (auth.length === 0) {
      assert.equal(res.status, 401, 'authentication comes first');
    } else {
      assert.equal(res.status, 400, res.text);
      assert.equal(body.code, 'invalid_request');
      assert.match(body.message, /Query parameter "key" is not allowed/);
    }
  }
  const res = await send(url, { method: 'GET', target: `/v1/pets?api_key=${key}&access_token=${key}` });
  assert.equal(res.status, 401, 'a key in the query string does not authenticate');
}

describe('the secret is never stored', () => {
  for (const backend of backends) {
    test(`when keys are created through the services and the CLI and used, then the ${backend.name} database holds their SHA-256 hashes and no key material`, async (t) => {
      const app = await startApp(t, { backend });
      const viaServices = await app.createAccount('Stored');
      const revoked = await app.services.apiKeys.create(viaServices.accountId);
      await app.services.apiKeys.revoke(revoked.id);
      const staging = await app.services.apiKeys.create(viaServices.accountId, 'staging');
      const viaCli = await cliJson<CliKey>(['keys', 'create', '--account', viaServices.accountId], { PETSTORE_DATABASE_URL: app.config.database.url });
      const keys = [viaServices.key, revoked.key, staging.key, viaCli.key];
      await useKeys(app.url, viaCli.key, revoked.key, staging.key);
      assert.equal((await app.request('GET', '/v1/pets', { key: viaServices.key })).status, 200);

      let contents: string;
      if (backend.name === 'sqlite') {
        const file = app.config.database.url;
        // The database file and its write-ahead log: recent writes live in the WAL.
        contents = [file, `${file}-wal`, `${file}-shm`]
          .filter((f) => existsSync(f))
          .map((f) => readFileSync(f).toString('latin1'))
          .join('\n');
      } else {
        const client = new pg.Client({ connectionString: app.config.database.url });
        await client.connect();
        try {
          const tables = await client.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
          assert.ok(tables.rows.some((r) => r.name === 'api_keys'));
          const parts: string[] = [];
          for (const { name } of tables.rows) {
            const rows = await client.query<{ row: string }>(`SELECT t::text AS row FROM ${pg.escapeIdentifier(name)} t`);
            parts.push(...rows.rows.map((r) => r.row));
          }
          contents = parts.join('\n');
        } finally {
          await client.end();
        }
      }
      assertNoKeyMaterial(contents, keys, `the ${backend.name} database`);
      for (const key of keys) assert.ok(contents.includes(sha256(key)), 'the SHA-256 hash of each key is stored');
      // The hint shown in listings is the prefix and the last 4 characters (part of the checksum), never the secret.
      const listed = await app.services.apiKeys.list(viaServices.accountId);
      for (const info of listed) {
        assert.match(info.hint, /^psk_(live|test)_…[0-9A-Za-z]{4}$/);
        assert.equal('keyHash' in info, false);
      }
    });
  }
});

describe('keys are never logged', () => {
  test('when keys are used properly and improperly (Bearer, Basic, bad checksum, truncated, revoked, other environment, other headers), then no log line holds key material and no answer echoes a key', async (t) => {
    const app = await startApp(t);
    const { key, accountId } = await app.createAccount();
    const revoked = await app.services.apiKeys.create(accountId);
    await app.services.apiKeys.revoke(revoked.id);
    const staging = await app.services.apiKeys.create(accountId, 'staging');
    await useKeys(app.url, key, revoked.key, staging.key);
    await keyInQuery(app.url, key);
    assert.ok(app.logs.length >= 20, `the app logged (${app.logs.length} lines)`);
    assertNoKeyMaterial(app.logs.join('\n'), [key, revoked.key, staging.key], 'the logs');
  });

  test('when a running server process is used with keys created by the CLI, then its stdout and stderr hold no key material', async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-keys-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const env = { PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db'), PETSTORE_LOG_LEVEL: 'info' };
    const server = await startServerProcess(env);
    t.after(() => server.stop());
    let stderr = '';
    server.child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const account = await cliJson<{ id: string }>(['accounts', 'create', '--name', 'Logged'], env);
    const key = await cliJson<CliKey>(['keys', 'create', '--account', account.id], env);
    const revoked = await cliJson<CliKey>(['keys', 'create', '--account', account.id], env);
    await cliJson<CliKey>(['keys', 'revoke', revoked.id], env);
    const staging = await cliJson<CliKey>(['keys', 'create', '--account', account.id, '--env', 'staging'], env);
    await useKeys(server.url, key.key, revoked.key, staging.key);
    await keyInQuery(server.url, key.key);
    assert.equal(await server.stop('SIGTERM'), 0);
    assert.ok(server.output().split('\n').length > 20, 'the server logged requests');
    assertNoKeyMaterial(server.output(), [key.key, revoked.key, staging.key], 'the server stdout');
    assertNoKeyMaterial(stderr, [key.key, revoked.key, staging.key], 'the server stderr');
  });

  test(
    'when a key is sent as X-Request-Id, then it is neither echoed nor logged: a new request id is generated',
    async (t) => {
      const app = await startApp(t);
      const { key } = await app.createAccount();
      const res = await send(app.url, { method: 'GET', target: '/v1/pets', headers: [['Authorization', `Bearer ${key}`], ['X-Request-Id', key]] });
      assert.equal(res.status, 200);
      assert.notEqual(res.headers['x-request-id'], key);
      assertNoKeyMaterial(app.logs.join('\n'), [key], 'the logs');
    },
  );

  test(
    'when a key is pasted as a path or query value (/v1/pets/<key>, ?limit=<key>, ?status=<key>), then the 400 is logged without the key',
    async (t) => {
      const app = await startApp(t);
      const { key } = await app.createAccount();
      for (const target of [`/v1/pets/${key}`, `/v1/pets?limit=${key}`, `/v1/pets?status=${key}`]) {
        const res = await send(app.url, { method: 'GET', target, headers: [['Authorization', `Bearer ${key}`]] });
        assert.equal(res.status, 400, target);
      }
      assertNoKeyMaterial(app.logs.join('\n'), [key], 'the logs');
    },
  );
});

describe('environments', () => {
  test('when a staging key is sent to a production server and a production key to a staging server, then 401 naming both environments; each key works at home', async (t) => {
    const production = await startApp(t, { env: { PETSTORE_ENV: 'production' } });
    const staging = await startApp(t, { env: { PETSTORE_ENV: 'staging' } });
    for (const [app, home, away, homeName, awayName] of [
      [production, 'production', 'staging', 'production', 'staging'],
      [staging, 'staging', 'production', 'staging', 'production'],
    ] as const) {
      const account = await app.services.accounts.create('Env');
      const homeKey = await app.services.apiKeys.create(account.id, home);
      const awayKey = await app.services.apiKeys.create(account.id, away);
      assert.match(homeKey.key, home === 'production' ? /^psk_live_/ : /^psk_test_/);
      assert.equal((await app.request('GET', '/v1/pets', { key: homeKey.key })).status, 200, `a ${homeName} key on the ${homeName} server`);
      // The away key exists in this very database: refused for its environment, not as unknown.
      const res = await app.request('GET', '/v1/pets', { key: awayKey.key });
      assert.equal(res.status, 401);
      const body = res.body as ErrorBody;
      assert.equal(body.code, 'unauthorized');
      assert.match(body.message, new RegExp(`This is a ${awayName} key but this is the ${homeName} API`));
      assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    }
  });
});

describe('checksum before lookup', () => {
  function instrument(app: TestApp): { calls: string[]; fail: () => void } {
    const store = app.store as Store;
    const original = store.apiKeys.findByHash.bind(store.apiKeys);
    const calls: string[] = [];
    let failing = false;
    store.apiKeys.findByHash = async (hash: string) => {
      calls.push(hash);
      if (failing) throw new Error('the store was consulted');
      return original(hash);
    };
    return { calls, fail: () => (failing = true) };
  }

  test('when a key has a bad checksum or a malformed shape, then 401 without any store lookup, even when the store throws', async (t) => {
    const app = await startApp(t);
    const { key } = await app.createAccount();
    const probe = instrument(app);
    probe.fail();
    const refused = [
      withBadChecksum(key),
      withBadChecksum(generateKey('production')),
      withBadChecksum(generateKey('staging')),
      `${key}A`,
      key.slice(0, -1),
      key.replace('psk_live_', 'psk_prod_'),
      key.replace('psk_live_', 'PSK_LIVE_'),
      `${key.slice(0, 20)}-${key.slice(21)}`,
      'psk_live_',
      'x'.repeat(5000),
    ];
    for (const token of refused) {
      const res = await app.request('GET', '/v1/pets', { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 401, `${token.slice(0, 50)}: ${res.text}`);
      assert.match((res.body as ErrorBody).message, /malformed/);
    }
    // A staging key on the production API is refused by its prefix, before any lookup too.
    const staging = await app.request('GET', '/v1/pets', { headers: { authorization: `Bearer ${generateKey('staging')}` } });
    assert.equal(staging.status, 401);
    assert.deepEqual(probe.calls, [], 'the store was never asked');
    // A well-formed key does reach the store (so the probe works): here it throws, hence 500.
    assert.equal((await app.request('GET', '/v1/pets', { key })).status, 500);
    assert.equal(probe.calls.length, 1);
  });

  for (const backend of backends) {
    test(`when the ${backend.name} store is closed, then a key with a bad checksum still gets 401 (not 503 or 500), while a well-formed key fails on the store`, async (t) => {
      const app = await startApp(t, { backend });
      const { key } = await app.createAccount();
      await app.store.close();
      const bad = await app.request('GET', '/v1/pets', { headers: { authorization: `Bearer ${withBadChecksum(key)}` } });
      assert.equal(bad.status, 401, bad.text);
      assert.equal((bad.body as ErrorBody).code, 'unauthorized');
      assert.match(bad.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      const good = await app.request('GET', '/v1/pets', { key });
      assert.ok(good.status >= 500, `the control request reached the closed store: ${good.status}`);
    });
  }

  test(
    'when the SQLite store is unavailable (closed), then a request that needs it gets 503 service_unavailable with Retry-After, as the README promises, not 500',
    async (t) => {
      const app = await startApp(t);
      const { key } = await app.createAccount();
      await app.store.close();
      const res = await app.request('GET', '/v1/pets', { key });
      assert.equal(res.status, 503, res.text);
      assert.equal((res.body as ErrorBody).code, 'service_unavailable');
      assert.ok(res.headers.get('retry-after'));
    },
  );

  test('when a key is presented, then the store is asked only for its SHA-256 hash, and no store call ever receives the key', async (t) => {
    const app = await startApp(t);
    const { key, accountId } = await app.createAccount();
    const seen: string[] = [];
    // Every repository method a request can reach with key material at hand, under the store's former names.
    const calls: Array<[keyof Store, string, string]> = [
      ['apiKeys', 'findByHash', 'findApiKeyByHash'], ['apiKeys', 'create', 'createApiKey'], ['apiKeys', 'list', 'listApiKeys'],
      ['apiKeys', 'revoke', 'revokeApiKey'], ['accounts', 'get', 'getAccount'], ['pets', 'create', 'createPet'], ['pets', 'get', 'getPet'],
      ['pets', 'list', 'listPets'], ['pets', 'insert', 'insertPet'], ['idempotency', 'insertClaim', 'insertIdempotencyClaim'],
      ['idempotency', 'lock', 'lockIdempotencyKey'], ['idempotency', 'complete', 'completeIdempotencyKey'], ['events', 'append', 'appendEvents'],
    ];
    for (const [repository, method, name] of calls) {
      const target = app.store[repository] as unknown as Record<string, unknown>;
      const original = target[method];
      if (typeof original !== 'function') continue;
      target[method] = async (...args: unknown[]) => {
        // A transaction handle is not an argument worth printing.
        seen.push(`${name} ${JSON.stringify(args.filter((arg) => typeof arg !== 'object' || arg === null || !('run' in arg)))}`);
        return (original as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    }
    const created = await app.services.apiKeys.create(accountId);
    await app.request('GET', '/v1/pets', { key });
    await app.request('POST', '/v1/pets', { key: created.key, body: { name: 'Rex', categoryId: 1 } });
    await app.request('GET', '/v1/pets', { key: `${key.slice(0, 9)}${'A'.repeat(30)}${key.slice(39)}` });
    const lookups = seen.filter((s) => s.startsWith('findApiKeyByHash'));
    assert.deepEqual(lookups.slice(0, 2), [`findApiKeyByHash ${JSON.stringify([sha256(key)])}`, `findApiKeyByHash ${JSON.stringify([sha256(created.key)])}`]);
    assertNoKeyMaterial(seen.join('\n'), [key, created.key], 'store call arguments');
  });

  test('when /metrics is scraped after keys were used, then it holds no key material', async (t) => {
    const app = await startApp(t);
    const { key } = await app.createAccount();
    await app.request('GET', '/v1/pets', { key });
    await app.request('GET', '/v1/pets', { key: withBadChecksum(key) });
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    assert.match(metrics, /petstore_http_requests_total/);
    assertNoKeyMaterial(metrics, [key], '/metrics');
  });
});
