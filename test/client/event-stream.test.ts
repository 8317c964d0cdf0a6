// @petstore/client's events.stream() against the real server on each store: events in order
// from `after`, the type filter, a connection cut mid-stream (the server drops every
// connection) resumed without gap or repeat, a stream "from now" cut before its first event
// resumed from where it started, refusals thrown, and `signal` ending the iteration. ~5 s a store.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Event, Petstore } from '@petstore/client';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { petstoreError } from './helpers.js';

for (const backend of backends) {
  describe(`@petstore/client events.stream against the real server (${backend.name})`, () => {
    // Registered before sharedApp's close: undici opens a spare connection after a stream is
    // cancelled and, with no request on it, the server's close would wait for its keep-alive timeout (72 s).
    after(() => app?.app.server.closeAllConnections());
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
