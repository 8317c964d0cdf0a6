// A real 503: PostgreSQL (a throwaway cluster, see test/helpers/postgres-cluster.ts) is stopped
// under the running server; the client retries after Retry-After until it is back. Skipped, and
// says so, when the PostgreSQL server binaries are not found.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startApp, type TestApp } from '../helpers/app.js';
import { createThrowawayPostgres, PG_BIN, pgSkip as skip, type ThrowawayPostgres } from '../helpers/postgres-cluster.js';
import { type Attempt, petstoreError, recordingClient } from './helpers.js';

if (skip) process.stderr.write(`Client outage tests skipped: ${skip}.\n`);

describe('@petstore/client and a PostgreSQL outage under the real server', { skip }, () => {
  let cluster: ThrowawayPostgres | undefined;
  let app: TestApp;
  let key: string;
  const cleanups: Array<() => unknown> = [];

  before(async () => {
    cluster = await createThrowawayPostgres(PG_BIN!);
    app = await startApp({ after: (fn: () => unknown) => cleanups.push(fn) }, { databaseUrl: cluster.url });
    ({ key } = await app.createAccount());
  });

  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
    cluster?.destroy();
  });

  test('when the database is down and retries are off, then PetstoreError service_unavailable with status 503, retryAfter and the request id', async () => {
    const { petstore } = recordingClient(app.url, key);
    await petstore.pets.create({ name: 'Before', categoryId: 1 });
    await cluster!.stop();
    const once = recordingClient(app.url, key, { maxRetries: 0 });
    const error = await petstoreError(once.petstore.pets.create({ name: 'Never', categoryId: 1 }));
    assert.deepEqual([error.status, error.code, error.retryAfter, error.requestId], [503, 'service_unavailable', 2, once.attempts[0]!.requestId]);
    assert.equal(once.attempts.length, 1);
  });

  test('when the database comes back while the client waits, then a create and a list are retried until they succeed, the pet created once', async () => {
    let back: Promise<void> | undefined;
    // The first 503 either call sees starts PostgreSQL again; the calls are already waiting out Retry-After.
    const onAnswer = (a: Attempt) => a.status === 503 && (back ??= cluster!.start());
    const creating = recordingClient(app.url, key, { maxRetries: 5, onAnswer });
    const listing = recordingClient(app.url, key, { maxRetries: 5, onAnswer });
    const [pet, page] = await Promise.all([
      creating.petstore.pets.create({ name: 'During', categoryId: 1 }),
      listing.petstore.pets.list(),
    ]);
    await back;
    for (const { attempts } of [creating, listing]) {
      assert.equal(attempts[0]!.status, 503, 'the database was down at first');
      assert.ok([200, 201].includes(attempts.at(-1)!.status!));
      assert.ok(attempts.length >= 2);
      assert.ok(attempts.slice(0, -1).every((a) => a.status === 503 && a.retryAfter === '2'));
    }
    assert.equal(new Set(creating.attempts.map((a) => a.idempotencyKey)).size, 1, 'one key for every attempt');
    assert.equal(page.data[0]?.name, 'Before');
    const names = (await creating.petstore.pets.list()).data.map((p) => p.name);
    assert.deepEqual(names, ['Before', 'During']);
    assert.equal(pet.name, 'During');
  });
});
