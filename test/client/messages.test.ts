// @petstore/client's messages (the example API at /example/v1, on the client's second core)
// against the real server on each store: send (202) and waitUntilDone until delivered, get,
// idempotent sends (a replayed key and a lost answer: one message), paging with Link
// rel="next", PetstoreError fields for 400, 401, 404 and 422, and, with a delivery that fails
// and a clock the test moves, waitUntilDone timing out while queued (honouring Retry-After) and
// resolving with a failed message and its failureReason.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { type ListMessagesParams, type Message, Petstore, type PetstoreError } from '@petstore/client';
import { MAX_ATTEMPTS } from '../../src/services/message-worker.js';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { scriptedDelivery } from '../helpers/delivery.js';
import { assertErrorFromAnswer, type Attempt, loseAnswer, newAccountClient, petstoreError, type RecordingOptions, recordingClient, recordingFetch, UUID } from './helpers.js';

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const API = '/example/v1';
const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' };
const path = (a: Attempt) => new URL(a.url).pathname;
const query = (a: Attempt) => Object.fromEntries(new URL(a.url).searchParams);

/** The PetstoreError `timeout` of a waitUntilDone that ran out of time, and how long it took. */
async function timedOut(wait: () => Promise<Message>): Promise<{ error: PetstoreError; elapsed: number }> {
  const started = Date.now();
  const error = await petstoreError(wait());
  const elapsed = Date.now() - started;
  assert.equal(error.code, 'timeout', error.message);
  assert.equal(error.status, 0);
  assert.equal(error.name, 'PetstoreError');
  return { error, elapsed };
}

for (const backend of backends) {
  describe(`@petstore/client messages against the real server (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    before(async () => {
      app = await getApp();
    });
    const client = (options: RecordingOptions = {}) => newAccountClient(app, options);

    test('when a message is sent, then send returns the 202 body (queued), and waitUntilDone polls the example API until it is delivered with deliveredAt', async () => {
      const { petstore, attempts } = await client();
      assert.equal(petstore.exampleApiUrl, `${app.url}${API}`);
      const sent = await petstore.messages.send('Hello from the client!');
      assert.match(sent.id, /^msg_[0-9A-Za-z]{24}$/);
      assert.deepEqual(sent, { id: sent.id, message: 'Hello from the client!', status: 'queued', createdAt: sent.createdAt });
      assert.match(sent.createdAt, RFC3339_UTC);
      const [post] = attempts;
      assert.deepEqual([post!.method, path(post!), post!.status, post!.replayed], ['POST', `${API}/messages`, 202, null]);
      assert.match(post!.idempotencyKey ?? '', UUID, 'a generated key, as for every write');

      const done = await petstore.messages.waitUntilDone(sent.id, { intervalMs: 20 });
      assert.equal(done.status, 'delivered');
      assert.match(done.deliveredAt!, RFC3339_UTC);
      assert.ok(done.deliveredAt! >= done.createdAt);
      assert.deepEqual(done, { ...sent, status: 'delivered', deliveredAt: done.deliveredAt });
      const polls = attempts.slice(1);
      assert.ok(polls.length >= 1);
      for (const poll of polls) assert.deepEqual([poll.method, path(poll), poll.status, poll.idempotencyKey], ['GET', `${API}/messages/${sent.id}`, 200, null]);
      assert.deepEqual(await petstore.messages.get(sent.id), done);
      assert.deepEqual(await petstore.messages.waitUntilDone(sent.id), done, 'already final: one poll, at once');
    });

    test('when send is called twice with the same idempotencyKey, then the second replays the first 202 and one message exists; another text with that key is 422 idempotency_key_reused', async () => {
      const { petstore, attempts } = await client();
      const first = await petstore.messages.send('once', { idempotencyKey: 'notify-2026-11-23-1' });
      await petstore.messages.waitUntilDone(first.id, { intervalMs: 20 });
      attempts.length = 0;
      const again = await petstore.messages.send('once', { idempotencyKey: 'notify-2026-11-23-1' });
      assert.deepEqual(again, first, 'the first answer, queued as it was');
      assert.deepEqual(attempts.map((a) => [a.status, a.idempotencyKey, a.replayed]), [[202, 'notify-2026-11-23-1', 'true']]);
      attempts.length = 0;
      const error = await petstoreError(petstore.messages.send('twice', { idempotencyKey: 'notify-2026-11-23-1' }));
      assertErrorFromAnswer(error, attempts, 422, 'idempotency_key_reused');
      assert.deepEqual((await petstore.messages.list()).data.map((m) => m.id), [first.id]);
    });

    test('when the answer to send is lost after the server queued the message, then the retry (same key) replays the 202: one message', async () => {
      const lost = loseAnswer();
      const { petstore, attempts } = await client({ maxRetries: 2, onAnswer: lost.onAnswer });
      lost.armOnce();
      const sent = await petstore.messages.send('sent once');
      assert.deepEqual(attempts.map((a) => [a.status, a.replayed, a.error === undefined]), [[202, null, false], [202, 'true', true]]);
      assert.equal(attempts[0]!.idempotencyKey, attempts[1]!.idempotencyKey, 'the same key on the retry');
      assert.deepEqual((await petstore.messages.list()).data.map((m) => m.id), [sent.id]);
    });

    test('when the text is too long, empty, blank or has control characters (400), then send fails with PetstoreError invalid_request, not retried, nothing sent; 2000 characters are accepted', async () => {
      const { petstore, attempts } = await client({ maxRetries: 2 });
      for (const text of ['x'.repeat(2001), 'tab\there', 'line\nbreak', 'nul\u0000', '', '   ']) {
        attempts.length = 0;
        const error = await petstoreError(petstore.messages.send(text));
        assertErrorFromAnswer(error, attempts, 400, 'invalid_request');
        assert.match(error.message, /"message"|at most 2000/);
      }
      assert.deepEqual((await petstore.messages.list()).data, []);
      const longest = await petstore.messages.send('🐶'.repeat(2000));
      assert.equal(longest.message.length, 4000, '2000 code points (4000 UTF-16 units) are accepted');
    });

    test('when the API key is unknown (401), then send, get, list, listAll and waitUntilDone fail with PetstoreError unauthorized, not retried', async () => {
      const { petstore, attempts } = recordingClient(app.url, 'psk_live_000000000000000000000000000000', { maxRetries: 2 });
      const calls: Array<() => Promise<unknown>> = [
        () => petstore.messages.send('hi'),
        () => petstore.messages.get('msg_000000000000000000000000'),
        () => petstore.messages.list(),
        () => petstore.messages.listAll().next(),
        () => petstore.messages.waitUntilDone('msg_000000000000000000000000'),
      ];
      for (const call of calls) {
        attempts.length = 0;
        assertErrorFromAnswer(await petstoreError(call()), attempts, 401, 'unauthorized');
      }
    });

    test('when the message belongs to another account or does not exist (404), then get and waitUntilDone fail with PetstoreError not_found, not retried', async () => {
      const owner = await client();
      const sent = await owner.petstore.messages.send('mine only');
      const stranger = await client({ maxRetries: 2 });
      const calls: Array<(p: Petstore) => Promise<unknown>> = [
        (p) => p.messages.get(sent.id),
        (p) => p.messages.waitUntilDone(sent.id),
        (p) => p.messages.get('msg_000000000000000000000000'),
        (p) => p.messages.get('a/b?c#d'),
      ];
      for (const call of calls) {
        stranger.attempts.length = 0;
        assertErrorFromAnswer(await petstoreError(call(stranger.petstore)), stranger.attempts, 404, 'not_found');
      }
      assert.equal(path(stranger.attempts[0]!), `${API}/messages/a%2Fb%3Fc%23d`, 'the id is one path segment');
      assert.deepEqual((await stranger.petstore.messages.list()).data, []);
      assert.equal((await owner.petstore.messages.get(sent.id)).id, sent.id);
    });

    test('when list is called with limit, status and cursor, then it returns one page oldest first, and nextCursor from Link rel="next" until the last page', async () => {
      const { petstore, attempts } = await client();
      const sent: Message[] = [];
      for (let i = 0; i < 5; i += 1) sent.push(await petstore.messages.send(`m${i}`));
      const delivered: Message[] = [];
      for (const m of sent) delivered.push(await petstore.messages.waitUntilDone(m.id, { intervalMs: 20 }));
      const first = await petstore.messages.list({ limit: 2 });
      assert.deepEqual(first.data, delivered.slice(0, 2));
      assert.ok(first.nextCursor);
      const second = await petstore.messages.list({ limit: 2, cursor: first.nextCursor });
      assert.deepEqual(second.data, delivered.slice(2, 4));
      assert.deepEqual(await petstore.messages.list({ limit: 2, cursor: second.nextCursor }), { data: delivered.slice(4) }, 'no nextCursor on the last page');
      assert.deepEqual(query(attempts.at(-1)!), { limit: '2', cursor: second.nextCursor });
      const params: ListMessagesParams = { status: 'delivered', limit: 3 };
      const page = await petstore.messages.list(params);
      assert.deepEqual(page.data, delivered.slice(0, 3));
      assert.deepEqual(await petstore.messages.list({ ...params, cursor: page.nextCursor }), { data: delivered.slice(3) });
      assert.deepEqual(query(attempts.at(-1)!), { limit: '3', status: 'delivered', cursor: page.nextCursor });
      assert.deepEqual(await petstore.messages.list({ status: 'failed' }), { data: [] });
      assert.deepEqual(await petstore.messages.list({ status: 'queued' }), { data: [] });
      assert.deepEqual(query(attempts.at(-1)!), { status: 'queued' }, 'only the parameters given are sent');
    });

    test('when listAll pages through 7 messages with limit 3, then each comes exactly once, oldest first, one request per page, fetched as iterated', async () => {
      const { petstore, attempts } = await client();
      const sent: Message[] = [];
      for (let i = 0; i < 7; i += 1) sent.push(await petstore.messages.send(`n${i}`));
      attempts.length = 0;
      const iterator = petstore.messages.listAll({ limit: 3 });
      assert.equal(attempts.length, 0, 'nothing fetched before the first next()');
      const seen: Message[] = [];
      for await (const message of iterator) {
        seen.push(message);
        if (seen.length === 1) assert.equal(attempts.length, 1, 'one page fetched for the first item');
      }
      assert.deepEqual(seen.map((m) => m.id), sent.map((m) => m.id));
      assert.deepEqual(seen.map((m) => m.message), sent.map((m) => m.message));
      assert.deepEqual(attempts.map((a) => [a.method, path(a), a.status]), Array(3).fill(['GET', `${API}/messages`, 200]));
      assert.deepEqual(attempts.map((a) => Object.keys(query(a)).sort()), [['limit'], ['cursor', 'limit'], ['cursor', 'limit']]);
      for (const m of sent) await petstore.messages.waitUntilDone(m.id, { intervalMs: 20 });
      const delivered: Message[] = [];
      for await (const message of petstore.messages.listAll({ status: 'delivered', limit: 100 })) delivered.push(message);
      assert.deepEqual(delivered.map((m) => m.id), sent.map((m) => m.id));
    });

    test('when waitUntilDone is given a timeoutMs that is not positive or an intervalMs below 0, then it rejects with a TypeError and sends nothing', async () => {
      const { petstore, attempts } = await client();
      for (const options of [{ timeoutMs: 0 }, { timeoutMs: -1 }, { timeoutMs: Number.NaN }, { intervalMs: -1 }, { intervalMs: Number.POSITIVE_INFINITY }]) {
        await assert.rejects(petstore.messages.waitUntilDone('msg_000000000000000000000000', options), TypeError, JSON.stringify(options));
      }
      assert.equal(attempts.length, 0);
    });
  });

  describe(`@petstore/client messages whose delivery fails (${backend.name})`, () => {
    // The server's clock is the test's: frozen, a failed attempt's retry (1 s, 2 s, 4 s, 8 s later)
    // never comes due, so the message stays queued; moved on, the retries run until it is failed.
    const delivery = scriptedDelivery((text, n) => text.startsWith('never') || (text === 'flaky' && n < 3));
    const { attempts } = delivery;
    const getApp = sharedApp({ backend, env, clock: delivery.clock, deliver: delivery.deliver });
    let app: TestApp;
    before(async () => {
      app = await getApp();
    });
    /** Resolves once the server has made the first delivery attempt of `text`. */
    const firstAttempt = async (text: string) => {
      for (const deadline = Date.now() + 3000; !attempts.has(text); await new Promise((r) => setTimeout(r, 10))) {
        assert.ok(Date.now() < deadline, `no delivery attempt of ${text}`);
      }
    };

    test('when the message stays queued, then waitUntilDone rejects with PetstoreError timeout (status 0) once timeoutMs has passed, having polled every intervalMs', async () => {
      const { petstore, attempts: sent } = await newAccountClient(app);
      const message = await petstore.messages.send('never 1');
      await firstAttempt('never 1');
      sent.length = 0;
      const { error, elapsed } = await timedOut(() => petstore.messages.waitUntilDone(message.id, { timeoutMs: 400, intervalMs: 50 }));
      assert.ok(elapsed >= 395 && elapsed < 1500, `rejected after ${elapsed} ms`);
      assert.match(error.message, new RegExp(`${message.id} .*within 400 ms \\(still queued\\)`));
      assert.ok(sent.length >= 2 && sent.length <= 9, `${sent.length} polls in 400 ms at 50 ms`);
      // The poll in flight at the deadline is not waited for: it may still be unanswered here.
      const answered = sent.filter((poll) => poll.status !== undefined);
      assert.ok(answered.length >= sent.length - 1, 'at most the last poll is still in flight');
      for (const poll of answered) assert.deepEqual([poll.method, path(poll), poll.status], ['GET', `${API}/messages/${message.id}`, 200]);
      assert.equal((await petstore.messages.get(message.id)).status, 'queued');
    });

    test('when the status resource answers with Retry-After, then waitUntilDone waits that long between polls instead of intervalMs', async () => {
      const { key } = await app.createAccount();
      const recorder = recordingFetch();
      const polledAt: number[] = [];
      // The server sends no Retry-After on GET /messages/{id}: this fetch adds one to its answers.
      const withRetryAfter: typeof fetch = async (input, init) => {
        const response = await recorder.fetch(input, init);
        if ((init?.method ?? 'GET') !== 'GET') return response;
        polledAt.push(Date.now());
        const headers = new Headers(response.headers);
        headers.set('retry-after', '1');
        return new Response(await response.text(), { status: response.status, headers });
      };
      const petstore = new Petstore({ apiKey: key, baseUrl: `${app.url}/v1`, fetch: withRetryAfter });
      const message = await petstore.messages.send('never 2');
      await firstAttempt('never 2');
      const { elapsed } = await timedOut(() => petstore.messages.waitUntilDone(message.id, { timeoutMs: 2500, intervalMs: 10 }));
      assert.ok(elapsed >= 2495 && elapsed < 3500, `rejected after ${elapsed} ms`);
      assert.ok(polledAt.length >= 2 && polledAt.length <= 3, `polls at about 0, 1 and 2 s, not every 10 ms: ${polledAt.length}`);
      for (let i = 1; i < polledAt.length; i += 1) assert.ok(polledAt[i]! - polledAt[i - 1]! >= 990, `gap ${polledAt[i]! - polledAt[i - 1]!} ms`);
    });

    test(`when every delivery attempt fails, then waitUntilDone resolves with the message failed after ${MAX_ATTEMPTS} attempts, with its failureReason and no deliveredAt; one that recovers resolves delivered`, async () => {
      const { petstore } = await newAccountClient(app);
      const never = await petstore.messages.send('never 3');
      const flaky = await petstore.messages.send('flaky');
      await firstAttempt('never 3');
      const ticker = setInterval(() => delivery.advance(5_000), 20); // each tick makes the next retry due
      try {
        const [failed, delivered] = await Promise.all([
          petstore.messages.waitUntilDone(never.id, { timeoutMs: 10_000, intervalMs: 20 }),
          petstore.messages.waitUntilDone(flaky.id, { timeoutMs: 10_000, intervalMs: 20 }),
        ]);
        assert.equal(failed.status, 'failed');
        assert.match(failed.failureReason!, new RegExp(`after ${MAX_ATTEMPTS} attempts: recipient unreachable \\(attempt ${MAX_ATTEMPTS}\\)`));
        assert.equal(failed.deliveredAt, undefined);
        assert.deepEqual(failed, { ...never, status: 'failed', failureReason: failed.failureReason });
        assert.equal(attempts.get('never 3'), MAX_ATTEMPTS);
        assert.equal(delivered.status, 'delivered', 'delivered on its third attempt');
        assert.equal(delivered.failureReason, undefined);
        assert.match(delivered.deliveredAt!, RFC3339_UTC);
        assert.equal(attempts.get('flaky'), 3);
      } finally {
        clearInterval(ticker);
      }
      assert.deepEqual((await petstore.messages.list({ status: 'failed' })).data.map((m) => m.id), [never.id]);
    });
  });
}

describe('@petstore/client messages.waitUntilDone: the deadline aborts the poll in flight', () => {
  test('when a poll gets no answer, then at timeoutMs the call rejects with timeout, the request is aborted (its connection closed) and nothing is retried', async () => {
    const http = await import('node:http');
    const requests: Array<{ url: string; closedAt?: number }> = [];
    // A server that reads each request and never answers.
    const silent = http.createServer((req) => {
      const seen: { url: string; closedAt?: number } = { url: req.url ?? '' };
      requests.push(seen);
      req.socket.on('close', () => (seen.closedAt = Date.now()));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      const petstore = new Petstore({ apiKey: 'psk_live_unused', baseUrl: `http://127.0.0.1:${port}/v1`, timeoutMs: 60_000 });
      const started = Date.now();
      const { elapsed } = await timedOut(() => petstore.messages.waitUntilDone('msg_1', { timeoutMs: 300 }));
      assert.ok(elapsed >= 295 && elapsed < 1500, `rejected after ${elapsed} ms`);
      for (const deadline = Date.now() + 2000; requests[0]?.closedAt === undefined; await new Promise((r) => setTimeout(r, 10))) {
        assert.ok(Date.now() < deadline, 'the poll in flight was aborted: its connection closed');
      }
      assert.ok(requests[0]!.closedAt! - started < 1500, 'closed at the deadline, not at the 60 s request timeout');
      await new Promise((r) => setTimeout(r, 700)); // a retry would come after a backoff of at least 250 ms
      assert.deepEqual(requests.map((r) => r.url), ['/example/v1/messages/msg_1'], 'one poll, not retried after the deadline');
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
