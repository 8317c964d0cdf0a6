// Verified API keys remembered in the process on PostgreSQL: a change committed by anyone is
// heard through LISTEN/NOTIFY (migration 6's trigger), and nothing is trusted while the
// listening connection is down. The backstop TTL is set to a minute here, so only the
// notification (or the lost connection) can make a remembered key go.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { systemClock } from '../src/clock.js';
import { UnauthorizedError } from '../src/errors.js';
import { createApiKeyService } from '../src/services/api-keys.js';
import { createPostgresStore } from '../src/store/postgres/index.js';
import { KEY_CHANGES_CHANNEL } from '../src/store/postgres/key-changes.js';
import type { Store } from '../src/store/types.js';
import { type BackendDatabase, postgresAdminUrl, postgresBackend } from './helpers/backends.js';

const skip = postgresAdminUrl ? false : 'set PETSTORE_TEST_POSTGRES_URL to run them';

async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<number> {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > timeoutMs) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await sleep(10);
  }
  return Date.now() - start;
}

describe('API key cache on PostgreSQL', { skip }, () => {
  let database: BackendDatabase;
  let store: Store;
  let admin: pg.Client;
  let apiKeys: ReturnType<typeof createApiKeyService>;
  let accountId: string;

  before(async () => {
    database = await postgresBackend.createDatabase();
    store = createPostgresStore(database.url, { poolMax: 2 });
    await store.migrate();
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    accountId = 'acc_cache';
    await store.accounts.create({ id: accountId, name: 'cache', createdAt: new Date().toISOString() });
    apiKeys = createApiKeyService({ apiKeys: store.apiKeys, accounts: store.accounts, clock: systemClock, environment: 'production', keyCacheTtlMs: 60_000 });
  });

  after(async () => {
    await admin?.end();
    await store?.close();
    await database?.drop();
  });

  /** Authenticates until the key is remembered (the listener connects on first use). */
  async function remembered(key: string): Promise<void> {
    await until('the key is remembered', async () => {
      await apiKeys.authenticate(key);
      return apiKeys.authenticateCached(key) !== undefined;
    });
  }

  test('when another connection revokes a remembered key, then this process forgets it at the commit and refuses it', async () => {
    const { key, id } = await apiKeys.create(accountId);
    await remembered(key);
    // As the CLI or an operator would: plain SQL on another connection.
    await admin.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [id]);
    await until('the revoked key is forgotten', () => apiKeys.authenticateCached(key) === undefined);
    await assert.rejects(apiKeys.authenticate(key), UnauthorizedError);
  });

  test('when another key of the account changes, then a remembered key stays remembered', async () => {
    const kept = await apiKeys.create(accountId);
    const other = await apiKeys.create(accountId);
    await remembered(kept.key);
    await admin.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [other.id]);
    // The notification for the other key arrives and is applied; ours must survive it.
    await admin.query(`SELECT pg_notify($1, $2)`, [KEY_CHANGES_CHANNEL, 'sync-marker']);
    await sleep(200);
    assert.ok(apiKeys.authenticateCached(kept.key), 'a change to another key does not evict this one');
  });

  test('when the listening connection is lost, then nothing is trusted until it listens again, and a revocation made meanwhile is honoured', async () => {
    const { key, id } = await apiKeys.create(accountId);
    const survivor = await apiKeys.create(accountId);
    await remembered(key);
    await remembered(survivor.key);
    const { rows } = await admin.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1',
      [`LISTEN ${KEY_CHANGES_CHANNEL}`],
    );
    assert.equal(rows.length, 1, 'one listening connection');
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    await until('remembered keys are dropped', () => apiKeys.authenticateCached(survivor.key) === undefined);
    // Not heard by anyone: the listener is down.
    await admin.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [id]);
    await assert.rejects(apiKeys.authenticate(key), UnauthorizedError);
    // It reconnects and remembers again.
    await remembered(survivor.key);
    await assert.rejects(apiKeys.authenticate(key), UnauthorizedError);
    assert.equal(apiKeys.authenticateCached(key), undefined);
  });
});

// Its own database: its service listens on a connection of its own, which the tests above count.
describe('API key cache on PostgreSQL: the backstop TTL', { skip }, () => {
  test('when the wall clock steps back, then a remembered key still goes after the backstop TTL (a monotonic clock)', async (t) => {
    const database = await postgresBackend.createDatabase();
    const store = createPostgresStore(database.url, { poolMax: 2 });
    t.after(async () => {
      await store.close();
      await database.drop();
    });
    await store.migrate();
    await store.accounts.create({ id: 'acc_ttl', name: 'ttl', createdAt: new Date().toISOString() });
    const short = createApiKeyService({ apiKeys: store.apiKeys, accounts: store.accounts, clock: systemClock, environment: 'production', keyCacheTtlMs: 300 });
    const { key } = await short.create('acc_ttl');
    await until('the key is remembered', async () => {
      await short.authenticate(key);
      return short.authenticateCached(key) !== undefined;
    });
    const realNow = Date.now;
    const stepped = realNow() - 30_000;
    const since = realNow();
    Date.now = () => stepped + (realNow() - since);
    try {
      await sleep(450);
      assert.equal(short.authenticateCached(key), undefined, 'forgotten 0.3 s after it was read, whatever the wall clock says');
    } finally {
      Date.now = realNow;
    }
  });
});
