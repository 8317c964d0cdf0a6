// Nothing acknowledged is lost: a real server process (the built dist/) is killed with
// SIGKILL while 32 POST /v1/pets are in flight, restarted on the same store, and every pet
// whose 201 reached the client must be there exactly as returned; the store must pass its own
// integrity check. Several rounds on the same store, per backend.
//
// SIGKILL ends the process, not the machine: the OS keeps what was written, so this checks
// that a 201 is sent only after COMMIT and that a torn batch leaves the store consistent.
// That COMMIT reaches the disk (fsync) is synchronous=FULL's job on SQLite; the fsync count
// per request can be seen with `node --import tsx test/helpers/write-throughput.ts --count-fsyncs`.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreUnavailableError } from '../src/errors.js';
import type { NewPet, Pet } from '../src/schemas/index.js';
import { createStore } from '../src/store/index.js';
import { backends } from './helpers/backends.js';
import { checkStoreIntegrity, createFixture, type Exit, killAndDrop, type Sent, type ServerChild, startLoad, startServer, verifyPets } from './helpers/durability.js';
import { createPet } from './helpers/store.js';
import { storeConfig } from './helpers/store-config.js';

const ROUNDS = 3;
const CONCURRENCY = 32;
const T0 = '2024-05-01T12:00:00.000Z';

// Group commit batches concurrent createPet calls into one transaction (SQLite) or one
// statement (PostgreSQL); these hold for both stores through the Store interface.
for (const backend of backends) {
  describe(`${backend.name}: concurrent createPet`, () => {
    // SQLite: more than two full batches (GROUP_COMMIT_MAX is 256). PostgreSQL: fewer, as its
    // pool fails a call that waits over 2 s for a connection (StoreUnavailableError).
    const count = backend.name === 'sqlite' ? 600 : 100;
    it(`when ${count} creates run at once and some violate a constraint, then only those reject and every other pet is committed as returned`, async (t) => {
      const database = await backend.createDatabase();
      const store = await createStore(storeConfig(database.url, { pgPoolMax: 10 }));
      t.after(async () => {
        await store.close();
        await database.drop();
      });
      await store.migrate();
      const account = { id: 'acct_group', name: 'Group commit', createdAt: T0 };
      await store.accounts.create(account);
      const badAccount = (i: number) => i % 50 === 7;
      const badStatus = (i: number) => i % 77 === 3;
      const calls = Array.from({ length: count }, (_, i) => {
        const pet = (badStatus(i) ? { name: `P${i}`, categoryId: i + 1, status: 'lost' } : { name: `P${i}`, categoryId: i + 1, status: 'sold' }) as NewPet;
        return createPet(store, badAccount(i) ? 'acct_unknown' : account.id, pet, T0);
      });
      const settled = await Promise.allSettled(calls);
      const created: Pet[] = [];
      settled.forEach((outcome, i) => {
        if (badAccount(i) || badStatus(i)) {
          assert.equal(outcome.status, 'rejected', `call ${i} violates a constraint`);
          const reason: unknown = outcome.status === 'rejected' ? outcome.reason : undefined;
          assert.ok(reason instanceof Error && !(reason instanceof StoreUnavailableError), `call ${i}: ${String(reason)}`);
        } else {
          assert.equal(outcome.status, 'fulfilled', `call ${i}: ${outcome.status === 'rejected' ? String(outcome.reason) : ''}`);
          if (outcome.status === 'fulfilled') {
            assert.deepEqual(outcome.value, { id: outcome.value.id, name: `P${i}`, categoryId: i + 1, status: 'sold' });
            created.push(outcome.value);
          }
        }
      });
      assert.equal(new Set(created.map((p) => p.id)).size, created.length, 'ids are unique');
      // Group commit on both stores, one queue: ids follow the order of the calls.
      assert.deepEqual(created.map((p) => p.id), [...created.map((p) => p.id)].sort((a, b) => a - b));
      // Read back through another store (another connection): committed, not just visible to ours.
      const other = await createStore(storeConfig(database.url, { pgPoolMax: 1 }));
      try {
        const listed = await other.pets.list({ accountId: account.id, limit: 1000 });
        assert.deepEqual(listed, [...created].sort((a, b) => a.id - b.id));
      } finally {
        await other.close();
      }
      t.diagnostic(`${backend.name}: ${created.length} of ${count} concurrent creates committed, ${count - created.length} rejected alone`);
    });

    {
      it('when the store is closed with creates still queued, then they are committed before close resolves', async (t) => {
        const database = await backend.createDatabase();
        t.after(() => database.drop());
        const store = await createStore(storeConfig(database.url, { pgPoolMax: 1 }));
        await store.migrate();
        await store.accounts.create({ id: 'acct_close', name: 'Close', createdAt: T0 });
        const calls = Array.from({ length: 10 }, (_, i) => createPet(store, 'acct_close', { name: `Late ${i}`, categoryId: 1 }, T0));
        await store.close();
        const created = await Promise.all(calls);
        const reopened = await createStore(storeConfig(database.url, { pgPoolMax: 1 }));
        try {
          assert.deepEqual(await reopened.pets.list({ accountId: 'acct_close', limit: 100 }), created);
          await assert.rejects(createPet(store, 'acct_close', { name: 'After close', categoryId: 1 }, T0));
        } finally {
          await reopened.close();
        }
      });
    }
  });
}

// The backends run side by side: each round restarts a server, and that is most of the time.
describe('SIGKILL under write load', { concurrency: true }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when the server is killed mid-load ${ROUNDS} times, then every acknowledged pet is stored exactly as returned, no id is ever reused, and the store is intact`, { timeout: 180_000 }, async (t) => {
      // Two accounts under load at once: each numbers its own pets.
      const fixture = await createFixture(backend, 1);
      const accounts = [{ key: fixture.key, prefix: 'a' }, { key: fixture.others[0]!.key, prefix: 'b' }].map((a) => ({
        ...a,
        sent: new Map<string, Sent>(),
        acknowledgedTotal: 0,
        /** The highest id stored after the last restart: every later 201 must be above it. */
        maxStoredId: 0,
        verified: { stored: 0, acknowledged: 0, committedWithoutResponse: 0, notCommitted: 0, maxId: 0 },
      }));
      let server: ServerChild | undefined;
      t.after(() => killAndDrop(fixture, server));
      server = await startServer(fixture.env);

      for (let round = 1; round <= ROUNDS; round++) {
        const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
        const before = accounts.map((a) => new Set(a.sent.keys()));
        const loads = accounts.map((a) =>
          startLoad(server!.url, a.key, {
            concurrency: CONCURRENCY / 2,
            prefix: `${backend.name}-${a.prefix}-r${round}`,
            agent,
            sent: a.sent,
            // Once the process is gone every request fails; a failure means it is gone.
            stopOn: (outcome) => outcome.kind === 'error',
          }),
        );
        await Promise.race([Promise.all(loads.map((l) => l.firstCreated)), sleep(10_000).then(() => assert.fail('no 201 within 10 s'))]);
        const delay = 50 + Math.floor(Math.random() * 450);
        await sleep(delay);
        const inFlight = loads.reduce((n, l) => n + l.inFlight(), 0);
        server.kill('SIGKILL');
        const exit: Exit = await server.exited;
        await Promise.all(loads.map((l) => l.done));
        agent.destroy();
        assert.equal(exit.signal, 'SIGKILL');
        assert.ok(inFlight > 0, 'requests were in flight when the process was killed');

        server = await startServer(fixture.env);
        const summary: string[] = [];
        for (const [i, account] of accounts.entries()) {
          const roundSent = [...account.sent.entries()].filter(([name]) => !before[i]!.has(name));
          const acknowledged = roundSent.filter(([, s]) => s.outcome.kind === 'response' && s.outcome.status === 201);
          const otherResponses = roundSent.filter(([, s]) => s.outcome.kind === 'response' && s.outcome.status !== 201);
          assert.deepEqual(otherResponses.map(([name, s]) => [name, s.outcome]), [], 'every answer before the kill was a 201');
          account.acknowledgedTotal += acknowledged.length;
          // Ids after a restart continue above everything stored before it, committed with or
          // without a response: a batch torn by the kill never gives its numbers out again.
          const ids = acknowledged.map(([, s]) => (s.outcome.kind === 'response' ? (s.outcome.body as Pet).id : 0));
          assert.ok(ids.every((id) => id > account.maxStoredId), `round ${round}: ids ${Math.min(...ids)}… after the restart are above ${account.maxStoredId}`);
          account.verified = await verifyPets(server.url, account.key, account.sent);
          assert.equal(account.verified.acknowledged, account.acknowledgedTotal);
          account.maxStoredId = account.verified.maxId;
          summary.push(`${account.prefix}: ${acknowledged.length} acknowledged, ${account.verified.stored} stored (${account.verified.committedWithoutResponse} without a response), ids up to ${account.maxStoredId}`);
        }
        const integrity = await checkStoreIntegrity(fixture, accounts.reduce((n, a) => n + a.verified.stored, 0));
        t.diagnostic(`${backend.name} round ${round}: killed ${delay} ms after the first 201s with ${inFlight} requests in flight; ${summary.join('; ')}; ${integrity}`);
      }
      const total = (field: 'acknowledged' | 'committedWithoutResponse' | 'notCommitted') => accounts.reduce((n, a) => n + a.verified[field], 0);
      t.diagnostic(
        `${backend.name}: ${ROUNDS} rounds, ${total('acknowledged')} acknowledged pets verified present and exact, ` +
          `${total('committedWithoutResponse')} more committed without a response, ${total('notCommitted')} unanswered and not committed, ids unique per account and never reused`,
      );
    });
  }
});
