import assert from 'node:assert/strict';
import { test } from 'node:test';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { StoreUnavailableError } from '../src/errors.js';
import { createStore } from '../src/store/index.js';
import { postgresAdminUrl, postgresBackend, withPostgresAdmin } from './helpers/backends.js';
import { startApp } from './helpers/app.js';
import { storeConfig } from './helpers/store-config.js';

test(
  'when a PostgreSQL database stops accepting connections (55000), then the store reports it unavailable and recovers when it is allowed again',
  { skip: postgresAdminUrl ? false : 'set PETSTORE_TEST_POSTGRES_URL to run it' },
  async (t) => {
    const database = await postgresBackend.createDatabase();
    const name = new URL(database.url).pathname.slice(1);
    const store = await createStore(storeConfig(database.url, { pgPoolMax: 2 }));
    t.after(async () => {
      await withPostgresAdmin((admin) => admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS true`));
      await store.close();
      await database.drop();
    });
    await store.migrate();
    await withPostgresAdmin(async (admin) => {
      await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
    });
    let failure: unknown;
    for (let i = 0; i < 3 && !failure; i++) await store.ping().catch((err: unknown) => (failure = err));
    assert.ok(failure instanceof StoreUnavailableError, `got ${String(failure)}`);
    await withPostgresAdmin((admin) => admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS true`));
    await store.ping();
  },
);

const pgOnly = { skip: postgresAdminUrl ? false : 'set PETSTORE_TEST_POSTGRES_URL to run it' };

test('when a transaction writes to a primary being demoted (25006 read_only_sql_transaction), then the store reports it unavailable and drops the connection', pgOnly, async (t) => {
  const database = await postgresBackend.createDatabase();
  const name = new URL(database.url).pathname.slice(1);
  const store = await createStore(storeConfig(database.url, { pgPoolMax: 2 }));
  t.after(async () => {
    await store.close();
    await database.drop();
  });
  await store.migrate();
  // New sessions of this database are read-only, as every session of a standby is.
  await withPostgresAdmin((admin) => admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} SET default_transaction_read_only = on`));
  await withPostgresAdmin((admin) => admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]));
  const failure = await store.db.transaction((tx) => tx.run("INSERT INTO settings (key, value) VALUES ('failover', 'x')")).then(() => undefined, (err: unknown) => err);
  assert.ok(failure instanceof StoreUnavailableError, `got ${String(failure)}`);
  assert.equal(store.poolStats!().total, 0, 'the read-only session left the pool');
});

test('when the connection is lost during COMMIT of an idempotent create, then 503 service_unavailable with Retry-After says the outcome is unknown, and the same-key retry creates the pet once', pgOnly, async (t) => {
  const app = await startApp(t, { backend: postgresBackend });
  const { key } = await app.createAccount();
  const url = app.config.database.url;
  await slowCommits(url);
  const headers = { 'idempotency-key': 'failover-commit-1' };
  const body = { name: 'Committed?', categoryId: 1 };
  const answer = app.request('POST', '/v1/pets', { key, body, headers });
  await terminateSessionInCommit(url, "query = 'COMMIT'", 'the create reached COMMIT');
  const refused = await answer;
  assert.equal(refused.status, 503);
  assert.equal((refused.body as { code: string }).code, 'service_unavailable');
  assert.match((refused.body as { message: string }).message, /may or may not have been applied.*same Idempotency-Key/);
  assert.match(refused.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
  await withDatabase(url, (db) => db.query('DROP TRIGGER slow_commit ON pets'));
  let retried = await app.request('POST', '/v1/pets', { key, body, headers });
  // The terminated create's claim may still be held for its 2 s lease.
  for (let i = 0; retried.status === 409 && i < 40; i += 1) {
    await sleep(100);
    retried = await app.request('POST', '/v1/pets', { key, body, headers });
  }
  assert.equal(retried.status, 201, JSON.stringify(retried.body));
  const again = await app.request('POST', '/v1/pets', { key, body, headers });
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  const { rows } = await withDatabase(url, (db) => db.query("SELECT id FROM pets WHERE name = 'Committed?'"));
  assert.equal(rows.length, 1, 'created once');
});

test('when the connection is lost while a group commit\'s batch commits (a create without a key), then 503 says the outcome is unknown, not a plain retry', pgOnly, async (t) => {
  const app = await startApp(t, { backend: postgresBackend });
  const { key } = await app.createAccount();
  const url = app.config.database.url;
  // The batch is one statement in a transaction of its own, its commit slowed as a COMMIT's.
  await slowCommits(url);
  const answer = app.request('POST', '/v1/pets', { key, body: { name: 'Batch', categoryId: 1 } });
  await terminateSessionInCommit(url, 'pid <> pg_backend_pid()', 'the batch reached its commit');
  const refused = await answer;
  assert.equal(refused.status, 503, refused.text);
  assert.equal((refused.body as { code: string }).code, 'service_unavailable');
  assert.match((refused.body as { message: string }).message, /may or may not have been applied/);
});

/** A deferred trigger makes every commit that inserted pets take a second: long enough to terminate the session in it. */
const slowCommits = (url: string) =>
  withDatabase(url, (db) => db.query(`
    CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$;
    CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON pets DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();`));

/** Terminates the session sleeping in slowCommits' trigger (`which`: a condition on pg_stat_activity), once it is there. */
async function terminateSessionInCommit(url: string, which: string, reached: string): Promise<void> {
  await withDatabase(url, async (db) => {
    for (let i = 0; ; i += 1) {
      const { rowCount } = await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND ${which} AND wait_event = 'PgSleep'`);
      if (rowCount) break;
      assert.ok(i < 200, reached);
      await sleep(10);
    }
  });
}

async function withDatabase<T>(url: string, work: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

test('when a server sends its FATAL in the same read as the end of the handshake (a dying primary), then a transaction fails with StoreUnavailableError and the process does not crash', async (t) => {
  // A stand-in for a primary dying under a new connection: authentication ok, ready, then
  // "terminating connection due to unexpected postmaster exit", all in one write.
  const message = (type: string, body: Buffer) => {
    const head = Buffer.alloc(5);
    head.write(type, 0);
    head.writeInt32BE(body.length + 4, 1);
    return Buffer.concat([head, body]);
  };
  const fatal = Buffer.concat(['SFATAL', 'C57P01', 'Mterminating connection due to unexpected postmaster exit'].map((f) => Buffer.from(`${f}\0`)).concat(Buffer.from([0])));
  const reply = Buffer.concat([message('R', Buffer.from([0, 0, 0, 0])), message('Z', Buffer.from('I')), message('E', fatal)]);
  const server = net.createServer((socket) => {
    socket.once('data', () => socket.end(reply));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const store = await createStore(storeConfig(`postgres://postgres@127.0.0.1:${port}/postgres`, { pgPoolMax: 1 }));
  t.after(async () => {
    await store.close().catch(() => {});
    server.close();
  });
  for (let i = 0; i < 5; i += 1) {
    const failure = await store.db.transaction((tx) => tx.run('SELECT 1')).then(() => undefined, (err: unknown) => err);
    assert.ok(failure instanceof StoreUnavailableError, `got ${String(failure)}`);
  }
  await sleep(50);
});
