// The event log repository (src/store/<backend>/events.ts over src/store/event-log.ts), on
// every backend: what append writes (numbers, ids, times, data; nothing when rolled back or when
// events are off), how list pages and filters, how get checks ids, what prune counts; SQLite's
// appendMany runs and PostgreSQL's pet-run statement (the pets group commit's two ways in).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { petCreatedEvent } from '../src/services/domain-events.js';
import { MAX_RUN, petRunParams } from '../src/store/event-log.js';
import type { EventRepository, NewEvent } from '../src/store/events.js';
import { createPostgresEvents, petRunsInsertSql } from '../src/store/postgres/events.js';
import { createSqliteEvents } from '../src/store/sqlite/events.js';
import { type Backend, backends } from './helpers/backends.js';
import { repositoryFixture } from './helpers/repositories.js';

const T1 = '2024-05-01T12:00:01.000Z';
const T2 = '2024-05-02T12:00:00.000Z';
const ID = /^evt_[0-9a-f]{12}[0-9a-f]{20}$/;

const event = (type: NewEvent['type'], n: number): NewEvent => ({ type, data: JSON.stringify({ object: { id: n, name: `n${n}` } }) });

function eventsOf(backend: Backend, db: Parameters<typeof createSqliteEvents>[0], enabled = true): EventRepository {
  return backend.name === 'sqlite' ? createSqliteEvents(db, enabled) : createPostgresEvents(db, enabled);
}

/** Rows and events (sum of spans) of an account's log. */
async function logSize(db: Parameters<typeof createSqliteEvents>[0], backend: Backend, accountId: string) {
  const sql = `SELECT count(*) AS rows, COALESCE(sum(span), 0) AS events FROM events WHERE account_id = ${backend.name === 'sqlite' ? '?' : '$1'}`;
  const row = (await db.get<{ rows: number | string; events: number | string }>(sql, [accountId]))!;
  return { rows: Number(row.rows), events: Number(row.events) };
}

for (const backend of backends) {
  describe(`event repository (${backend.name})`, { concurrency: true }, () => {
    it('when events are appended, then they are numbered from the account\'s counter with sequence-carrying ids, stamped, and listed in order per account', async (t) => {
      const { db, accounts: [a, b] } = await repositoryFixture(t, backend);
      const events = eventsOf(backend, db);
      await db.transaction((tx) => events.append(tx, a!, [event('order.placed', 1), event('pet.status_changed', 1)], T1));
      await db.transaction((tx) => events.append(tx, b!, [event('pet.created', 2)], T1));
      await db.transaction((tx) => events.append(tx, a!, [event('pet.created', 3)], T2));
      await db.transaction((tx) => events.append(tx, a!, [], T2));
      const mine = await events.list({ accountId: a!, limit: 10 });
      assert.deepEqual(mine.map((e) => [e.seq, e.type, e.createdAt, e.data]), [
        [1, 'order.placed', T1, event('order.placed', 1).data],
        [2, 'pet.status_changed', T1, event('pet.status_changed', 1).data],
        [3, 'pet.created', T2, event('pet.created', 3).data],
      ]);
      for (const e of mine) {
        assert.match(e.id, ID);
        assert.equal(parseInt(e.id.slice(4, 16), 16), e.seq, 'the id carries the sequence');
      }
      assert.deepEqual((await events.list({ accountId: b! , limit: 10 })).map((e) => e.seq), [1]);
    });

    it('when the appending transaction rolls back, then neither its events nor their numbers are kept', async (t) => {
      const { db, accounts: [a] } = await repositoryFixture(t, backend);
      const events = eventsOf(backend, db);
      await assert.rejects(
        db.transaction(async (tx) => {
          await events.append(tx, a!, [event('pet.created', 1)], T1);
          throw new Error('the change failed');
        }),
        /the change failed/,
      );
      assert.deepEqual(await events.list({ accountId: a!, limit: 10 }), []);
      await db.transaction((tx) => events.append(tx, a!, [event('pet.created', 2)], T1));
      assert.deepEqual((await events.list({ accountId: a!, limit: 10 })).map((e) => e.seq), [1]);
    });

    it('when events are off, then append writes nothing', async (t) => {
      const { db, accounts: [a] } = await repositoryFixture(t, backend);
      const events = eventsOf(backend, db, false);
      await db.transaction((tx) => events.append(tx, a!, [event('pet.created', 1)], T1));
      assert.deepEqual(await events.list({ accountId: a!, limit: 10 }), []);
      assert.deepEqual(await logSize(db, backend, a!), { rows: 0, events: 0 });
    });

    it('when events are listed, then pages start after afterSeq, hold at most limit, and a type mask keeps only its kinds', async (t) => {
      const { db, accounts: [a] } = await repositoryFixture(t, backend);
      const events = eventsOf(backend, db);
      const kinds = ['pet.created', 'order.placed', 'pet.status_changed'] as const;
      await db.transaction((tx) => events.append(tx, a!, Array.from({ length: 9 }, (_, i) => event(kinds[i % 3]!, i + 1)), T1));
      const all = await events.list({ accountId: a!, limit: 100 });
      assert.deepEqual(all.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
      for (let after = 0; after <= 9; after++) assert.deepEqual(await events.list({ accountId: a!, limit: 4, afterSeq: after }), all.slice(after, after + 4), `after ${after}`);
      // Bits: pet.created 1, pet.status_changed 2, order.placed 4.
      assert.deepEqual((await events.list({ accountId: a!, limit: 100, typeMask: 1 | 4 })).map((e) => e.seq), [1, 2, 4, 5, 7, 8]);
      assert.deepEqual((await events.list({ accountId: a!, limit: 2, typeMask: 2, afterSeq: 3 })).map((e) => e.seq), [6, 9]);
      assert.deepEqual(await events.list({ accountId: a!, limit: 100, typeMask: 8 }), []);
    });

    it('when an event is got by id, then only its exact id in its own account finds it; ids made before sequences are found through their index', async (t) => {
      const { db, accounts: [a, b] } = await repositoryFixture(t, backend);
      const events = eventsOf(backend, db);
      await db.transaction((tx) => events.append(tx, a!, [event('pet.created', 1), event('pet.created', 2)], T1));
      const [first, second] = await events.list({ accountId: a!, limit: 10 });
      assert.deepEqual(await events.get(a!, second!.id), second);
      assert.equal(await events.get(a!, second!.id.slice(0, 16) + '0'.repeat(20)), undefined, 'the random digits must match');
      assert.equal(await events.get(b!, first!.id), undefined, 'another account does not see it');
      assert.equal(await events.get(a!, 'evt_' + '0'.repeat(11) + '9' + 'a'.repeat(20)), undefined, 'no such sequence');
      const legacy = 'evt_019aa13e4c00a1b2c3d4e5f6a7b8c9d0e1f2';
      const p = backend.name === 'sqlite' ? ['?', '?', '?', '?', '?', '?'] : ['$1', '$2', '$3', '$4', '$5', '$6'];
      await db.run(`UPDATE accounts SET last_event_seq = 3 WHERE id = ${p[0]}`, [b!]);
      await db.run(`INSERT INTO events (account_id, seq, id, type, created_at, data) VALUES (${p.join(', ')})`, [b!, 3, legacy, 'pet.created', T1, '{"object":{}}']);
      assert.deepEqual(await events.get(b!, legacy), { seq: 3, id: legacy, type: 'pet.created', createdAt: T1, data: '{"object":{}}' });
      assert.equal(await events.get(a!, legacy), undefined);
    });

    it('when old events are pruned, then every account\'s events created before the cutoff go, counted one by one, and younger ones stay', async (t) => {
      const { db, accounts: [a, b] } = await repositoryFixture(t, backend);
      const events = eventsOf(backend, db);
      await db.transaction((tx) => events.append(tx, a!, [event('pet.created', 1), event('pet.created', 2)], T1));
      await db.transaction((tx) => events.append(tx, b!, [event('pet.created', 3)], T1));
      await db.transaction((tx) => events.append(tx, a!, [event('pet.created', 4)], T2));
      assert.equal(await events.prune('2024-05-01T00:00:00.000Z'), 0);
      assert.equal(await events.prune('2024-05-02T00:00:00.000Z'), 3);
      assert.deepEqual((await events.list({ accountId: a!, limit: 10 })).map((e) => e.seq), [3]);
      assert.deepEqual(await events.list({ accountId: b!, limit: 10 }), []);
      assert.equal(await events.prune('2024-05-02T00:00:00.000Z'), 0, 'once');
    });
  });
}

describe('SQLite appendMany', () => {
  const sqlite = backends.find((b) => b.name === 'sqlite')!;
  it('when a chunk interleaves accounts and kinds, then each account\'s consecutive events of one kind are one row (at most MAX_RUN), read as one event each', async (t) => {
    const { db, accounts: [a, b] } = await repositoryFixture(t, sqlite);
    const events = createSqliteEvents(db, true);
    const writes = [
      ...Array.from({ length: MAX_RUN + 2 }, (_, i) => ({ accountId: a!, event: event('pet.created', i + 1), createdAt: i === 0 ? T1 : T2 })),
      { accountId: a!, event: event('order.placed', 1000), createdAt: T2 },
      { accountId: b!, event: event('pet.created', 2000), createdAt: T1 },
      { accountId: b!, event: event('pet.created', 2001), createdAt: T1 },
      { accountId: a!, event: event('pet.created', 3000), createdAt: T2 },
    ];
    await db.transaction((tx) => events.appendMany(tx, writes));
    // a: a run of MAX_RUN, a run of 2, the order, then (after b's run) one more: 4 rows.
    assert.deepEqual(await logSize(db, sqlite, a!), { rows: 4, events: MAX_RUN + 4 });
    assert.deepEqual(await logSize(db, sqlite, b!), { rows: 1, events: 2 });
    const mine = await events.list({ accountId: a!, limit: 1000 });
    assert.deepEqual(mine.map((e) => e.seq), Array.from({ length: MAX_RUN + 4 }, (_, i) => i + 1));
    assert.deepEqual(mine.map((e) => e.data), [...writes.filter((w) => w.accountId === a).map((w) => w.event.data)]);
    // A run is stamped with its first event's time.
    assert.deepEqual([mine[0]!.createdAt, mine[MAX_RUN - 1]!.createdAt, mine[MAX_RUN]!.createdAt], [T1, T1, T2]);
    assert.equal(new Set(mine.map((e) => e.id)).size, mine.length, 'distinct ids');
    for (const e of mine) assert.deepEqual(await events.get(a!, e.id), e);
    assert.equal(await events.prune('2099-01-01T00:00:00.000Z'), MAX_RUN + 6, 'pruning counts events, not rows');
  });
});

describe('PostgreSQL pet runs', () => {
  const postgres = backends.find((b) => b.name === 'postgres');
  it('when a statement inserts petRunParams through petRunsInsertSql, then each account\'s run reads back as petCreatedEvent would write each pet', { skip: !postgres }, async (t) => {
    const { db, accounts: [a, b] } = await repositoryFixture(t, postgres!);
    const events = createPostgresEvents(db, true);
    const batch = [
      { accountId: a!, pet: { name: 'Rex "the" \\ dög', categoryId: 3, status: 'available' as const }, createdAt: T1 },
      { accountId: b!, pet: { name: 'Solo', categoryId: 1 }, createdAt: T2 },
      { accountId: a!, pet: { name: '💡', categoryId: 7 }, createdAt: T2 },
    ];
    // As the group commit's statement: a's pets are ids 41 and 42, b's 1; a's events start at 5.
    await db.run(
      `WITH next AS (SELECT * FROM (VALUES ($1::text, 4::bigint, 2::bigint, 40::bigint), ($2::text, 0::bigint, 1::bigint, 0::bigint)) AS v(account_id, event_base, n, base)),
       ev AS (${petRunsInsertSql('next', 3)}) SELECT 1`,
      [a, b, ...petRunParams(batch)],
    );
    const mine = await events.list({ accountId: a!, limit: 10 });
    assert.deepEqual(mine.map((e) => [e.seq, e.type, e.createdAt, e.data]), [
      [5, 'pet.created', T1, petCreatedEvent({ id: 41, ...batch[0]!.pet }).data],
      [6, 'pet.created', T1, petCreatedEvent({ id: 42, ...batch[2]!.pet }).data],
    ]);
    for (const e of mine) assert.deepEqual(await events.get(a!, e.id), e);
    assert.deepEqual((await events.list({ accountId: b!, limit: 10 })).map((e) => [e.seq, e.data]), [[1, petCreatedEvent({ id: 1, ...batch[1]!.pet }).data]]);
  });
});
