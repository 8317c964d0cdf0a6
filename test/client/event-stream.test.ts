// @petstore/client's events.stream() against the real server on each store: events in order
// from `after`, the type filter, a connection cut mid-stream (the server drops every
// connection) resumed without gap or repeat, a stream "from now" cut before its first event
// resumed from where it started, refusals thrown, and `signal` ending the iteration. ~5 s a store.
// Then: stopped consumers (the client's and petstore listen's) do not hold the server's close.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Event, Petstore } from '@petstore/client';
import { listen } from '../../src/cli/listen.js';
import { sharedApp, startApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { petstoreError } from './helpers.js';

for (const backend of backends) {
  describe(`@petstore/client events.stream against the real server (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env: { PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' } });
    let app: TestApp;
    before(async () => {
      app = await getApp();
    });

    /** Collects events from the iterator in the background until `count` arrived. */
    function collect(iterator: AsyncGenerator<Event>, count: number) {
      const got: Event[] = [];
      const done = (async () => {
        for await (const event of iterator) {
          got.push(event);
          if (got.length === count) break;
        }
      })();
      return { got, done };
    }
    // A plain client: the recording fetch of helpers.ts reads whole bodies, which a stream never ends.
    const newAccountClient = async (_app: TestApp) => {
      const { key } = await app.createAccount();
      return { petstore: new Petstore({ apiKey: key, baseUrl: `${app.url}/v1` }), key };
    };
    const pet = (petstore: Petstore, name: string) => petstore.pets.create({ name, categoryId: 1, status: 'available' });
    const waitForStreams = async (n: number) => {
      for (let i = 0; app.services.eventStreams.openCount() !== n; i++) {
        if (i > 250) throw new Error(`expected ${n} open streams`);
        await sleep(20);
      }
    };

    test('when the connection is cut mid-stream, then the iterator reconnects and resumes after the last event: every event once, in order', async () => {
      const { petstore } = await newAccountClient(app);
      await pet(petstore, 'Before');
      const { got, done } = collect(petstore.events.stream({ after: 0 }), 6);
      await waitForStreams(1);
      await pet(petstore, 'One');
      while (got.length < 2) await sleep(20);
      app.app.server.closeAllConnections();
      await pet(petstore, 'While cut');
      const order = await petstore.orders.place({ petId: (await pet(petstore, 'Three')).id });
      await done;
      assert.deepEqual(got.map((e) => e.sequence), [1, 2, 3, 4, 5, 6]);
      assert.deepEqual(got.slice(0, 4).map((e) => (e.data.object as { name: string }).name), ['Before', 'One', 'While cut', 'Three']);
      assert.equal(got[4]!.type, 'order.placed');
      assert.equal((got[4]!.data.object as { id: number }).id, order.id);
    });

    test('when a stream from now is cut before its first event, then it resumes where it started: an event committed meanwhile still arrives', async () => {
      const { petstore } = await newAccountClient(app);
      await pet(petstore, 'Old');
      const { got, done } = collect(petstore.events.stream({ type: 'pet.created' }), 1);
      await waitForStreams(1);
      app.app.server.closeAllConnections();
      await pet(petstore, 'Meanwhile');
      await done;
      assert.deepEqual(got.map((e) => [e.sequence, (e.data.object as { name: string }).name]), [[2, 'Meanwhile']]);
    });

    test('when the key may not read events, then stream() throws the refusal; when the signal aborts, then the iteration ends', async () => {
      const { petstore } = await newAccountClient(app);
      const restricted = await petstore.apiKeys.create({ scopes: ['pets:read'] });
      const refused = new Petstore({ apiKey: restricted.key, baseUrl: `${app.url}/v1` });
      const error = await petstoreError(refused.events.stream().next());
      assert.equal(error.status, 403);
      assert.equal(error.code, 'insufficient_scope');
      const controller = new AbortController();
      const iterating = collect(petstore.events.stream({ signal: controller.signal }), 10);
      await waitForStreams(1);
      controller.abort();
      await iterating.done;
      assert.deepEqual(iterating.got, []);
      await waitForStreams(0);
    });
  });
}

describe('a stopped stream consumer and the server\'s close', () => {
  test('when events.stream() is aborted and petstore listen stops, then the server\'s close completes at once (their fetch\'s spare connection does not hold it)', async () => {
    const cleanups: Array<() => unknown> = [];
    const app = await startApp({ after: (fn: () => unknown) => cleanups.push(fn) });
    let closed = false;
    try {
      const { key } = await app.createAccount();
      const baseUrl = `${app.url}/v1`;
      const streaming = new AbortController();
      const petstore = new Petstore({ apiKey: key, baseUrl });
      const iterating = (async () => {
        for await (const _event of petstore.events.stream({ signal: streaming.signal })) break;
      })();
      const listening = new AbortController();
      const forwarding = listen({ apiKey: key, baseUrl, forwardTo: 'http://127.0.0.1:9/webhooks', events: undefined, secret: undefined, after: undefined, out: () => undefined, signal: listening.signal });
      for (let i = 0; app.services.eventStreams.openCount() !== 2; i++) {
        assert.ok(i < 250, 'both streams open');
        await sleep(20);
      }
      // undici (Node's fetch) answers an aborted fetch's closed socket by opening a new connection
      // to the server that it never uses (nodejs/undici#5845), one per stream stopped here.
      let spares = 0;
      app.app.server.on('connection', () => spares++);
      streaming.abort();
      listening.abort();
      await Promise.all([iterating, forwarding]);
      for (let i = 0; app.services.eventStreams.openCount() !== 0 || spares < 2; i++) {
        assert.ok(i < 150, `the streams closed (${app.services.eventStreams.openCount()} open) and undici opened its spare connections (${spares} of 2); if undici no longer does, this test has nothing to check`);
        await sleep(20);
      }
      // Such a connection never sends a byte: Node's close() neither counts it idle nor times it out,
      // so it held the close until undici dropped it, after the keep-alive time the server announces (72 s).
      const started = Date.now();
      const closing = app.app.close().then(() => (closed = true));
      await Promise.race([closing, sleep(3000, undefined, { ref: false })]);
      assert.ok(closed, `the server's close still waited after ${Date.now() - started} ms`);
    } finally {
      if (!closed) app.app.server.closeAllConnections();
      for (const fn of cleanups.reverse()) await fn();
    }
  });
});
