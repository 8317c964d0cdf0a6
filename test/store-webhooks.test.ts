// The webhook repository (src/store/webhook-repository.ts over src/store/<backend>/webhooks.ts),
// on every backend, method by method: endpoints (limit, cursor at creation, patch rules,
// rotation, deletion with deliveries and jobs), the fan-out (steps, kinds, runs, disabled
// endpoints), claims (leases, busy endpoints, orphans), attempts' outcomes, manual retries and
// the backlog.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import type { EventType } from '../src/schemas/events.js';
import { createPostgresEvents, petRunsInsertSql } from '../src/store/postgres/events.js';
import { createPostgresWebhooks } from '../src/store/postgres/webhooks.js';
import { createSqliteEvents } from '../src/store/sqlite/events.js';
import { createSqliteWebhooks } from '../src/store/sqlite/webhooks.js';
import { petRunParams } from '../src/store/event-log.js';
import type { AttemptRecord, ClaimedDelivery, NewWebhookEndpointRecord } from '../src/store/webhooks.js';
import { type Backend, backends } from './helpers/backends.js';
import { repositoryFixture } from './helpers/repositories.js';

const T0 = '2024-05-01T12:00:00.000Z';
const T1 = '2024-05-01T12:00:01.000Z';
const T1_MS = Date.parse(T1);
const LEASE_MS = 60_000;

async function webhookFixture(t: TestContext, backend: Backend) {
  const f = await repositoryFixture(t, backend);
  const events = backend.name === 'sqlite' ? createSqliteEvents(f.db, true) : createPostgresEvents(f.db, true);
  const webhooks = backend.name === 'sqlite' ? createSqliteWebhooks(f.db) : createPostgresWebhooks(f.db);
  const append = (accountId: string, types: readonly EventType[], createdAt = T1) =>
    f.db.transaction((tx) => events.append(tx, accountId, types.map((type, i) => ({ type, data: `{"n":${i}}` })), createdAt));
  /** `n` pet.created events as one row, as the pets group commit writes them. */
  const appendRun = async (accountId: string, n: number) => {
    const batch = Array.from({ length: n }, (_, i) => ({ accountId, pet: { name: `p${i}`, categoryId: 1 }, createdAt: T1 }));
    if (backend.name === 'sqlite') {
      await f.db.transaction((tx) => (events as ReturnType<typeof createSqliteEvents>).appendMany(tx, batch.map((b, i) => ({ accountId, event: { type: 'pet.created', data: `{"n":${i}}` }, createdAt: T1 }))));
      return;
    }
    await f.db.run(
      `WITH next AS (UPDATE accounts SET last_event_seq = last_event_seq + $2 WHERE id = $1 RETURNING id AS account_id, last_event_seq - $2 AS event_base, $2::bigint AS n, 0::bigint AS base),
       ev AS (${petRunsInsertSql('next', 3)}) SELECT 1`,
      [accountId, n, ...petRunParams(batch)],
    );
  };
  return { ...f, events, webhooks, append, appendRun };
}

const endpoint = (overrides: Partial<NewWebhookEndpointRecord> = {}): NewWebhookEndpointRecord => ({
  id: `we_${randomBytes(8).toString('hex')}`, url: 'https://example.com/hook', eventMask: -1, description: undefined, secret: 'whsec_one', createdAt: T0, ...overrides,
});

/** Claims, in event order (a claim hands them out in no particular order). */
const inOrder = (claimed: ClaimedDelivery[]) => claimed.sort((x, y) => x.eventSeq - y.eventSeq || x.endpointId.localeCompare(y.endpointId));

const attempt = (d: ClaimedDelivery, outcome: AttemptRecord['outcome'], extra: Partial<AttemptRecord> = {}): AttemptRecord => ({
  jobId: d.jobId, accountId: d.accountId, endpointId: d.endpointId, eventSeq: d.eventSeq, outcome, at: '2024-06-01T00:00:00.000Z', ...extra,
});

for (const backend of backends) {
  describe(`webhook repository (${backend.name})`, { concurrency: true }, () => {
    it('when endpoints are created, then each gets the account\'s next seq, the limit holds under concurrency, and an unknown account gets none', async (t) => {
      const { webhooks, accounts: [a, b] } = await webhookFixture(t, backend);
      const first = await webhooks.createEndpoint(a!, endpoint({ description: 'First' }), 3);
      assert.deepEqual(first, {
        seq: 1, id: first!.id, url: 'https://example.com/hook', eventMask: -1, description: 'First', disabled: false, disabledReason: undefined,
        previousSecretExpiresAt: undefined, createdAt: T0,
      });
      const racing = await Promise.all(Array.from({ length: 5 }, () => webhooks.createEndpoint(a!, endpoint(), 3)));
      assert.deepEqual(racing.filter((e) => e !== undefined).map((e) => e!.seq).sort(), [2, 3]);
      assert.equal((await webhooks.createEndpoint(b!, endpoint(), 3))?.seq, 1, 'per account');
      assert.equal(await webhooks.createEndpoint('acct_unknown', endpoint(), 3), undefined);
      assert.deepEqual(await webhooks.getEndpoint(a!, first!.id), first);
      assert.equal(await webhooks.getEndpoint(b!, first!.id), undefined, 'another account does not see it');
    });

    it('when endpoints are listed, then they come in creation order after afterSeq, at most limit', async (t) => {
      const { webhooks, accounts: [a] } = await webhookFixture(t, backend);
      const made = [];
      for (let i = 0; i < 4; i++) made.push((await webhooks.createEndpoint(a!, endpoint({ url: `https://example.com/${i}` }), 16))!);
      assert.deepEqual(await webhooks.listEndpoints({ accountId: a!, limit: 10 }), made);
      assert.deepEqual(await webhooks.listEndpoints({ accountId: a!, limit: 2, afterSeq: 1 }), made.slice(1, 3));
    });

    it('when an endpoint is patched, then only the given fields change, setting disabled clears the reason, and a re-enabled endpoint skips what it missed', async (t) => {
      const { webhooks, append, accounts: [a] } = await webhookFixture(t, backend);
      const e = (await webhooks.createEndpoint(a!, endpoint({ description: 'Old' }), 16))!;
      assert.deepEqual(await webhooks.updateEndpoint(a!, e.id, {}), e, 'an empty patch reads it');
      const changed = await webhooks.updateEndpoint(a!, e.id, { url: 'https://example.com/new', eventMask: 5, description: null });
      assert.deepEqual(changed, { ...e, url: 'https://example.com/new', eventMask: 5, description: undefined });
      // Disabled by a 410, then re-enabled: the reason goes, and events made meanwhile are not delivered.
      await append(a!, ['pet.created']);
      assert.equal(await webhooks.fanOut(100), 1);
      const [claimed] = await webhooks.claim(Date.now(), LEASE_MS, 10, []);
      await webhooks.record([attempt(claimed!, 'gone', { responseStatus: 410 })]);
      assert.equal((await webhooks.getEndpoint(a!, e.id))!.disabledReason, 'The receiver answered 410 Gone at 2024-06-01T00:00:00.000Z.');
      await append(a!, ['pet.created', 'order.placed']);
      assert.equal(await webhooks.fanOut(100), 0, 'a disabled endpoint is not fanned out to');
      assert.deepEqual(await webhooks.updateEndpoint(a!, e.id, { disabled: false }), { ...changed, disabled: false, disabledReason: undefined });
      assert.equal(await webhooks.fanOut(100), 0, 'what it missed is skipped');
      await append(a!, ['order.placed']);
      assert.equal(await webhooks.fanOut(100), 1);
      assert.deepEqual((await webhooks.listDeliveries({ accountId: a!, endpointId: e.id, limit: 10 })).map((d) => d.eventSeq), [1, 4]);
      assert.equal(await webhooks.updateEndpoint(a!, 'we_unknown', { url: 'https://example.com/x' }), undefined);
    });

    it('when a secret is rotated, then the old one is kept as previous until the given time', async (t) => {
      const { webhooks, accounts: [a, b] } = await webhookFixture(t, backend);
      const e = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      assert.deepEqual(await webhooks.rotateSecret(a!, e.id, 'whsec_two', 1_900_000_000_000), { ...e, previousSecretExpiresAt: 1_900_000_000_000 });
      assert.equal(await webhooks.rotateSecret(b!, e.id, 'whsec_three', 1), undefined);
    });

    it('when events are fanned out, then each enabled endpoint gets a pending delivery per event of its kinds, in steps of at most max, once', async (t) => {
      const { webhooks, events, append, appendRun, accounts: [a, b] } = await webhookFixture(t, backend);
      await append(a!, ['pet.created']);
      const all = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      // Bits: pet.created 1, order.placed 4.
      const orders = (await webhooks.createEndpoint(a!, endpoint({ eventMask: 4 }), 16))!;
      const other = (await webhooks.createEndpoint(b!, endpoint(), 16))!;
      await append(a!, ['order.placed', 'pet.status_changed', 'order.placed']);
      await appendRun(a!, 3);
      await append(b!, ['pet.created']);
      assert.deepEqual(await webhooks.stats(), { pending: 13, oldestCreatedAt: T1 }, 'events past the cursors count as pending');
      // Steps of 4: a's endpoints pass 4 events each, b's its one.
      assert.equal(await webhooks.fanOut(4), 9);
      assert.equal(await webhooks.fanOut(4), 4);
      assert.equal(await webhooks.fanOut(4), 0, 'once');
      const log = await events.list({ accountId: a!, limit: 10 });
      const deliveries = await webhooks.listDeliveries({ accountId: a!, endpointId: all.id, limit: 10 });
      assert.deepEqual(deliveries.map((d) => [d.eventSeq, d.eventId, d.eventType, d.status, d.attempts, d.nextAttemptAt]), log.slice(1).map((e) => [e.seq, e.id, e.type, 'pending', 0, T1]));
      for (const d of deliveries) assert.match(d.id, /^whd_[0-9a-f]{32}$/);
      assert.deepEqual((await webhooks.listDeliveries({ accountId: a!, endpointId: orders.id, limit: 10 })).map((d) => d.eventSeq), [2, 4]);
      assert.deepEqual((await webhooks.listDeliveries({ accountId: b!, endpointId: other.id, limit: 10 })).map((d) => d.eventSeq), [1]);
      assert.deepEqual(await webhooks.listDeliveries({ accountId: b!, endpointId: all.id, limit: 10 }), [], 'another account sees none');
      assert.deepEqual(await webhooks.stats(), { pending: 9, oldestCreatedAt: T1 }, 'the same backlog, now as deliveries with jobs');
    });

    it('when deliveries are listed, then a status filter, afterSeq and limit apply', async (t) => {
      const { webhooks, append, accounts: [a] } = await webhookFixture(t, backend);
      const e = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      await append(a!, ['pet.created', 'pet.created', 'pet.created']);
      await webhooks.fanOut(100);
      const [first] = await webhooks.claim(Date.now(), LEASE_MS, 1, []);
      await webhooks.record([attempt(first!, 'succeeded', { responseStatus: 204 })]);
      const list = (query: { status?: 'pending' | 'succeeded' | 'failed'; afterSeq?: number; limit?: number }) =>
        webhooks.listDeliveries({ accountId: a!, endpointId: e.id, limit: 10, ...query }).then((ds) => ds.map((d) => [d.eventSeq, d.status]));
      assert.deepEqual(await list({ status: 'succeeded' }), [[1, 'succeeded']]);
      assert.deepEqual(await list({ status: 'pending' }), [[2, 'pending'], [3, 'pending']]);
      assert.deepEqual(await list({ status: 'failed' }), []);
      assert.deepEqual(await list({ afterSeq: 1, limit: 1 }), [[2, 'pending']]);
    });

    it('when deliveries are claimed, then each due one is leased once with its endpoint and event, busy endpoints are skipped, and a lease that ends makes it due again', async (t) => {
      const { webhooks, events, append, accounts: [a] } = await webhookFixture(t, backend);
      const one = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      const two = (await webhooks.createEndpoint(a!, endpoint({ secret: 'whsec_two' }), 16))!;
      await webhooks.rotateSecret(a!, two.id, 'whsec_three', 1_900_000_000_000);
      await append(a!, ['pet.created', 'order.placed']);
      await webhooks.fanOut(100);
      const now = Date.now();
      const skipping = inOrder(await webhooks.claim(now, LEASE_MS, 10, [one.id]));
      assert.deepEqual(skipping.map((d) => d.endpointId), [two.id, two.id]);
      const [event] = await events.list({ accountId: a!, limit: 1 });
      assert.match(skipping[0]!.deliveryId, /^whd_[0-9a-f]{32}$/);
      const [listed] = await webhooks.listDeliveries({ accountId: a!, endpointId: two.id, limit: 1 });
      assert.deepEqual(skipping[0], {
        jobId: skipping[0]!.jobId, deliveryId: listed!.id, leasedUntil: now + LEASE_MS, accountId: a!, endpointId: two.id, eventSeq: 1, attempts: 0, singleAttempt: false, url: 'https://example.com/hook', disabled: false,
        secret: 'whsec_three', previousSecret: 'whsec_two', previousSecretExpiresAt: 1_900_000_000_000, event,
      });
      const rest = inOrder(await webhooks.claim(now, LEASE_MS, 10, []));
      assert.deepEqual(rest.map((d) => [d.endpointId, d.eventSeq]), [[one.id, 1], [one.id, 2]]);
      assert.deepEqual(await webhooks.claim(now, LEASE_MS, 10, []), [], 'leased');
      assert.deepEqual((await webhooks.claim(now + LEASE_MS, LEASE_MS, 1, [])).map((d) => d.eventSeq), [1], 'due again when the lease ends, oldest first');
    });

    it('when an account is busy, then claims skip it; a lease is renewed only by its holder, and a released one is due again at once', async (t) => {
      const { webhooks, append, accounts: [a, b] } = await webhookFixture(t, backend);
      const ea = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      const eb = (await webhooks.createEndpoint(b!, endpoint(), 16))!;
      await append(a!, ['pet.created', 'pet.created']);
      await append(b!, ['pet.created']);
      await webhooks.fanOut(100);
      const now = Date.now();
      assert.deepEqual((await webhooks.claim(now, LEASE_MS, 10, [], [a!])).map((d) => d.endpointId), [eb.id], 'the busy account is skipped');
      const [first, second] = inOrder(await webhooks.claim(now, LEASE_MS, 10, []));
      assert.deepEqual([first!.endpointId, second!.endpointId], [ea.id, ea.id]);
      assert.equal(first!.leasedUntil, now + LEASE_MS);

      // The holder renews; a stale holder (its lease ended and was taken) cannot.
      assert.equal(await webhooks.renewLease(first!.jobId, first!.leasedUntil, now + 2 * LEASE_MS), true);
      assert.equal(await webhooks.renewLease(first!.jobId, first!.leasedUntil, now + 3 * LEASE_MS), false, 'the old lease is gone');
      assert.deepEqual(await webhooks.claim(now + LEASE_MS, LEASE_MS, 10, [], [b!]).then((ds) => ds.map((d) => d.eventSeq)), [2], 'the renewed one is still held');
      const [retaken] = await webhooks.claim(now + 2 * LEASE_MS, LEASE_MS, 10, [], [b!]);
      assert.equal(retaken?.eventSeq, 1, 'due again once the renewed lease ended');
      assert.equal(await webhooks.renewLease(first!.jobId, now + 2 * LEASE_MS, now + 4 * LEASE_MS), false, 'taken over: the first holder cannot renew it');

      // Released: due at once, unless another worker holds it by then.
      await webhooks.release([retaken!]);
      const [again] = await webhooks.claim(now + 2 * LEASE_MS, LEASE_MS, 10, [], [b!]);
      assert.equal(again?.eventSeq, 1);
      await webhooks.release([{ jobId: again!.jobId, leasedUntil: 1 }]);
      assert.deepEqual(await webhooks.claim(now + 2 * LEASE_MS, LEASE_MS, 10, [], [b!]), [], 'a release with a stale lease changes nothing');
    });

    it('when a claimed delivery\'s event is gone or the delivery finished meanwhile, then the claim leaves it out and its job is gone', async (t) => {
      const { db, webhooks, append, accounts: [a, b] } = await webhookFixture(t, backend);
      const e = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      await webhooks.createEndpoint(b!, endpoint(), 16);
      await append(a!, ['pet.created', 'pet.created']);
      await append(b!, ['pet.created']);
      await webhooks.fanOut(100);
      assert.equal((await webhooks.stats()).pending, 3);
      // Left behind by a race (a retention pruning the log, another instance finishing the delivery).
      const p = backend.name === 'sqlite' ? ['?', '?'] : ['$1', '$2'];
      await db.run(`DELETE FROM events WHERE account_id = ${p[0]}`, [b!]);
      await db.run(`UPDATE webhook_deliveries SET status = 'succeeded' WHERE endpoint_id = ${p[0]} AND event_seq = ${p[1]}`, [e.id, 2]);
      assert.deepEqual((await webhooks.claim(Date.now(), LEASE_MS, 10, [])).map((d) => [d.accountId, d.eventSeq]), [[a!, 1]]);
      assert.equal((await webhooks.stats()).pending, 1, 'only the claimed one keeps its job');
      assert.deepEqual(await webhooks.claim(Date.now() + LEASE_MS, LEASE_MS, 10, []).then((ds) => ds.map((d) => d.eventSeq)), [1]);
    });

    it('when a finished delivery is recorded again, then it stays as it finished', async (t) => {
      const { webhooks, append, accounts: [a] } = await webhookFixture(t, backend);
      const e = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      await append(a!, ['pet.created']);
      await webhooks.fanOut(100);
      const [d] = await webhooks.claim(Date.now(), LEASE_MS, 10, []);
      await webhooks.record([attempt(d!, 'succeeded', { responseStatus: 200 })]);
      const [before] = await webhooks.listDeliveries({ accountId: a!, endpointId: e.id, limit: 10 });
      await webhooks.record([attempt(d!, 'failed', { error: 'late', at: '2024-07-01T00:00:00.000Z' })]);
      assert.deepEqual(await webhooks.listDeliveries({ accountId: a!, endpointId: e.id, limit: 10 }), [before], 'a delivery finishes once');
    });

    it('when attempts are recorded, then each outcome moves its delivery, its job and its endpoint as the contract says', async (t) => {
      const { webhooks, append, accounts: [a] } = await webhookFixture(t, backend);
      const e = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      await append(a!, ['pet.created', 'pet.created', 'pet.created', 'pet.created']);
      await webhooks.fanOut(100);
      const now = Date.now();
      const [ok, retry, failed, skipped] = inOrder(await webhooks.claim(now, LEASE_MS, 10, []));
      await webhooks.record([
        attempt(ok!, 'succeeded', { responseStatus: 204 }),
        attempt(retry!, 'retry', { responseStatus: 503, error: 'The receiver answered 503.', nextAttemptAt: now + 5000 }),
        attempt(failed!, 'failed', { error: 'connection refused' }),
        attempt(skipped!, 'skipped', { error: 'The endpoint was disabled before this delivery was attempted.' }),
      ]);
      const at = '2024-06-01T00:00:00.000Z';
      const rows = await webhooks.listDeliveries({ accountId: a!, endpointId: e.id, limit: 10 });
      assert.deepEqual(rows.map((d) => [d.status, d.attempts, d.lastAttemptAt, d.lastResponseStatus, d.lastError, d.nextAttemptAt]), [
        ['succeeded', 1, at, 204, undefined, undefined],
        ['pending', 1, at, 503, 'The receiver answered 503.', new Date(now + 5000).toISOString()],
        ['failed', 1, at, undefined, 'connection refused', undefined],
        ['failed', 0, undefined, undefined, 'The endpoint was disabled before this delivery was attempted.', undefined],
      ]);
      assert.deepEqual(await webhooks.stats(), { pending: 1, oldestCreatedAt: T1 }, 'only the retry keeps its job');
      assert.deepEqual(await webhooks.claim(now + 4999, LEASE_MS, 10, []), [], 'not due before its next attempt');
      const [again] = await webhooks.claim(now + 5000, LEASE_MS, 10, []);
      assert.deepEqual([again!.eventSeq, again!.attempts], [2, 1]);
    });

    it('when a delivery is retried by hand, then a finished one gets a single attempt now, a pending one is due now, and one being attempted is left to that attempt', async (t) => {
      const { webhooks, append, accounts: [a, b] } = await webhookFixture(t, backend);
      const e = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      await append(a!, ['pet.created', 'pet.created']);
      await webhooks.fanOut(100);
      const now = Date.now();
      const [done, later] = inOrder(await webhooks.claim(now, LEASE_MS, 10, []));
      await webhooks.record([attempt(done!, 'failed', { error: 'no' }), attempt(later!, 'retry', { error: 'later', nextAttemptAt: now + 3_600_000 })]);
      const [first, second] = await webhooks.listDeliveries({ accountId: a!, endpointId: e.id, limit: 10 });
      const retried = await webhooks.retryDelivery(a!, e.id, first!.id, now + 10);
      assert.deepEqual(retried, { ...first, status: 'pending', nextAttemptAt: new Date(now + 10).toISOString() });
      assert.deepEqual((await webhooks.retryDelivery(a!, e.id, second!.id, now + 10))!.nextAttemptAt, new Date(now + 10).toISOString());
      const due = inOrder(await webhooks.claim(now + 10, LEASE_MS, 10, []));
      assert.deepEqual(due.map((d) => [d.eventSeq, d.singleAttempt, d.attempts]), [[1, true, 1], [2, false, 1]]);
      // Being attempted (leased): the retry changes the delivery, not the lease.
      assert.ok(await webhooks.retryDelivery(a!, e.id, first!.id, now + 20));
      assert.deepEqual(await webhooks.claim(now + 20, LEASE_MS, 10, []), []);
      assert.equal(await webhooks.retryDelivery(b!, e.id, first!.id, now), undefined, 'another account\'s');
      assert.equal(await webhooks.retryDelivery(a!, e.id, 'whd_unknown', now), undefined);
    });

    it('when an endpoint is deleted, then its deliveries and their jobs go with it', async (t) => {
      const { webhooks, append, accounts: [a, b] } = await webhookFixture(t, backend);
      const e = (await webhooks.createEndpoint(a!, endpoint(), 16))!;
      await append(a!, ['pet.created', 'pet.created']);
      await webhooks.fanOut(100);
      assert.equal(await webhooks.deleteEndpoint(b!, e.id), false, 'another account\'s');
      assert.equal((await webhooks.stats()).pending, 2);
      assert.equal(await webhooks.deleteEndpoint(a!, e.id), true);
      assert.equal(await webhooks.deleteEndpoint(a!, e.id), false);
      assert.equal(await webhooks.getEndpoint(a!, e.id), undefined);
      assert.deepEqual(await webhooks.listDeliveries({ accountId: a!, endpointId: e.id, limit: 10 }), []);
      assert.deepEqual(await webhooks.stats(), { pending: 0, oldestCreatedAt: undefined });
      assert.deepEqual(await webhooks.claim(Date.now(), LEASE_MS, 10, []), []);
    });
  });
}
