// @petstore/client's events and webhookEndpoints against the real server on each store, and
// verifyWebhook on real deliveries: a node:http receiver on 127.0.0.1 gets what the server's
// worker sends (the app runs with PETSTORE_WEBHOOK_ALLOW_HTTP and 127.0.0.1/32 allowed).
// verifyWebhook is cross-checked with the standardwebhooks package, a verifier we did not write.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type Event, type Page, PetstoreError, verifyWebhook, type WebhookDelivery } from '@petstore/client';
import { Webhook } from 'standardwebhooks';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { type Attempt, loseAnswer, newAccountClient, petstoreError, type RecordingOptions } from './helpers.js';

const env = {
  PETSTORE_RATE_LIMIT_PER_SECOND: '100000',
  PETSTORE_RATE_LIMIT_BURST: '100000',
  PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
  PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
  // A failed attempt is retried after a minute: within a test, only retryDelivery brings it back.
  PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0,60',
};
const path = (a: Attempt) => new URL(a.url).pathname;
const query = (a: Attempt) => Object.fromEntries(new URL(a.url).searchParams);

interface Received {
  headers: http.IncomingHttpHeaders;
  /** The raw body bytes, as a receiver must verify them. */
  body: Buffer;
}

/** A node:http receiver on 127.0.0.1 that records each delivery and answers `status()` (204 by default). */
async function startReceiver() {
  const received: Received[] = [];
  let status = () => 204;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(status()).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    answer: (next: () => number) => (status = next),
    /** Resolves with the n-th delivery (1-based) once it has arrived. */
    async nth(n: number, timeoutMs = 5000): Promise<Received> {
      for (const deadline = Date.now() + timeoutMs; received.length < n; await new Promise((r) => setTimeout(r, 10))) {
        assert.ok(Date.now() < deadline, `delivery ${n} did not arrive within ${timeoutMs} ms (${received.length} so far)`);
      }
      return received[n - 1]!;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Headers signed by us, as the server signs them (Standard Webhooks), for a chosen timestamp. */
function signedHeaders(secret: string, id: string, timestamp: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` };
}

/** The `invalid_signature` PetstoreError verifyWebhook rejects with. */
async function refused(promise: Promise<Event>): Promise<PetstoreError> {
  const error = await petstoreError(promise);
  assert.equal(error.code, 'invalid_signature', error.message);
  assert.equal(error.status, 0);
  return error;
}

const flat = (headers: http.IncomingHttpHeaders) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)]));

for (const backend of backends) {
  describe(`@petstore/client events and webhook endpoints against the real server (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    let receiver: Receiver;
    before(async () => {
      app = await getApp();
      receiver = await startReceiver();
    });
    after(() => receiver?.close());
    const client = (options: RecordingOptions = {}) => newAccountClient(app, options);

    test('when pets are created and an order placed, then events.list pages them oldest first with nextCursor, and the type and after filters are sent as documented', async () => {
      const { petstore, attempts } = await client();
      const rex = await petstore.pets.create({ name: 'Rex', categoryId: 1, status: 'available' });
      await petstore.pets.create({ name: 'Tom', categoryId: 2 });
      const order = await petstore.orders.place({ petId: rex.id });
      const all: Event[] = [];
      let page: Page<Event> = await petstore.events.list({ limit: 2 });
      for (;;) {
        assert.ok(page.data.length <= 2);
        all.push(...page.data);
        if (page.nextCursor === undefined) break;
        page = await petstore.events.list({ limit: 2, cursor: page.nextCursor });
      }
      assert.deepEqual(all.map((e) => e.sequence), [1, 2, 3, 4], 'one event per change, in commit order');
      assert.deepEqual(all.slice(0, 2).map((e) => e.type), ['pet.created', 'pet.created']);
      assert.deepEqual(new Set(all.slice(2).map((e) => e.type)), new Set(['order.placed', 'pet.status_changed']), 'placing an order: both in one transaction');
      const placed = all.find((e) => e.type === 'order.placed');
      assert.ok(placed?.type === 'order.placed');
      assert.deepEqual(placed.data.object, order);
      const changed = all.find((e) => e.type === 'pet.status_changed');
      assert.ok(changed?.type === 'pet.status_changed');
      assert.equal(changed.data.previousStatus, 'available');
      assert.equal(changed.data.object.status, 'pending');

      attempts.length = 0;
      const created = await petstore.events.list({ type: 'pet.created' });
      assert.deepEqual(created, { data: all.slice(0, 2) });
      const orders = await petstore.events.list({ type: ['order.placed', 'pet.status_changed'], after: 1 });
      assert.deepEqual(orders.data, all.slice(2));
      assert.deepEqual(await petstore.events.list({ after: 4 }), { data: [] });
      assert.deepEqual(attempts.map(query), [{ type: 'pet.created' }, { type: 'order.placed,pet.status_changed', after: '1' }, { after: '4' }]);
      assert.deepEqual(await petstore.events.get(placed.id), placed);
      const missing = await petstoreError(petstore.events.get('evt_00000000000000000000000000000000'));
      assert.deepEqual([missing.status, missing.code], [404, 'not_found']);
      const bad = await petstoreError(petstore.events.list({ type: ['pet.created', 'pet.adopted' as 'pet.created'] }));
      assert.deepEqual([bad.status, bad.code], [400, 'invalid_request']);
    });

    test('when listAll pages through 5 events with limit 2, then each comes once in sequence order, one request per page, and after and type carry through every page', async () => {
      const { petstore, attempts } = await client();
      for (let i = 0; i < 5; i += 1) await petstore.pets.create({ name: `p${i}`, categoryId: 1 });
      attempts.length = 0;
      const seen: Event[] = [];
      for await (const event of petstore.events.listAll({ limit: 2 })) seen.push(event);
      assert.deepEqual(seen.map((e) => e.sequence), [1, 2, 3, 4, 5]);
      assert.deepEqual(seen.map((e) => e.type === 'pet.created' && e.data.object.name), ['p0', 'p1', 'p2', 'p3', 'p4']);
      assert.deepEqual(attempts.map((a) => [a.method, path(a), a.status]), Array(3).fill(['GET', '/v1/events', 200]));
      attempts.length = 0;
      const later: number[] = [];
      for await (const event of petstore.events.listAll({ limit: 2, after: 2, type: ['pet.created'] })) later.push(event.sequence);
      assert.deepEqual(later, [3, 4, 5]);
      assert.deepEqual(attempts.map((a) => Object.keys(query(a)).sort()), [['after', 'limit', 'type'], ['cursor', 'limit', 'type']], 'after starts the listing; the cursor goes on from there');
      const none = petstore.events.listAll({ after: 5 });
      assert.deepEqual(await none.next(), { done: true, value: undefined });
    });

    test('when an endpoint is created, listed, read, changed, rotated and deleted, then each call answers as documented, and secrets appear only on create and rotate', async () => {
      const { petstore, attempts } = await client();
      const created = await petstore.webhookEndpoints.create({ url: receiver.url, eventTypes: ['pet.created'], description: 'Warehouse sync' });
      assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.match(created.id, /^we_/);
      assert.deepEqual(
        { ...created, id: undefined, secret: undefined, createdAt: undefined },
        { id: undefined, secret: undefined, createdAt: undefined, url: receiver.url, eventTypes: ['pet.created'], allEventTypes: false, description: 'Warehouse sync', disabled: false },
      );
      assert.equal(attempts[0]!.idempotencyKey, null, 'the server has no Idempotency-Key here: none is sent');
      const { secret, ...endpoint } = created;
      assert.deepEqual(await petstore.webhookEndpoints.get(created.id), endpoint);
      assert.deepEqual(await petstore.webhookEndpoints.list(), { data: [endpoint] });
      const second = await petstore.webhookEndpoints.create({ url: `${receiver.url}/2` });
      const first = await petstore.webhookEndpoints.list({ limit: 1 });
      assert.deepEqual(first.data, [endpoint]);
      assert.ok(first.nextCursor);
      assert.deepEqual((await petstore.webhookEndpoints.list({ limit: 1, cursor: first.nextCursor })).data.map((e) => e.id), [second.id]);

      const updated = await petstore.webhookEndpoints.update(created.id, { eventTypes: null, description: null, disabled: true });
      const { description: _removed, ...undescribed } = endpoint;
      assert.deepEqual(updated, { ...undescribed, eventTypes: ['pet.created', 'pet.status_changed', 'pet.updated', 'pet.deleted', 'order.placed', 'order.delivered', 'order.cancelled'], allEventTypes: true, disabled: true });
      assert.equal(attempts.at(-1)!.method, 'PATCH');
      const rotated = await petstore.webhookEndpoints.rotateSecret(created.id);
      assert.match(rotated.secret, /^whsec_/);
      assert.notEqual(rotated.secret, secret);
      assert.ok(Date.parse(rotated.previousSecretExpiresAt) > Date.now());
      assert.deepEqual([attempts.at(-1)!.method, path(attempts.at(-1)!), attempts.at(-1)!.idempotencyKey], ['POST', `/v1/webhook-endpoints/${created.id}/rotate-secret`, null]);

      assert.equal(await petstore.webhookEndpoints.delete(created.id), undefined);
      assert.deepEqual([attempts.at(-1)!.method, attempts.at(-1)!.status], ['DELETE', 204]);
      for (const call of [() => petstore.webhookEndpoints.get(created.id), () => petstore.webhookEndpoints.delete(created.id), () => petstore.webhookEndpoints.deliveries(created.id)]) {
        const error = await petstoreError(call());
        assert.deepEqual([error.status, error.code], [404, 'not_found']);
      }
      const refusedUrl = await petstoreError(petstore.webhookEndpoints.create({ url: 'http://10.0.0.1/hooks' }));
      assert.deepEqual([refusedUrl.status, refusedUrl.code], [400, 'invalid_webhook_url']);
    });

    test('when the answer to create is lost, then the client does not repeat it (no Idempotency-Key here): one attempt, a network_error, one endpoint made', async () => {
      const lost = loseAnswer();
      const { petstore, attempts } = await client({ maxRetries: 3, onAnswer: lost.onAnswer });
      lost.armOnce();
      const error = await petstoreError(petstore.webhookEndpoints.create({ url: receiver.url }));
      assert.equal(error.code, 'network_error');
      assert.equal(attempts.length, 1, 'not retried');
      assert.equal((await petstore.webhookEndpoints.list()).data.length, 1, 'the server did make it: a retry would have made a second');
      const { id } = (await petstore.webhookEndpoints.list()).data[0]!;
      lost.armOnce();
      attempts.length = 0;
      assert.equal((await petstoreError(petstore.webhookEndpoints.rotateSecret(id))).code, 'network_error');
      assert.equal(attempts.length, 1, 'a rotation is not repeated either');
      // A PATCH is repeatable: the lost answer is retried and the call succeeds.
      lost.armOnce();
      attempts.length = 0;
      assert.equal((await petstore.webhookEndpoints.update(id, { description: 'again' })).description, 'again');
      assert.deepEqual(attempts.map((a) => a.method), ['PATCH', 'PATCH']);
    });

    test('when a delivery fails, then deliveries shows it pending with the status, and retryDelivery (202) brings the next attempt forward until it succeeds', async () => {
      const { petstore, attempts } = await client();
      const hook = await startReceiver();
      try {
        hook.answer(() => 500);
        const endpoint = await petstore.webhookEndpoints.create({ url: hook.url, eventTypes: ['pet.created'] });
        const pet = await petstore.pets.create({ name: 'Rex', categoryId: 1 });
        await hook.nth(1);
        let pending: WebhookDelivery | undefined;
        for (const deadline = Date.now() + 5000; pending?.lastResponseStatus !== 500; await new Promise((r) => setTimeout(r, 20))) {
          assert.ok(Date.now() < deadline, 'the failed attempt is recorded');
          pending = (await petstore.webhookEndpoints.deliveries(endpoint.id)).data[0];
        }
        assert.equal(pending.status, 'pending');
        assert.equal(pending.attempts, 1);
        assert.equal(pending.eventType, 'pet.created');
        assert.ok(pending.nextAttemptAt && Date.parse(pending.nextAttemptAt) > Date.now() + 30_000, 'next attempt a minute later');
        const event = await petstore.events.get(pending.eventId);
        assert.ok(event.type === 'pet.created');
        assert.deepEqual(event.data.object, pet);
        assert.deepEqual(await petstore.webhookEndpoints.deliveries(endpoint.id, { status: 'succeeded' }), { data: [] });

        hook.answer(() => 204);
        const retried = await petstore.webhookEndpoints.retryDelivery(endpoint.id, pending.id);
        assert.deepEqual([attempts.at(-1)!.status, retried.id, retried.status], [202, pending.id, 'pending']);
        await hook.nth(2);
        let done: WebhookDelivery | undefined;
        for (const deadline = Date.now() + 5000; done?.status !== 'succeeded'; await new Promise((r) => setTimeout(r, 20))) {
          assert.ok(Date.now() < deadline, 'the retried attempt is recorded');
          done = (await petstore.webhookEndpoints.deliveries(endpoint.id, { status: 'succeeded' })).data[0];
        }
        assert.deepEqual([done.attempts, done.lastResponseStatus, done.nextAttemptAt], [2, 204, undefined]);
        assert.equal(hook.received[1]!.headers['webhook-id'], event.id, 'the same webhook-id on every attempt');

        await petstore.webhookEndpoints.update(endpoint.id, { disabled: true });
        const disabled = await petstoreError(petstore.webhookEndpoints.retryDelivery(endpoint.id, pending.id));
        assert.deepEqual([disabled.status, disabled.code], [409, 'webhook_endpoint_disabled']);
      } finally {
        await hook.close();
      }
    });
  });

  describe(`verifyWebhook on real deliveries (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    let receiver: Receiver;
    let secret: string;
    let delivery: Received;
    let event: Event;
    let petstore: Awaited<ReturnType<typeof newAccountClient>>['petstore'];
    before(async () => {
      app = await getApp();
      receiver = await startReceiver();
      ({ petstore } = await newAccountClient(app));
      ({ secret } = await petstore.webhookEndpoints.create({ url: receiver.url }));
      const pet = await petstore.pets.create({ name: 'Rex', categoryId: 1, status: 'available' });
      delivery = await receiver.nth(1);
      event = (await petstore.events.list()).data[0]!;
      assert.ok(event.type === 'pet.created');
      assert.deepEqual(event.data.object, pet);
    });
    after(() => receiver?.close());

    test('when a real delivery is verified with the endpoint\'s secret, then it resolves with the typed Event, from node:http headers or a Headers object, bytes or text', async () => {
      const verified = await verifyWebhook({ headers: delivery.headers, body: delivery.body, secret });
      assert.deepEqual(verified, event);
      assert.equal(delivery.headers['webhook-id'], event.id);
      assert.ok(verified.type === 'pet.created' && verified.data.object.name === 'Rex');
      const upper = Object.fromEntries(Object.entries(flat(delivery.headers)).map(([k, v]) => [k.toUpperCase(), v]));
      assert.deepEqual(await verifyWebhook({ headers: new Headers(flat(delivery.headers)), body: delivery.body.toString('utf8'), secret }), event);
      assert.deepEqual(await verifyWebhook({ headers: upper, body: new Uint8Array(delivery.body), secret }), event, 'header names in any case');
    });

    test('when the body is tampered with, the secret is wrong, a header is missing or the timestamp is too old, then it rejects with PetstoreError invalid_signature', async () => {
      const tampered = delivery.body.toString('utf8').replace('"Rex"', '"Max"');
      assert.notEqual(tampered, delivery.body.toString('utf8'));
      await refused(verifyWebhook({ headers: delivery.headers, body: tampered, secret }));
      await refused(verifyWebhook({ headers: delivery.headers, body: `${delivery.body.toString('utf8')} `, secret }));
      const { secret: other } = await petstore.webhookEndpoints.create({ url: `${receiver.url}/other`, eventTypes: ['order.placed'] });
      await refused(verifyWebhook({ headers: delivery.headers, body: delivery.body, secret: other }));
      for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        const headers: http.IncomingHttpHeaders = { ...delivery.headers, [name]: undefined };
        assert.match((await refused(verifyWebhook({ headers, body: delivery.body, secret }))).message, /missing/);
      }
      // The delivery's own headers with another id: the signature covers the id too.
      await refused(verifyWebhook({ headers: { ...delivery.headers, 'webhook-id': 'evt_00000000000000000000000000000000' }, body: delivery.body, secret }));
      const body = delivery.body.toString('utf8');
      const now = Math.floor(Date.now() / 1000);
      const old = signedHeaders(secret, event.id, now - 301, body);
      assert.match((await refused(verifyWebhook({ headers: old, body, secret }))).message, /more than 300 s/);
      await refused(verifyWebhook({ headers: signedHeaders(secret, event.id, now + 301, body), body, secret }));
      await refused(verifyWebhook({ headers: old, body, secret, toleranceSeconds: 60 }));
      assert.deepEqual(await verifyWebhook({ headers: old, body, secret, toleranceSeconds: 400 }), event, 'within a wider tolerance');
      assert.deepEqual(await verifyWebhook({ headers: signedHeaders(secret, event.id, now - 290, body), body, secret }), event, 'within 300 s');
      await refused(verifyWebhook({ headers: { ...signedHeaders(secret, event.id, now, body), 'webhook-timestamp': `${now}.5` }, body, secret }));
    });

    test('when standardwebhooks verifies the server\'s delivery, and signs a payload that ours verifies, then both accept, and each refuses what the other refuses', async () => {
      const theirs = new Webhook(secret);
      assert.deepEqual(theirs.verify(delivery.body.toString('utf8'), flat(delivery.headers)), event);
      const body = JSON.stringify({ ...event, sequence: 99 });
      const id = 'evt_11111111111111111111111111111111';
      const at = new Date();
      const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': theirs.sign(id, at, body) };
      assert.deepEqual(await verifyWebhook({ headers, body, secret }), { ...event, sequence: 99 });
      // Several signatures, space-separated (a rotation): any one matching is enough, in any position.
      const wrong = `v1,${Buffer.alloc(32, 1).toString('base64')}`;
      const multi = { ...headers, 'webhook-signature': `${wrong} v2,abc ${headers['webhook-signature']}` };
      assert.deepEqual(await verifyWebhook({ headers: multi, body, secret }), { ...event, sequence: 99 });
      await refused(verifyWebhook({ headers: { ...headers, 'webhook-signature': wrong }, body, secret }));
      assert.throws(() => theirs.verify(body.replace('99', '98'), headers));
      await refused(verifyWebhook({ headers, body: body.replace('99', '98'), secret }));
    });

    test('when the secret is rotated, then the next delivery carries two signatures and verifies with the old and the new secret, and with standardwebhooks', async () => {
      const [endpoint] = (await petstore.webhookEndpoints.list()).data;
      const rotated = await petstore.webhookEndpoints.rotateSecret(endpoint!.id);
      const before = receiver.received.length;
      await petstore.pets.create({ name: 'Tom', categoryId: 2 });
      const next = await receiver.nth(before + 1);
      assert.equal(String(next.headers['webhook-signature']).split(' ').length, 2);
      const a = await verifyWebhook({ headers: next.headers, body: next.body, secret });
      const b = await verifyWebhook({ headers: next.headers, body: next.body, secret: rotated.secret });
      assert.deepEqual(a, b);
      assert.ok(a.type === 'pet.created' && a.data.object.name === 'Tom');
      assert.deepEqual(new Webhook(rotated.secret).verify(next.body.toString('utf8'), flat(next.headers)), a);
    });
  });
}

test('when verifyWebhook is misused (an empty secret, a negative tolerance), then it rejects with a TypeError, not a PetstoreError', async () => {
  const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' };
  for (const options of [{ secret: '' }, { secret: 'whsec_AAAA', toleranceSeconds: -1 }]) {
    const error = await verifyWebhook({ headers, body: '{}', ...options }).catch((caught: unknown) => caught);
    assert.ok(error instanceof TypeError && !(error instanceof PetstoreError), String(error));
  }
});
