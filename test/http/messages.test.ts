// The quickstart's example API ({api_url} = /example/v1) on every store: 202 + Location, polling
// until delivered, every 400 the spec names, 401, isolation, idempotent replays, paging, its own
// OpenAPI document (which validates every response here), retries and failure with a delivery
// that fails, and the queue metrics.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_ATTEMPTS, retryDelayMs } from '../../src/services/message-worker.js';
import { sharedApp, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { scriptedDelivery } from '../helpers/delivery.js';
import type { OpenApiDocument } from '../helpers/openapi.js';

type Message = { id: string; message: string; status: string; createdAt: string; deliveredAt?: string; failureReason?: string };
type ErrorBody = { code: string; message: string; status: number };

const API = '/example/v1';
const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' };
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function assertError(res: TestResponse, status: number, code: string, message?: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal((res.body as ErrorBody).code, code, res.text);
  if (message) assert.match((res.body as ErrorBody).message, message);
}

/** Polls GET /messages/{id} until the status is final (as the quickstart does). */
async function waitUntilDone(app: TestApp, key: string, location: string, timeoutMs = 5000): Promise<Message> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await app.request('GET', location, { key });
    assert.equal(res.status, 200, res.text);
    const message = res.body as Message;
    if (message.status !== 'queued') return message;
    assert.ok(Date.now() < deadline, `still queued after ${timeoutMs} ms`);
    await sleep(50);
  }
}

const nextLink = (res: TestResponse) => /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];

for (const backend of backends) {
  describe(`example API messages (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    let key: string;
    const send = (body: unknown, k = key, headers: Record<string, string> = {}) => app.request('POST', `${API}/messages`, { key: k, body, headers });

    test('when a message is sent, then 202 with the message queued, Location and the usual headers; polling it shows delivered with deliveredAt', async () => {
      app = await getApp();
      ({ key } = await app.createAccount('Sender'));
      const started = Date.now();
      const res = await send({ message: 'Hello, world!' });
      assert.equal(res.status, 202, res.text);
      const accepted = res.body as Message;
      assert.match(accepted.id, /^msg_[0-9A-Za-z]{24}$/);
      assert.deepEqual(accepted, { id: accepted.id, message: 'Hello, world!', status: 'queued', createdAt: accepted.createdAt });
      assert.match(accepted.createdAt, RFC3339_UTC);
      assert.equal(res.headers.get('location'), `${API}/messages/${accepted.id}`);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      for (const header of ['x-request-id', 'ratelimit', 'ratelimit-policy']) assert.ok(res.headers.get(header), header);
      assert.equal(res.headers.get('cache-control'), 'no-store');

      const done = await waitUntilDone(app, key, res.headers.get('location')!);
      assert.equal(done.status, 'delivered');
      assert.match(done.deliveredAt!, RFC3339_UTC);
      assert.ok(done.deliveredAt! >= done.createdAt);
      assert.deepEqual({ ...done, deliveredAt: undefined, status: 'queued' }, { ...accepted, deliveredAt: undefined });
      assert.ok(Date.now() - started < 2000, `delivered within about a second (${Date.now() - started} ms)`);
    });

    test('when the body is bad (invalid JSON, no or another Content-Type, message missing, not a string, empty, blank, too long, control characters, an unknown field), then 400 with the code that says so', async () => {
      const raw = (body: string, headers: Record<string, string>) => app.request('POST', `${API}/messages`, { key, rawBody: body, headers });
      assertError(await raw('{"message": "hi"', { 'content-type': 'application/json' }), 400, 'invalid_json');
      assertError(await raw('{"message": "hi"}', {}), 400, 'invalid_content_type');
      assertError(await raw('{"message": "hi"}', { 'content-type': 'text/plain' }), 400, 'invalid_content_type');
      assertError(await app.request('POST', `${API}/messages`, { key }), 400, 'invalid_request', /body is required/);
      const cases: Array<[unknown, RegExp]> = [
        [{}, /"message" is required/],
        [{ message: 42 }, /"message" must be a string/],
        [{ message: '' }, /"message"/],
        [{ message: '   ' }, /"message"/],
        [{ message: 'x'.repeat(2001) }, /at most 2000/],
        [{ message: 'tab\there' }, /"message"/],
        [{ message: 'nul\u0000' }, /"message"/],
        [{ message: 'half \ud800 surrogate' }, /"message"/],
        [{ message: 'hi', to: 'someone' }, /"to" is not allowed/],
        [['hi'], /JSON object/],
      ];
      for (const [body, message] of cases) assertError(await send(body), 400, 'invalid_request', message);
      const longest = await send({ message: '🐶'.repeat(2000) });
      assert.equal(longest.status, 202, '2000 characters (code points) are accepted');
    });

    test('when the key is missing or invalid, then every operation answers 401 with WWW-Authenticate', async () => {
      for (const [method, path] of [['POST', `${API}/messages`], ['GET', `${API}/messages`], ['GET', `${API}/messages/msg_x`]] as const) {
        for (const k of [undefined, 'psk_live_000000000000000000000000000000']) {
          const res = await app.request(method, path, { key: k, ...(method === 'POST' ? { body: { message: 'hi' } } : {}) });
          assertError(res, 401, 'unauthorized');
          assert.ok(res.headers.get('www-authenticate'));
        }
      }
    });

    test('when another account asks for a message or lists, then 404 exactly as for an unknown id, and only its own messages', async () => {
      const other = await app.createAccount('Other');
      const mine = (await send({ message: 'mine only' })).body as Message;
      const foreign = await app.request('GET', `${API}/messages/${mine.id}`, { key: other.key });
      const unknown = await app.request('GET', `${API}/messages/msg_000000000000000000000000`, { key: other.key });
      assertError(foreign, 404, 'not_found');
      assert.equal((foreign.body as ErrorBody).message.replace(mine.id, '{id}'), (unknown.body as ErrorBody).message.replace('msg_000000000000000000000000', '{id}'));
      assert.deepEqual((await app.request('GET', `${API}/messages`, { key: other.key })).body, []);
      assertError(await app.request('GET', `${API}/messages/${'x'.repeat(65)}`, { key }), 400, 'invalid_request');
    });

    test('when a message is sent again with the same Idempotency-Key, then the first 202 is replayed and one message exists; another body answers 422', async () => {
      const account = await app.createAccount('Idem');
      const idem = randomUUID();
      const first = await send({ message: 'once' }, account.key, { 'idempotency-key': idem });
      assert.equal(first.status, 202);
      await waitUntilDone(app, account.key, first.headers.get('location')!);
      const again = await send({ message: 'once' }, account.key, { 'idempotency-key': idem });
      assert.equal(again.status, 202, again.text);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(again.body, first.body, 'the first answer, queued as it was');
      assert.equal(again.headers.get('location'), first.headers.get('location'));
      assertError(await send({ message: 'twice' }, account.key, { 'idempotency-key': idem }), 422, 'idempotency_key_reused');
      assert.equal(((await app.request('GET', `${API}/messages`, { key: account.key })).body as Message[]).length, 1);
    });

    test('when an account has many messages, then the list is oldest first, paged with Link rel="next", filtered by status, with cursors of its own', async () => {
      const account = await app.createAccount('Lister');
      const sent: Message[] = [];
      for (let i = 0; i < 7; i++) sent.push((await send({ message: `m${i}` }, account.key)).body as Message);
      await waitUntilDone(app, account.key, `${API}/messages/${sent.at(-1)!.id}`);
      const seen: Message[] = [];
      let next: string | undefined = `${API}/messages?limit=3`;
      let pages = 0;
      while (next) {
        const res = await app.request('GET', next, { key: account.key });
        assert.equal(res.status, 200, res.text);
        seen.push(...(res.body as Message[]));
        next = nextLink(res);
        if (next) assert.match(next, /^\/example\/v1\/messages\?limit=3&cursor=[A-Za-z0-9_-]+$/);
        pages++;
      }
      assert.equal(pages, 3);
      assert.deepEqual(seen.map((m) => m.message), sent.map((m) => m.message));
      const delivered = await app.request('GET', `${API}/messages?status=delivered&limit=100`, { key: account.key });
      assert.equal((delivered.body as Message[]).length, 7);
      assert.deepEqual((await app.request('GET', `${API}/messages?status=failed`, { key: account.key })).body, []);
      for (const query of ['limit=0', 'limit=101', 'status=sent', 'status=available', 'x=1']) {
        assertError(await app.request('GET', `${API}/messages?${query}`, { key: account.key }), 400, 'invalid_request');
      }
      const first = await app.request('GET', `${API}/messages?limit=1`, { key: account.key });
      const cursor = new URL(nextLink(first)!, 'http://x').searchParams.get('cursor');
      assertError(await app.request('GET', `${API}/messages?limit=1&cursor=${cursor}`, { key }), 400, 'invalid_cursor', /not valid for this API key/);
      assertError(await app.request('GET', `/v1/pets?limit=1&cursor=${cursor}`, { key: account.key }), 400, 'invalid_cursor');
    });

    test('when the documents are read, then /example/v1/openapi.json is its own "Example API" (3.0.3, bearerAuth, its server from config) and the Petstore document has no messages', async () => {
      const doc = (await (await fetch(`${app.url}${API}/openapi.json`)).json()) as OpenApiDocument & { info: { title: string }; servers: Array<{ url: string }> };
      assert.equal(doc.openapi, '3.0.3');
      assert.equal(doc.info.title, 'Example API');
      assert.deepEqual(doc.servers.map((s) => s.url), [app.config.docs.exampleApiUrl]);
      assert.deepEqual(Object.keys(doc.paths).sort(), ['/messages', '/messages/{id}']);
      assert.deepEqual(Object.keys(doc.components.schemas).sort(), ['Error', 'Message', 'MessageStatus', 'Messages', 'NewMessage']);
      assert.deepEqual((doc.components.schemas.MessageStatus as { enum: string[] }).enum, ['queued', 'delivered', 'failed']);
      const post = doc.paths['/messages']!.post as unknown as { operationId: string; responses: Record<string, unknown> };
      assert.equal(post.operationId, 'sendMessage');
      assert.ok(post.responses['202'] && !post.responses['201']);
      const petstore = (await (await fetch(`${app.url}/v1/openapi.json`)).json()) as OpenApiDocument;
      assert.ok(!Object.keys(petstore.paths).some((p) => p.includes('message')));
      assert.ok(!('Message' in petstore.components.schemas));
    });

    test('when messages are queued and delivered, then /metrics shows the queue depth, the oldest age and the deliveries', async () => {
      const metrics = await (await fetch(`${app.url}/metrics`)).text();
      assert.match(metrics, /^petstore_message_queue_depth 0$/m);
      assert.match(metrics, /^petstore_message_queue_oldest_age_seconds 0$/m);
      const delivered = Number(/^petstore_messages_delivered_total (\d+)$/m.exec(metrics)?.[1]);
      assert.ok(delivered >= 10, `deliveries counted: ${delivered}`);
      assert.match(metrics, /^petstore_messages_failed_total 0$/m);
    });
  });

  describe(`example API delivery retries (${backend.name})`, () => {
    test(`when delivery fails, then it is retried with backoff, and after ${MAX_ATTEMPTS} attempts the message is failed with a failureReason; a message that recovers is delivered`, async (t) => {
      const delivery = scriptedDelivery((text, n) => text === 'never' || (text === 'flaky' && n < 3));
      const { attempts } = delivery;
      const app = await startApp(t, { backend, env, clock: delivery.clock, deliver: delivery.deliver });
      const { key } = await app.createAccount();
      const never = (await app.request('POST', `${API}/messages`, { key, body: { message: 'never' } })).body as Message;
      const flaky = (await app.request('POST', `${API}/messages`, { key, body: { message: 'flaky' } })).body as Message;
      const status = async (m: Message) => ((await app.request('GET', `${API}/messages/${m.id}`, { key })).body as Message);
      const until = async (cond: () => Promise<boolean>, what: string) => {
        const deadline = Date.now() + 3000;
        while (!(await cond())) {
          assert.ok(Date.now() < deadline, what);
          await sleep(20);
        }
      };
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        await until(async () => (attempts.get('never') ?? 0) >= attempt, `attempt ${attempt}`);
        if (attempt < MAX_ATTEMPTS) {
          await sleep(300); // no early retry: the next one is due only after the backoff
          assert.equal(attempts.get('never'), attempt, `attempt ${attempt + 1} waits ${retryDelayMs(attempt)} ms`);
          assert.equal((await status(never)).status, 'queued');
          delivery.advance(retryDelayMs(attempt));
        }
      }
      await until(async () => (await status(never)).status === 'failed', 'failed after the last attempt');
      const failed = await status(never);
      assert.match(failed.failureReason!, new RegExp(`after ${MAX_ATTEMPTS} attempts: recipient unreachable \\(attempt ${MAX_ATTEMPTS}\\)`));
      assert.equal(failed.deliveredAt, undefined);
      const done = await status(flaky);
      assert.equal(done.status, 'delivered', 'delivered on its third attempt');
      assert.equal(done.failureReason, undefined);
      assert.equal(attempts.get('flaky'), 3);
      const metrics = await (await fetch(`${app.url}/metrics`)).text();
      assert.match(metrics, /^petstore_messages_failed_total 1$/m);
      assert.match(metrics, new RegExp(`^petstore_message_delivery_retries_total ${MAX_ATTEMPTS - 1 + 2}$`, 'm'));
    });
  });
}
