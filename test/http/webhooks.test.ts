// Webhook endpoints and deliveries over HTTP, on every store, with real receivers on
// 127.0.0.1: registration and every bad input, signatures checked by the standardwebhooks
// package (a verifier we did not write), eventTypes filters, disabled and deleted endpoints,
// retries (500, 500, 200), Retry-After, redirects, 410, timeouts, a schedule run out, manual
// retry, secret rotation, the address policy at registration and at connection time, and
// isolation between accounts. Every response is checked against the served document.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { sharedApp, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { EVENT_TYPES } from '../../src/schemas/events.js';
import { backends } from '../helpers/backends.js';
import { eventually, type Received, type Receiver, startReceiver } from '../helpers/receiver.js';

type Endpoint = { id: string; url: string; eventTypes: string[]; allEventTypes: boolean; description?: string; disabled: boolean; disabledReason?: string; createdAt: string; secret?: string };
type Delivery = { id: string; eventId: string; eventType: string; status: string; attempts: number; lastAttemptAt?: string; lastResponseStatus?: number; lastError?: string; nextAttemptAt?: string };
type Account = { accountId: string; key: string };

// Three attempts, 200 ms apart (±20 %); a 1.5 s timeout (a loaded CI machine must not turn a
// 204 into a timeout, and so a retry, in the exactly-once tests); a 2 s secret overlap.
const env = {
  PETSTORE_RATE_LIMIT_PER_SECOND: '1000000',
  PETSTORE_RATE_LIMIT_BURST: '1000000',
  PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
  PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
  PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.2',
  PETSTORE_WEBHOOK_TIMEOUT_MS: '1500',
  PETSTORE_WEBHOOK_SECRET_OVERLAP_SECONDS: '2',
};

function assertError(res: TestResponse, status: number, code: string, message?: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal((res.body as { code: string }).code, code, res.text);
  if (message) assert.match((res.body as { message: string }).message, message);
}

/** The event a delivery carries, after checking its signature with the standardwebhooks package. */
function verified(received: Received, secret: string): { id: string; type: string; sequence: number } {
  const headers = {
    'webhook-id': String(received.headers['webhook-id']),
    'webhook-timestamp': String(received.headers['webhook-timestamp']),
    'webhook-signature': String(received.headers['webhook-signature']),
  };
  return new Webhook(secret.slice('whsec_'.length)).verify(received.body, headers) as { id: string; type: string; sequence: number };
}

for (const backend of backends) {
  describe(`webhooks over HTTP (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    const receivers: Receiver[] = [];
    const receiver = async (answer?: Receiver['answer']) => {
      const r = await startReceiver(answer);
      receivers.push(r);
      return r;
    };
    test.after(async () => {
      for (const r of receivers) await r.close();
    });

    const register = async (account: Account, body: Record<string, unknown>) => {
      const res = await app.request('POST', '/v1/webhook-endpoints', { key: account.key, body });
      assert.equal(res.status, 201, res.text);
      return res.body as Endpoint & { secret: string };
    };
    const createPet = async (account: Account, name = 'Rex', status = 'available') => {
      const res = await app.request('POST', '/v1/pets', { key: account.key, body: { name, categoryId: 1, status } });
      assert.equal(res.status, 201, res.text);
      return res.body as { id: number };
    };
    const deliveries = async (account: Account, endpointId: string, query = '') => {
      const res = await app.request('GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100${query}`, { key: account.key });
      assert.equal(res.status, 200, res.text);
      return res.body as Delivery[];
    };
    /** The endpoint's deliveries once none is pending. */
    const settled = (account: Account, endpointId: string, count: number) =>
      eventually(async () => {
        const list = await deliveries(account, endpointId);
        return list.length === count && list.every((d) => d.status !== 'pending') ? list : undefined;
      }, 10_000, `${count} settled deliveries`);

    test('when an endpoint is registered, then it answers 201 with a whsec_ secret shown once, and get, list, patch and delete manage it', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const res = await app.request('POST', '/v1/webhook-endpoints', { key: owner.key, body: { url: 'https://hooks.example.com/petstore', description: 'Warehouse' } });
      assert.equal(res.status, 201, res.text);
      const created = res.body as Endpoint & { secret: string };
      assert.match(created.id, /^we_[0-9A-Za-z]{24}$/);
      assert.equal(res.headers.get('location'), `/v1/webhook-endpoints/${created.id}`);
      assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32);
      assert.deepEqual({ ...created, secret: '', createdAt: '' }, {
        id: created.id,
        url: 'https://hooks.example.com/petstore',
        eventTypes: [...EVENT_TYPES],
        allEventTypes: true,
        description: 'Warehouse',
        disabled: false,
        createdAt: '',
        secret: '',
      });

      const { secret: _secret, ...shown } = created;
      const got = await app.request('GET', `/v1/webhook-endpoints/${created.id}`, { key: owner.key });
      assert.deepEqual(got.body, shown, 'the secret is never shown again');
      const second = await register(owner, { url: 'https://hooks.example.com/two', eventTypes: ['order.placed'] });
      assert.deepEqual(second.eventTypes, ['order.placed']);
      assert.equal(second.allEventTypes, false);

      const page1 = await app.request('GET', '/v1/webhook-endpoints?limit=1', { key: owner.key });
      assert.deepEqual(page1.body, [shown]);
      const next = /^<([^>]+)>; rel="next"$/.exec(page1.headers.get('link') ?? '')?.[1];
      assert.ok(next);
      const page2 = await app.request('GET', next, { key: owner.key });
      assert.deepEqual((page2.body as Endpoint[]).map((e) => e.id), [second.id]);
      assert.equal(page2.headers.get('link'), null);

      const patched = await app.request('PATCH', `/v1/webhook-endpoints/${created.id}`, {
        key: owner.key,
        body: { url: 'https://hooks.example.com/moved', eventTypes: ['pet.created', 'order.cancelled'], description: null, disabled: true },
      });
      assert.equal(patched.status, 200, patched.text);
      const { description: _description, ...withoutDescription } = shown;
      assert.deepEqual(patched.body, { ...withoutDescription, url: 'https://hooks.example.com/moved', eventTypes: ['pet.created', 'order.cancelled'], allEventTypes: false, disabled: true });
      const all = await app.request('PATCH', `/v1/webhook-endpoints/${created.id}`, { key: owner.key, body: { eventTypes: null, disabled: false } });
      assert.equal((all.body as Endpoint).allEventTypes, true);
      assert.equal((all.body as Endpoint).disabled, false);

      const deleted = await app.request('DELETE', `/v1/webhook-endpoints/${created.id}`, { key: owner.key });
      assert.equal(deleted.status, 204);
      assertError(await app.request('GET', `/v1/webhook-endpoints/${created.id}`, { key: owner.key }), 404, 'not_found');
      assertError(await app.request('DELETE', `/v1/webhook-endpoints/${created.id}`, { key: owner.key }), 404, 'not_found');
    });

    test('when the input is bad, then 400 (invalid_request or invalid_webhook_url), 404 or 409 with the code', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const post = (body: unknown) => app.request('POST', '/v1/webhook-endpoints', { key: owner.key, body });
      for (const body of [
        {},
        { url: 1 },
        { url: '' },
        { url: `https://example.com/${'a'.repeat(2030)}` },
        { url: 'https://example.com', eventTypes: [] },
        { url: 'https://example.com', eventTypes: ['pet.adopted'] },
        { url: 'https://example.com', eventTypes: ['pet.created', 'pet.created'] },
        { url: 'https://example.com', description: '' },
        { url: 'https://example.com', description: 'x'.repeat(501) },
        { url: 'https://example.com', secret: 'mine' },
      ]) {
        assertError(await post(body), 400, 'invalid_request');
      }
      assertError(await post({ url: 'not a url' }), 400, 'invalid_webhook_url', /absolute URL/);
      assertError(await post({ url: 'ftp://example.com/x' }), 400, 'invalid_webhook_url');
      assertError(await post({ url: 'https://user:pw@example.com/x' }), 400, 'invalid_webhook_url');
      assertError(await app.request('POST', '/v1/webhook-endpoints', { key: owner.key, rawBody: '{', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');

      const endpoint = await register(owner, { url: 'https://example.com/hook' });
      const patch = (body: unknown) => app.request('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { key: owner.key, body });
      assertError(await patch({}), 400, 'invalid_request');
      assertError(await patch({ disabled: 'yes' }), 400, 'invalid_request');
      assertError(await patch({ eventTypes: [] }), 400, 'invalid_request');
      assertError(await patch({ id: 'we_x' }), 400, 'invalid_request');
      assertError(await patch({ url: 'https://10.0.0.1/x' }), 400, 'invalid_webhook_url');
      assertError(await app.request('PATCH', '/v1/webhook-endpoints/we_missing', { key: owner.key, body: { disabled: true } }), 404, 'not_found');
      assertError(await app.request('GET', '/v1/webhook-endpoints/%00', { key: owner.key }), 400, 'invalid_request');
      assertError(await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/%20/retry`, { key: owner.key }), 400, 'invalid_request');
      assertError(await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { key: owner.key, body: { a: 1 } }), 400, 'invalid_request');
      assertError(await app.request('POST', '/v1/webhook-endpoints/we_missing/rotate-secret', { key: owner.key }), 404, 'not_found');
      assertError(await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?status=lost`, { key: owner.key }), 400, 'invalid_request');
      assertError(await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=0`, { key: owner.key }), 400, 'invalid_request');
      assertError(await app.request('GET', '/v1/webhook-endpoints/we_missing/deliveries', { key: owner.key }), 404, 'not_found');
      assertError(await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/whd_missing/retry`, { key: owner.key }), 404, 'not_found');
      assertError(await app.request('GET', '/v1/webhook-endpoints?limit=101', { key: owner.key }), 400, 'invalid_request');
      assertError(await app.request('GET', '/v1/webhook-endpoints?cursor=zz', { key: owner.key }), 400, 'invalid_cursor');
      for (const [method, path] of [
        ['GET', '/v1/webhook-endpoints'],
        ['POST', '/v1/webhook-endpoints'],
        ['GET', `/v1/webhook-endpoints/${endpoint.id}`],
        ['PATCH', `/v1/webhook-endpoints/${endpoint.id}`],
        ['DELETE', `/v1/webhook-endpoints/${endpoint.id}`],
        ['POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`],
        ['GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`],
        ['POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/whd_x/retry`],
      ] as const) {
        assertError(await app.request(method, path), 401, 'unauthorized');
      }

      // At most 16 per account: the 17th is refused until one is deleted.
      for (let i = 1; i < 16; i++) await register(owner, { url: `https://example.com/${i}` });
      assertError(await post({ url: 'https://example.com/17' }), 409, 'webhook_endpoint_limit', /16 webhook endpoints/);
      assert.equal((await app.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { key: owner.key })).status, 204);
      await register(owner, { url: 'https://example.com/17' });
    });

    test('when pets and orders change, then each matching endpoint receives each event once, signed (verified by standardwebhooks), and others only their kinds', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const everything = await receiver();
      const ordersOnly = await receiver();
      const all = await register(owner, { url: everything.url });
      const some = await register(owner, { url: ordersOnly.url, eventTypes: ['order.placed', 'order.cancelled'] });
      const pet = await createPet(owner);
      const order = (await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: pet.id } })).body as { id: number };
      await app.request('POST', `/v1/store/orders/${order.id}/cancel`, { key: owner.key });

      const log = (await app.request('GET', '/v1/events', { key: owner.key })).body as Array<{ id: string; type: string }>;
      assert.equal(log.length, 5);
      const got = await everything.waitFor(5);
      const byId = new Map(got.map((r) => [String(r.headers['webhook-id']), r]));
      assert.deepEqual([...byId.keys()].sort(), log.map((e) => e.id).sort(), 'each event once');
      for (const event of log) {
        const request = byId.get(event.id)!;
        assert.equal(request.headers['content-type'], 'application/json');
        assert.equal(request.path, '/hook');
        assert.deepEqual(verified(request, all.secret), event, 'the body is the event as the API shows it');
        assert.ok(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000) < 30);
        assert.throws(() => verified(request, some.secret), 'another endpoint\'s secret does not verify');
        assert.throws(() => verified({ ...request, body: request.body.replace('"sequence":', '"sequence":9') }, all.secret), 'a tampered body does not verify');
      }
      const orderEvents = await ordersOnly.waitFor(2);
      assert.deepEqual(orderEvents.map((r) => verified(r, some.secret).type).sort(), ['order.cancelled', 'order.placed']);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(everything.received.length, 5, 'exactly once without a crash');
      assert.equal(ordersOnly.received.length, 2);
      const listed = await settled(owner, all.id, 5);
      assert.ok(listed.every((d) => d.status === 'succeeded' && d.attempts === 1 && d.lastResponseStatus === 204 && d.nextAttemptAt === undefined));
      assert.deepEqual(listed.map((d) => d.eventId), log.map((e) => e.id), 'oldest event first');
      assert.deepEqual((await deliveries(owner, all.id, '&status=failed')), []);
    });

    test('when the receiver answers 500, 500, 200, then three attempts carry one webhook-id, and the delivery records them', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const flaky = await receiver((_r, n) => ({ status: n <= 2 ? 500 : 200 }));
      const endpoint = await register(owner, { url: flaky.url });
      await createPet(owner);
      const attempts = await flaky.waitFor(3);
      assert.equal(new Set(attempts.map((r) => r.headers['webhook-id'])).size, 1);
      assert.equal(new Set(attempts.map((r) => r.body)).size, 1);
      assert.ok(attempts[1]!.at - attempts[0]!.at >= 150, 'the schedule is kept');
      const [delivery] = await settled(owner, endpoint.id, 1);
      assert.equal(delivery!.status, 'succeeded');
      assert.equal(delivery!.attempts, 3);
      assert.equal(delivery!.lastResponseStatus, 200);
    });

    test('when the receiver answers 429 with Retry-After, then the next attempt waits that long', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const busy = await receiver((_r, n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 204 }));
      const endpoint = await register(owner, { url: busy.url });
      await createPet(owner);
      const [first] = await busy.waitFor(1);
      const pending = await eventually(async () => (await deliveries(owner, endpoint.id)).find((d) => d.attempts === 1));
      assert.equal(pending.status, 'pending');
      assert.equal(pending.lastResponseStatus, 429);
      assert.ok(Date.parse(pending.nextAttemptAt!) - Date.parse(pending.lastAttemptAt!) >= 1000, JSON.stringify(pending));
      const [, second] = await busy.waitFor(2);
      assert.ok(second!.at - first!.at >= 950, `waited ${second!.at - first!.at} ms`);
    });

    test('when the receiver redirects, times out, or keeps failing, then nothing is followed, each is an attempt, and the schedule runs out to failed', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const target = await receiver();
      const redirecting = await receiver(() => ({ status: 302, headers: { location: target.url } }));
      const silent = await receiver(() => 'hang');
      const endpointR = await register(owner, { url: redirecting.url });
      const endpointS = await register(owner, { url: silent.url });
      await createPet(owner);
      const [r] = await settled(owner, endpointR.id, 1);
      assert.equal(r!.status, 'failed');
      assert.equal(r!.attempts, 3);
      assert.equal(r!.lastResponseStatus, 302);
      assert.equal(r!.lastError, 'http_status', 'a redirect is a status that is not 2xx');
      assert.equal(target.received.length, 0, 'the redirect was not followed');
      const [s] = await settled(owner, endpointS.id, 1);
      assert.equal(s!.status, 'failed');
      assert.equal(s!.attempts, 3);
      assert.equal(s!.lastResponseStatus, undefined);
      assert.equal(s!.lastError, 'timeout');
      assert.equal(silent.received.length, 3);

      // A manual retry of a failed delivery: one attempt now, outside the schedule.
      silent.answer = () => ({ status: 200 });
      const retried = await app.request('POST', `/v1/webhook-endpoints/${endpointS.id}/deliveries/${s!.id}/retry`, { key: owner.key });
      assert.equal(retried.status, 202, retried.text);
      assert.equal((retried.body as Delivery).status, 'pending');
      const [again] = await settled(owner, endpointS.id, 1);
      assert.equal(again!.status, 'succeeded');
      assert.equal(again!.attempts, 4);
      assert.equal(silent.received.length, 4);
      assert.equal(silent.received[3]!.headers['webhook-id'], silent.received[0]!.headers['webhook-id']);
      // A manual retry that fails is final again at once.
      redirecting.answer = () => ({ status: 500 });
      await app.request('POST', `/v1/webhook-endpoints/${endpointR.id}/deliveries/${r!.id}/retry`, { key: owner.key });
      await eventually(async () => ((await deliveries(owner, endpointR.id))[0]!.attempts === 4 ? true : undefined));
      const [final] = await settled(owner, endpointR.id, 1);
      assert.equal(final!.status, 'failed');
      assert.equal(final!.lastResponseStatus, 500);
      await new Promise((resolve) => setTimeout(resolve, 400));
      assert.equal(redirecting.received.length, 4);
    });

    test('when the receiver answers 410, then the endpoint is disabled at once, nothing more is sent, and a retry is refused until it is enabled', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const gone = await receiver(() => ({ status: 410 }));
      const endpoint = await register(owner, { url: gone.url, eventTypes: ['pet.created'] });
      await createPet(owner, 'First');
      const [d] = await settled(owner, endpoint.id, 1);
      assert.equal(d!.status, 'failed');
      assert.equal(d!.attempts, 1);
      assert.equal(d!.lastResponseStatus, 410);
      const shown = (await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}`, { key: owner.key })).body as Endpoint;
      assert.equal(shown.disabled, true);
      assert.match(shown.disabledReason!, /410 Gone/);
      await createPet(owner, 'Second');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(gone.received.length, 1);
      assert.equal((await deliveries(owner, endpoint.id)).length, 1, 'events while disabled are not delivered to it');
      assertError(await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/${d!.id}/retry`, { key: owner.key }), 409, 'webhook_endpoint_disabled');

      gone.answer = () => ({ status: 204 });
      const enabled = await app.request('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { key: owner.key, body: { disabled: false } });
      assert.equal((enabled.body as Endpoint).disabledReason, undefined);
      await createPet(owner, 'Third');
      await gone.waitFor(2);
      assert.equal(JSON.parse(gone.received[1]!.body).data.object.name, 'Third');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(gone.received.length, 2, 'the event written while it was disabled never comes');
    });

    test('when an endpoint is registered after some changes, then it receives only the events written after it', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      await createPet(owner, 'Before');
      const late = await receiver();
      const endpoint = await register(owner, { url: late.url });
      await createPet(owner, 'After');
      await late.waitFor(1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(late.received.map((r) => JSON.parse(r.body).data.object.name), ['After']);
      assert.deepEqual((await settled(owner, endpoint.id, 1)).map((d) => d.eventType), ['pet.created']);
    });

    test('when an endpoint is disabled or deleted with deliveries pending, then they are not sent', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const failing = await receiver(() => ({ status: 500 }));
      const endpoint = await register(owner, { url: failing.url });
      await createPet(owner);
      await failing.waitFor(1);
      await app.request('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { key: owner.key, body: { disabled: true } });
      const [d] = await settled(owner, endpoint.id, 1);
      assert.equal(d!.status, 'failed');
      assert.equal(d!.lastError, 'endpoint_disabled');
      assert.ok(failing.received.length <= 2, 'at most the attempt already in flight');

      const other = await receiver(() => ({ status: 500 }));
      const doomed = await register(owner, { url: other.url });
      await createPet(owner, 'Doomed');
      await other.waitFor(1);
      assert.equal((await app.request('DELETE', `/v1/webhook-endpoints/${doomed.id}`, { key: owner.key })).status, 204);
      const count = other.received.length;
      await new Promise((resolve) => setTimeout(resolve, 600));
      assert.ok(other.received.length <= count + 1, 'nothing after the attempt in flight');
    });

    test('when one endpoint never answers, then it holds at most its concurrency limit of attempts, and another endpoint still gets every event meanwhile', async (t) => {
      // Its own app: attempts that hang for 10 s, at most 4 at once per endpoint.
      const own = await startApp(t, { backend, env: { ...env, PETSTORE_WEBHOOK_TIMEOUT_MS: '10000', PETSTORE_WEBHOOK_ENDPOINT_CONCURRENCY: '4' } });
      const owner = await own.createAccount();
      const dead = await receiver(() => 'hang');
      const alive = await receiver();
      for (const url of [dead.url, alive.url]) {
        assert.equal((await own.request('POST', '/v1/webhook-endpoints', { key: owner.key, body: { url, eventTypes: ['pet.created'] } })).status, 201);
      }
      await Promise.all(Array.from({ length: 40 }, (_, i) => own.request('POST', '/v1/pets', { key: owner.key, body: { name: `Pet ${i}`, categoryId: 1 } })));
      await alive.waitFor(40, 9000);
      // Every live delivery arrived while the dead endpoint's first attempts were still hanging.
      assert.equal(dead.received.length, 4, 'the dead endpoint holds exactly its limit, no more');
      assert.equal(new Set(alive.received.map((r) => r.headers['webhook-id'])).size, 40);
      await dead.close(); // the hanging attempts end now, not at their timeout
    });

    test('when the secret is rotated, then deliveries carry both signatures during the overlap and only the new one after', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const hook = await receiver();
      const endpoint = await register(owner, { url: hook.url, eventTypes: ['pet.created'] });
      const rotated = await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { key: owner.key });
      assert.equal(rotated.status, 200, rotated.text);
      const { secret, previousSecretExpiresAt } = rotated.body as { secret: string; previousSecretExpiresAt: string };
      assert.notEqual(secret, endpoint.secret);
      assert.ok(Math.abs(Date.parse(previousSecretExpiresAt) - (Date.now() + 2000)) < 1000);
      await createPet(owner, 'During');
      const [during] = await hook.waitFor(1);
      assert.equal(String(during!.headers['webhook-signature']).split(' ').length, 2);
      assert.equal(verified(during!, secret).type, 'pet.created');
      assert.equal(verified(during!, endpoint.secret).type, 'pet.created');

      await new Promise((resolve) => setTimeout(resolve, Date.parse(previousSecretExpiresAt) - Date.now() + 100));
      await createPet(owner, 'After');
      const [, afterwards] = await hook.waitFor(2);
      assert.equal(String(afterwards!.headers['webhook-signature']).split(' ').length, 1);
      assert.equal(verified(afterwards!, secret).type, 'pet.created');
      assert.throws(() => verified(afterwards!, endpoint.secret));
    });

    test('when another account asks for an endpoint or its deliveries, then 404, and its events never reach the other\'s endpoints', async () => {
      app = await getApp();
      const a = await app.createAccount('A');
      const b = await app.createAccount('B');
      const hookA = await receiver();
      const hookB = await receiver();
      const endpointA = await register(a, { url: hookA.url });
      await register(b, { url: hookB.url });
      await createPet(a, 'OnlyA');
      await hookA.waitFor(1);
      const [d] = await settled(a, endpointA.id, 1);
      for (const [method, path, body] of [
        ['GET', `/v1/webhook-endpoints/${endpointA.id}`, undefined],
        ['PATCH', `/v1/webhook-endpoints/${endpointA.id}`, { disabled: true }],
        ['DELETE', `/v1/webhook-endpoints/${endpointA.id}`, undefined],
        ['POST', `/v1/webhook-endpoints/${endpointA.id}/rotate-secret`, undefined],
        ['GET', `/v1/webhook-endpoints/${endpointA.id}/deliveries`, undefined],
        ['POST', `/v1/webhook-endpoints/${endpointA.id}/deliveries/${d!.id}/retry`, undefined],
      ] as const) {
        assertError(await app.request(method, path, { key: b.key, ...(body ? { body } : {}) }), 404, 'not_found');
      }
      assert.deepEqual(((await app.request('GET', '/v1/webhook-endpoints', { key: b.key })).body as Endpoint[]).map((e) => e.url), [hookB.url]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(hookB.received.length, 0);
      assert.equal(((await app.request('GET', `/v1/webhook-endpoints/${endpointA.id}`, { key: a.key })).body as Endpoint).disabled, false);
    });

    test('when one endpoint\'s deliveries cursor is used on another endpoint of the same account, then 400 invalid_cursor, not a page that skips deliveries', async () => {
      app = await getApp();
      const owner = await app.createAccount();
      const hook = await receiver();
      const first = await register(owner, { url: hook.url });
      const second = await register(owner, { url: hook.url });
      for (const name of ['One', 'Two']) await createPet(owner, name);
      await settled(owner, first.id, 2);
      await settled(owner, second.id, 2);
      const page1 = await app.request('GET', `/v1/webhook-endpoints/${first.id}/deliveries?limit=1`, { key: owner.key });
      const next = /^<([^>]+)>; rel="next"$/.exec(page1.headers.get('link') ?? '')?.[1];
      assert.ok(next, 'two deliveries, limit 1: a next page');
      assert.equal((await app.request('GET', next, { key: owner.key })).status, 200, 'the cursor pages its own endpoint');
      const cursor = new URL(next, 'http://x').searchParams.get('cursor')!;
      assertError(await app.request('GET', `/v1/webhook-endpoints/${second.id}/deliveries?limit=1&cursor=${cursor}`, { key: owner.key }), 400, 'invalid_cursor', /webhook endpoint/);
    });

    test('when deliveries happen, then /metrics counts events, attempts by outcome, their duration and the backlog', async () => {
      app = await getApp();
      const metrics = await (await fetch(`${app.url}/metrics`)).text();
      assert.match(metrics, /petstore_events_written_total\{type="pet.created"\} [1-9]/);
      assert.match(metrics, /petstore_webhook_attempts_total\{outcome="succeeded"\} [1-9]/);
      assert.match(metrics, /petstore_webhook_attempts_total\{outcome="retry"\} [1-9]/);
      assert.match(metrics, /petstore_webhook_attempts_total\{outcome="gone"\} [1-9]/);
      assert.match(metrics, /petstore_webhook_attempt_duration_seconds_count [1-9]/);
      assert.match(metrics, /petstore_webhook_deliveries_pending \d+/);
      assert.match(metrics, /petstore_webhook_oldest_pending_age_seconds \d/);
      assert.match(metrics, /petstore_webhook_endpoints_disabled_total [1-9]/);
    });
  });
}

describe('the webhook address policy', () => {
  test('when a URL names an internal address in any spelling, or is not https, then registration refuses it with invalid_webhook_url (default policy)', async (t) => {
    const app = await startApp(t);
    const owner = await app.createAccount();
    for (const url of [
      'http://hooks.example.com/x',
      'https://127.0.0.1/x',
      'https://2130706433/x',
      'https://0x7f000001/x',
      'https://0177.0.0.1/x',
      'https://127.1/x',
      'https://localhost/x',
      'https://localhost./x',
      'https://api.localhost/x',
      'https://[::1]/x',
      'https://[::ffff:127.0.0.1]/x',
      'https://10.1.2.3/x',
      'https://172.16.0.1/x',
      'https://192.168.1.1/x',
      'https://169.254.169.254/latest/meta-data',
      'https://100.64.0.1/x',
      'https://0.0.0.0/x',
      'https://224.0.0.1/x',
      'https://[fc00::1]/x',
      'https://[fe80::1]/x',
    ]) {
      const res = await app.request('POST', '/v1/webhook-endpoints', { key: owner.key, body: { url } });
      assertError(res, 400, 'invalid_webhook_url');
      assert.match((res.body as { message: string }).message, /^The webhook URL is refused: /, url);
    }
    const ok = await app.request('POST', '/v1/webhook-endpoints', { key: owner.key, body: { url: 'https://93.184.216.34/x' } });
    assert.equal(ok.status, 201, 'a public address is accepted (nothing is sent: no event happened)');
  });

  test('when a name resolves to a refused address, then the delivery is refused at connection time and nothing reaches it', async (t) => {
    const hook = await startReceiver();
    t.after(() => hook.close());
    // http is allowed (a development setting), but no network is: 127.0.0.1 stays refused.
    const app = await startApp(t, {
      env: { ...env, PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '' },
      webhookResolver: async (name) => (name === 'hooks.example.test' ? [{ address: '127.0.0.1', family: 4 }] : []),
    });
    const owner = await app.createAccount();
    const res = await app.request('POST', '/v1/webhook-endpoints', { key: owner.key, body: { url: `http://hooks.example.test:${hook.port}/hook` } });
    assert.equal(res.status, 201, res.text);
    const endpoint = res.body as Endpoint;
    await app.request('POST', '/v1/pets', { key: owner.key, body: { name: 'Rex', categoryId: 1 } });
    const [d] = await eventually(async () => {
      const list = (await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, { key: owner.key })).body as Delivery[];
      return list[0]?.status === 'failed' ? list : undefined;
    });
    assert.equal(d!.lastError, 'address_not_allowed', 'the category only: no address');
    assert.equal(d!.lastResponseStatus, undefined);
    assert.equal(hook.connections(), 0, 'no connection was opened');
  });
});
