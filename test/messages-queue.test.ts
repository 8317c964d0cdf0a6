// The example API's durable queue, with real processes: a message accepted (202) before a
// SIGKILL is delivered after the restart; workers of a --workers cluster (SQLite) and two
// instances on one PostgreSQL share a backlog with every message delivered exactly once
// (counted by the workers that moved it) and no job left behind.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createServices } from '../src/services/index.js';
import { createStore } from '../src/store/index.js';
import { startApp } from './helpers/app.js';
import { type Backend, backends, postgresBackend, sqliteBackend } from './helpers/backends.js';
import { createFixture, type Fixture, killAndDrop, type ServerChild, startServer } from './helpers/durability.js';
import { startServerProcess } from './helpers/process.js';
import { storeConfig } from './helpers/store-config.js';

type Message = { id: string; status: string; deliveredAt?: string };

async function send(url: string, key: string, text: string): Promise<Message | undefined> {
  try {
    const res = await fetch(`${url}/example/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: text }),
      signal: AbortSignal.timeout(10_000),
    });
    return res.status === 202 ? ((await res.json()) as Message) : undefined;
  } catch {
    return undefined;
  }
}

/** Eight clients sending messages until stopped (or until the server is gone); what got a 202. */
function startSending(url: string, key: string): { accepted: Message[]; stop(): Promise<Message[]> } {
  const accepted: Message[] = [];
  let stopped = false;
  const senders = Array.from({ length: 8 }, async (_, w) => {
    for (let n = 0; !stopped; n++) {
      const message = await send(url, key, `w${w}-${n}`);
      if (!message) return;
      accepted.push(message);
    }
  });
  return {
    accepted,
    async stop() {
      stopped = true;
      await Promise.all(senders);
      return accepted;
    },
  };
}

async function allMessages(url: string, key: string): Promise<Message[]> {
  const messages: Message[] = [];
  let next: string | undefined = '/example/v1/messages?limit=100';
  while (next) {
    const res = await fetch(url + next, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    messages.push(...((await res.json()) as Message[]));
    next = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return messages;
}

/** Waits until no message is queued; returns them all. */
async function drained(url: string, key: string, timeoutMs: number): Promise<Message[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const messages = await allMessages(url, key);
    if (!messages.some((m) => m.status === 'queued')) return messages;
    assert.ok(Date.now() < deadline, `${messages.filter((m) => m.status === 'queued').length} still queued after ${timeoutMs} ms`);
    await sleep(100);
  }
}

async function jobsLeft(backend: Backend['name'], url: string): Promise<number> {
  if (backend === 'sqlite') {
    const db = new Database(url, { readonly: true });
    try {
      return db.prepare<[], { n: number }>('SELECT count(*) AS n FROM jobs').get()!.n;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs')).rows[0]!.n;
  } finally {
    await client.end();
  }
}

const deliveredCount = (metrics: string) => Number(/^petstore_messages_delivered_total (\d+)$/m.exec(metrics)?.[1] ?? NaN);

describe('the message queue across processes', { concurrency: true }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when the server is killed while messages are queued and being delivered, then after the restart every accepted message is delivered and no job is left`, { timeout: 120_000 }, async (t) => {
      const fixture: Fixture = await createFixture(backend);
      let server: ServerChild | undefined;
      t.after(() => killAndDrop(fixture, server));
      server = await startServer(fixture.env);
      const url = server.url;
      const sending = startSending(url, fixture.key);
      while (sending.accepted.length < 20) await sleep(5);
      await sleep(100 + Math.floor(Math.random() * 200));
      server.kill('SIGKILL');
      await server.exited;
      const accepted = await sending.stop();

      server = await startServer(fixture.env);
      // A job leased by the dead process comes due again when its lease (5 s) ends.
      const messages = await drained(server.url, fixture.key, 15_000);
      const byId = new Map(messages.map((m) => [m.id, m]));
      for (const m of accepted) assert.equal(byId.get(m.id)?.status, 'delivered', `accepted message ${m.id} is delivered`);
      assert.ok(messages.every((m) => m.status === 'delivered'), 'nothing failed');
      assert.equal(await jobsLeft(backend.name, fixture.url), 0, 'no job left');
      t.diagnostic(`${backend.name}: ${accepted.length} messages accepted before the kill, ${messages.length} stored, all delivered after the restart`);
    });
  }

  it('sqlite: when SIGTERM arrives while messages are being sent and delivered, then the process exits 0 and after the restart every accepted message is delivered', { timeout: 120_000 }, async (t) => {
    const fixture = await createFixture(sqliteBackend);
    let server: ServerChild | undefined;
    t.after(() => killAndDrop(fixture, server));
    server = await startServer(fixture.env);
    const url = server.url;
    const sending = startSending(url, fixture.key);
    while (sending.accepted.length < 20) await sleep(5);
    server.kill('SIGTERM');
    const exit = await server.exited;
    const accepted = await sending.stop();
    assert.equal(exit.code, 0, `exit ${exit.code ?? exit.signal}: ${server.messages.slice(-5).join(' | ')}`);
    server = await startServer(fixture.env);
    const messages = await drained(server.url, fixture.key, 15_000);
    const byId = new Map(messages.map((m) => [m.id, m]));
    for (const m of accepted) assert.equal(byId.get(m.id)?.status, 'delivered', `accepted message ${m.id} is delivered`);
    assert.equal(await jobsLeft('sqlite', fixture.url), 0);
  });

  it('sqlite: when two --workers share a backlog, then every message is delivered once, by one of them', { timeout: 120_000 }, async (t) => {
    const database = await sqliteBackend.createDatabase();
    t.after(() => database.drop());
    await backlog(t, database.url, 300);
    const server = await startServerProcess({ PETSTORE_DATABASE_URL: database.url, PETSTORE_LOG_LEVEL: 'info', PORT: '0' }, ['serve', '--workers', '2']);
    t.after(() => server.stop('SIGKILL'));
    const key = await keyOf(database.url);
    const messages = await drained(server.url, key, 20_000);
    assert.equal(messages.length, 300);
    // The cluster's /metrics sums the workers' counters: a message moved twice would count twice.
    assert.equal(deliveredCount(await (await fetch(`${server.url}/metrics`)).text()), 300);
    assert.equal(await jobsLeft('sqlite', database.url), 0);
  });

  it('postgres: when two instances share a backlog of 1000 messages, then both work on it and every message is delivered exactly once', { skip: backends.includes(postgresBackend) ? false : 'set PETSTORE_TEST_POSTGRES_URL', timeout: 120_000 }, async (t) => {
    const database = await postgresBackend.createDatabase();
    const cleanups: Array<() => unknown> = [() => database.drop()];
    t.after(async () => {
      for (const fn of cleanups.reverse()) await fn();
    });
    const scope = { after: (fn: () => unknown) => void cleanups.push(fn) };
    await backlog(t, database.url, 1000);
    const started = Date.now();
    const [a, b] = await Promise.all([startApp(scope, { backend: postgresBackend, databaseUrl: database.url }), startApp(scope, { backend: postgresBackend, databaseUrl: database.url })]);
    const deadline = Date.now() + 30_000;
    while ((await a.store.messages.queueStats()).depth > 0) {
      assert.ok(Date.now() < deadline, 'the backlog drains within 30 s');
      await sleep(100);
    }
    const counts = [deliveredCount(await (await fetch(`${a.url}/metrics`)).text()), deliveredCount(await (await fetch(`${b.url}/metrics`)).text())];
    assert.equal(counts[0]! + counts[1]!, 1000, `delivered by each: ${counts.join(' + ')}`);
    assert.ok(counts.every((n) => n > 0), `both instances took work: ${counts.join(' + ')}`);
    assert.equal(await jobsLeft('postgres', database.url), 0);
    t.diagnostic(`1000 messages drained by two instances in ${Date.now() - started} ms (${counts.join(' + ')})`);
  });
});

/** `count` queued messages of one account, written through the store with no worker running. */
async function backlog(t: TestContext, url: string, count: number): Promise<void> {
  const store = await createStore(storeConfig(url, { pgPoolMax: 8 }));
  try {
    await store.migrate();
    const services = await createServices({ store, clock: { now: () => Date.now() }, environment: 'production' });
    const account = await services.accounts.create('Backlog');
    await services.apiKeys.create(account.id);
    // No more at once than the pool holds: a call waiting 2 s for a connection fails by design.
    for (let i = 0; i < count; i += 8) {
      await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, j) => services.messages.send(account.id, `backlog ${i + j}`)));
    }
    assert.equal((await store.messages.queueStats()).depth, count);
  } finally {
    await store.close();
  }
  t.diagnostic(`${count} messages queued`);
}

/** A new key for the backlog's account (keys are shown once: make another). */
async function keyOf(url: string): Promise<string> {
  const store = await createStore(storeConfig(url, { pgPoolMax: 1 }));
  try {
    const services = await createServices({ store, clock: { now: () => Date.now() }, environment: 'production' });
    const [account] = await (async () => {
      const db = new Database(url, { readonly: true });
      try {
        return db.prepare<[], { id: string }>("SELECT id FROM accounts WHERE name = 'Backlog'").all();
      } finally {
        db.close();
      }
    })();
    return (await services.apiKeys.create(account!.id)).key;
  } finally {
    await store.close();
  }
}
