// The message repository's and the job queue's contracts: every backend must behave the same
// through them (real databases, no mocks; PostgreSQL runs when PETSTORE_TEST_POSTGRES_URL is
// set). The rules that use them: services/messages.ts and message-worker.ts (test/http/messages).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StoredMessage } from '../src/store/messages.js';
import type { Store } from '../src/store/types.js';
import { backends } from './helpers/backends.js';
import { Rollback, storeWithAccounts, T0 } from './helpers/stores.js';

const T1 = '2024-05-02T00:00:00.000Z';

const insert = (store: Store, accountId: string, id: string, createdAt = T0) =>
  store.db.transaction((tx) => store.messages.insert(tx, accountId, { id, message: `text of ${id}`, createdAt }));

for (const backend of backends) {
  describe(`${backend.name}: messages repository`, () => {
    it('when messages are inserted, then each account numbers its own from 1, queued, and get and getBySeq return them to their account only', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      const first = await insert(store, a!.id, 'msg_a1');
      const second = await insert(store, a!.id, 'msg_a2', T1);
      const theirs = await insert(store, b!.id, 'msg_b1');
      assert.deepEqual(first, { seq: 1, id: 'msg_a1', message: 'text of msg_a1', status: 'queued', createdAt: T0 });
      assert.deepEqual(second, { seq: 2, id: 'msg_a2', message: 'text of msg_a2', status: 'queued', createdAt: T1 });
      assert.equal(theirs.seq, 1);
      assert.deepEqual(await store.messages.get(a!.id, 'msg_a2'), second);
      assert.deepEqual(await store.messages.getBySeq(a!.id, 1), first);
      assert.deepEqual(await store.messages.getBySeq(b!.id, 1), theirs);
      assert.equal(await store.messages.get(b!.id, 'msg_a1'), undefined, "another account's message");
      assert.equal(await store.messages.getBySeq(b!.id, 2), undefined);
      assert.equal(await store.messages.get(a!.id, 'msg_none'), undefined);
    });

    it('when a transaction that inserted a message rolls back, then the message is gone and its seq is handed out again', async (t) => {
      const { store, accounts: [a] } = await storeWithAccounts(t, backend, 1);
      await assert.rejects(
        store.db.transaction(async (tx) => {
          await store.messages.insert(tx, a!.id, { id: 'msg_gone', message: 'x', createdAt: T0 });
          throw new Rollback();
        }),
        Rollback,
      );
      assert.equal(await store.messages.get(a!.id, 'msg_gone'), undefined);
      assert.equal((await insert(store, a!.id, 'msg_kept')).seq, 1);
    });

    it('when messages are listed, then they come oldest first after afterSeq, at most limit, filtered by status, of that account only', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      const messages: StoredMessage[] = [];
      for (let i = 1; i <= 5; i++) messages.push(await insert(store, a!.id, `msg_${i}`));
      await store.db.transaction((tx) => store.messages.finish(tx, [{ accountId: a!.id, seq: 2 }, { accountId: a!.id, seq: 4 }], { status: 'delivered', deliveredAt: T1 }));
      const delivered = [await store.messages.getBySeq(a!.id, 2), await store.messages.getBySeq(a!.id, 4)];
      assert.deepEqual(await store.messages.list({ accountId: a!.id, limit: 10 }), [messages[0], delivered[0], messages[2], delivered[1], messages[4]]);
      assert.deepEqual((await store.messages.list({ accountId: a!.id, limit: 2, afterSeq: 1 })).map((m) => m.seq), [2, 3]);
      assert.deepEqual(await store.messages.list({ accountId: a!.id, limit: 10, status: 'delivered' }), delivered);
      assert.deepEqual((await store.messages.list({ accountId: a!.id, limit: 10, status: 'queued', afterSeq: 1 })).map((m) => m.seq), [3, 5]);
      assert.deepEqual(await store.messages.list({ accountId: b!.id, limit: 10 }), []);
    });

    it('when messages finish, then only those still queued move (delivered with its time, failed with its reason), once, and the count says how many', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      const m1 = await insert(store, a!.id, 'msg_1');
      const m2 = await insert(store, a!.id, 'msg_2');
      const m3 = await insert(store, b!.id, 'msg_3');
      const finish = (refs: Array<{ accountId: string; seq: number }>, outcome: Parameters<Store['messages']['finish']>[2]) =>
        store.db.transaction((tx) => store.messages.finish(tx, refs, outcome));
      assert.equal(await finish([], { status: 'delivered', deliveredAt: T1 }), 0);
      assert.equal(await finish([{ accountId: a!.id, seq: 1 }, { accountId: b!.id, seq: 1 }], { status: 'delivered', deliveredAt: T1 }), 2);
      assert.deepEqual(await store.messages.getBySeq(a!.id, 1), { ...m1, status: 'delivered', deliveredAt: T1 });
      assert.deepEqual(await store.messages.getBySeq(b!.id, 1), { ...m3, status: 'delivered', deliveredAt: T1 });
      assert.equal(await finish([{ accountId: a!.id, seq: 1 }, { accountId: a!.id, seq: 2 }], { status: 'failed', failureReason: 'no luck' }), 1, 'a delivered message stays delivered');
      assert.deepEqual(await store.messages.getBySeq(a!.id, 1), { ...m1, status: 'delivered', deliveredAt: T1 });
      assert.deepEqual(await store.messages.getBySeq(a!.id, 2), { ...m2, status: 'failed', failureReason: 'no luck' });
      assert.equal(await finish([{ accountId: a!.id, seq: 2 }, { accountId: a!.id, seq: 9 }], { status: 'delivered', deliveredAt: T1 }), 0);
    });

    it('when messages are queued, then queueStats counts those of every account still queued, with the oldest one\'s time', async (t) => {
      const { store, accounts: [a, b] } = await storeWithAccounts(t, backend, 2);
      assert.deepEqual(await store.messages.queueStats(), { depth: 0, oldestCreatedAt: undefined });
      await insert(store, a!.id, 'msg_1', T1);
      await insert(store, b!.id, 'msg_2', T0);
      await insert(store, a!.id, 'msg_3', T1);
      assert.deepEqual(await store.messages.queueStats(), { depth: 3, oldestCreatedAt: T0 });
      await store.db.transaction((tx) => store.messages.finish(tx, [{ accountId: b!.id, seq: 1 }], { status: 'failed', failureReason: 'x' }));
      assert.deepEqual(await store.messages.queueStats(), { depth: 2, oldestCreatedAt: T1 });
    });
  });

  describe(`${backend.name}: job queue`, () => {
    const NOW = 1_000_000;
    const LEASE = 5_000;

    it('when jobs are added, then claim leases the due ones of its kind, oldest due first, at most max, counting an attempt', async (t) => {
      const { store, accounts: [a] } = await storeWithAccounts(t, backend, 1);
      await store.db.transaction(async (tx) => {
        await store.jobs.add(tx, 'message.deliver', a!.id, 1, NOW);
        await store.jobs.add(tx, 'message.deliver', a!.id, 2, NOW - 10);
        await store.jobs.add(tx, 'message.deliver', a!.id, 3, NOW + 1);
        await store.jobs.add(tx, 'webhook.deliver', a!.id, 4, NOW - 20);
      });
      const oldest = await store.jobs.claim('message.deliver', NOW, LEASE, 1);
      assert.deepEqual(oldest.map((j) => [j.kind, j.accountId, j.ref, j.attempts]), [['message.deliver', a!.id, 2, 1]], 'the oldest due, at most max');
      assert.deepEqual((await store.jobs.claim('message.deliver', NOW, LEASE, 10)).map((j) => [j.ref, j.attempts]), [[1, 1]], 'due ones only');
      assert.deepEqual(await store.jobs.claim('message.deliver', NOW, LEASE, 10), [], 'leased: nobody else takes them');
      assert.deepEqual((await store.jobs.claim('message.deliver', NOW + 1, LEASE, 10)).map((j) => j.ref), [3]);
      const again = await store.jobs.claim('message.deliver', NOW + LEASE, LEASE, 10);
      assert.deepEqual(again.map((j) => [j.ref, j.attempts]).sort(), [[1, 2], [2, 2]], 'due again when the lease ends');
      assert.deepEqual((await store.jobs.claim('webhook.deliver', NOW, LEASE, 10)).map((j) => [j.kind, j.ref]), [['webhook.deliver', 4]], 'each kind its own');
    });

    it('when a job is given back, then it is due again at retryAt (not before), and a removed job never comes back', async (t) => {
      const { store, accounts: [a] } = await storeWithAccounts(t, backend, 1);
      await store.db.transaction(async (tx) => {
        await store.jobs.add(tx, 'message.deliver', a!.id, 1, NOW);
        await store.jobs.add(tx, 'message.deliver', a!.id, 2, NOW);
      });
      const [one, two] = await store.jobs.claim('message.deliver', NOW, LEASE, 10);
      await store.jobs.retry(one!, 'timeout', NOW + 100);
      assert.deepEqual(await store.jobs.claim('message.deliver', NOW + 99, LEASE, 10), []);
      const again = await store.jobs.claim('message.deliver', NOW + 100, LEASE, 10);
      assert.deepEqual(again.map((j) => [j.id, j.attempts]), [[one!.id, 2]]);
      await store.db.transaction((tx) => store.jobs.remove(tx, [one!.id, two!.id]));
      await store.db.transaction((tx) => store.jobs.remove(tx, []));
      assert.deepEqual(await store.jobs.claim('message.deliver', NOW + 10 * LEASE, LEASE, 10), []);
    });

    it('when claims run at once, then no job is leased to two of them', async (t) => {
      const { store, accounts: [a], another } = await storeWithAccounts(t, backend, 1);
      // PostgreSQL: two stores (pools). SQLite: a process has one connection (processes sharing
      // a file: the --workers test in messages-queue.test.ts).
      const other = backend.name === 'postgres' ? await another() : store;
      await store.db.transaction(async (tx) => {
        for (let ref = 1; ref <= 40; ref++) await store.jobs.add(tx, 'message.deliver', a!.id, ref, NOW);
      });
      const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).jobs.claim('message.deliver', NOW, LEASE, 4)));
      const refs = claims.flat().map((j) => j.ref);
      assert.equal(new Set(refs).size, refs.length, `claimed twice: ${refs.join(',')}`);
      assert.equal(refs.length, 32);
    });
  });
}
