// GET /v1/events/stream over real HTTP, on every store: frames in commit order carrying the
// getEvent JSON, resume from every position (Last-Event-ID and ?after=) without gap or repeat,
// "from now" by default, live delivery, another instance's commit within 1 s, type filters,
// account isolation, scopes, bad input, the 5-stream limit, heartbeats and the slow-consumer cut-off.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sharedApp, startApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { openSse, type SseFrame } from '../helpers/sse.js';

const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000', PETSTORE_EVENT_STREAM_HEARTBEAT_MS: '300' };
const STREAM = '/v1/events/stream';
type Account = { accountId: string; key: string };

for (const backend of backends) {
  describe(`event stream (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });

    const newPet = async (app: TestApp, account: Account, name = 'Rex') => {
      const res = await app.request('POST', '/v1/pets', { key: account.key, body: { name, categoryId: 1, status: 'available' } });
      assert.equal(res.status, 201, res.text);
      return res.body as { id: number };
    };
    const seqs = (frames: SseFrame[]) => frames.map((f) => Number(f.id));

    test('when events are committed, then the stream sends each in order with id = sequence, its type and the getEvent JSON, and resumes from every position without gap or repeat', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const live = await openSse(`${app.url}${STREAM}?after=0`, owner.key);
      assert.equal(live.status, 200);
      assert.match(live.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.ok(live.headers.get('ratelimit-policy'), 'rate-limit headers as on every operation');
      const pet = await newPet(app, owner);
      await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: pet.id } });
      await newPet(app, owner, 'Tom');
      const frames = await live.events(4);
      live.close();
      assert.deepEqual(seqs(frames), [1, 2, 3, 4]);
      assert.deepEqual(frames.map((f) => f.event), ['pet.created', 'order.placed', 'pet.status_changed', 'pet.created']);
      for (const frame of frames) {
        const event = JSON.parse(frame.data!) as { id: string; sequence: number };
        assert.equal(event.sequence, Number(frame.id));
        const one = await app.request('GET', `/v1/events/${event.id}`, { key: owner.key });
        assert.equal(one.text, frame.data, 'the same bytes as getEvent');
      }
      for (let position = 0; position <= 4; position++) {
        for (const how of ['header', 'query'] as const) {
          const url = how === 'query' ? `${app.url}${STREAM}?after=${position}` : `${app.url}${STREAM}?after=0`;
          const resumed = await openSse(url, owner.key, how === 'header' ? { 'last-event-id': String(position) } : {});
          const got = await resumed.events(4 - position);
          await newPet(app, owner, `After ${position} ${how}`);
          const [next] = await resumed.events(1);
          resumed.close();
          assert.deepEqual(seqs(got), [1, 2, 3, 4].slice(position), `resume after ${position} (${how})`);
          assert.ok(Number(next!.id) > 4, 'then the live event, nothing repeated');
        }
      }
    });

    test('when a stream is opened without after or Last-Event-ID, then it starts with the next event committed; a quiet stream gets heartbeat comments', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      await newPet(app, owner, 'Old');
      const stream = await openSse(`${app.url}${STREAM}`, owner.key);
      const opened = await stream.next();
      assert.match(opened?.comment ?? '', /^after 1$/);
      const heartbeat = await stream.next(2_000);
      assert.equal(heartbeat?.comment, '', 'a bare comment after 300 ms of nothing');
      const started = Date.now();
      await newPet(app, owner, 'New');
      const [frame] = await stream.events(1, 1_000);
      assert.ok(Date.now() - started < 1_000);
      stream.close();
      assert.equal(frame!.id, '2');
    });

    test('when filtered by type, then only those kinds arrive; another account\'s events never do', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const other = await app.createAccount();
      const orders = await openSse(`${app.url}${STREAM}?after=0&type=order.placed,order.cancelled`, owner.key);
      const mine = await openSse(`${app.url}${STREAM}?after=0`, owner.key);
      const theirs = await openSse(`${app.url}${STREAM}?after=0`, other.key);
      const pet = await newPet(app, owner);
      const order = (await app.request('POST', '/v1/store/orders', { key: owner.key, body: { petId: pet.id } })).body as { id: number };
      await app.request('POST', `/v1/store/orders/${order.id}/cancel`, { key: owner.key });
      await newPet(app, other, 'Theirs');
      const got = await orders.events(2);
      assert.deepEqual(got.map((f) => [f.id, f.event]), [['2', 'order.placed'], ['4', 'order.cancelled']]);
      assert.deepEqual(seqs(await mine.events(5)), [1, 2, 3, 4, 5]);
      const [their] = await theirs.events(1);
      assert.equal(JSON.parse(their!.data!).data.object.name, 'Theirs');
      await sleep(300);
      assert.equal((await theirs.next(1_000))?.comment, '', 'then only heartbeats: none of the owner\'s events');
      for (const s of [orders, mine, theirs]) s.close();
    });

    test('when the input is bad or the key may not read events, then the stream is refused with the status and code', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const refused = async (query: string, key: string | undefined, headers: Record<string, string>, status: number, code: string) => {
        const res = await openSse(`${app.url}${STREAM}${query}`, key, headers);
        assert.equal(res.status, status, query);
        assert.equal((res.body as { code: string }).code, code, query);
      };
      await refused('?type=pet.exploded', owner.key, {}, 400, 'invalid_request');
      await refused('?after=-1', owner.key, {}, 400, 'invalid_request');
      await refused('?after=x', owner.key, {}, 400, 'invalid_request');
      await refused('', owner.key, { 'last-event-id': 'evt_1' }, 400, 'invalid_request');
      await refused('?limit=5', owner.key, {}, 400, 'invalid_request');
      await refused('', undefined, {}, 401, 'unauthorized');
      const restricted = await app.request('POST', '/v1/api-keys', { key: owner.key, body: { scopes: ['pets:read'] } });
      assert.equal(restricted.status, 201, restricted.text);
      await refused('', (restricted.body as { key: string }).key, {}, 403, 'insufficient_scope');
      const reader = await app.request('POST', '/v1/api-keys', { key: owner.key, body: { scopes: ['events:read'] } });
      const ok = await openSse(`${app.url}${STREAM}`, (reader.body as { key: string }).key);
      assert.equal(ok.status, 200, 'events:read is enough');
      ok.close();
    });

    test('when a key has 5 streams open, then a sixth is refused with 429 rate_limited until one closes', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const open = await Promise.all(Array.from({ length: 5 }, () => openSse(`${app.url}${STREAM}`, owner.key)));
      assert.deepEqual(open.map((s) => s.status), [200, 200, 200, 200, 200]);
      const sixth = await openSse(`${app.url}${STREAM}`, owner.key);
      assert.equal(sixth.status, 429);
      assert.equal((sixth.body as { code: string }).code, 'rate_limited');
      assert.ok(sixth.headers.get('retry-after'));
      open[0]!.close();
      await waitFor(() => app.services.eventStreams.openCount() === 4);
      const again = await openSse(`${app.url}${STREAM}`, owner.key);
      assert.equal(again.status, 200);
      for (const s of [...open, again]) s.close();
    });

    test('when clients go away while their streams are being opened, then none keeps a slot: the key can still open 5', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const port = Number(new URL(app.url).port);
      // Gone after 0–9 ms: some while the request waits on the store (its key, the log's last sequence).
      for (let delay = 0; delay < 10; delay++) {
        const socket = net.connect(port, '127.0.0.1');
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.write(`GET ${STREAM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${owner.key}\r\n\r\n`);
        await sleep(delay);
        socket.resetAndDestroy();
      }
      await waitFor(() => app.services.eventStreams.openCount() === 0);
      const open = await Promise.all(Array.from({ length: 5 }, () => openSse(`${app.url}${STREAM}`, owner.key)));
      assert.deepEqual(open.map((s) => s.status), [200, 200, 200, 200, 200]);
      for (const s of open) s.close();
      await waitFor(() => app.services.eventStreams.openCount() === 0);
    });

    test('when a stream is opened after shutdown began (its request admitted before), then it ends at once, as the others did', async (t) => {
      const app = await startApp(t, { backend, env });
      const owner = await app.createAccount();
      const streams = app.services.eventStreams;
      const before = await streams.open({ accountId: owner.accountId, keyId: 'key_a', keyExpiresAtMs: Infinity, afterSeq: 0 });
      streams.closeAll();
      const after = await streams.open({ accountId: owner.accountId, keyId: 'key_a', keyExpiresAtMs: Infinity, afterSeq: 0 });
      for (const sub of [before, after]) {
        assert.equal(await sub.wait(1_000), 'closed');
        assert.deepEqual(sub.ended, { reason: 'shutdown' });
        sub.release();
      }
    });

    test('when another instance on the same database commits an event, then an open stream here has it within 1 s', async (t) => {
      const app = await getApp();
      const other = await startApp(t, { backend, env, databaseUrl: app.config.database.url });
      const owner = await app.createAccount();
      const stream = await openSse(`${app.url}${STREAM}`, owner.key);
      await stream.next();
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        await newPet(other, owner, `Elsewhere ${i}`);
        const [frame] = await stream.events(1, 1_000);
        const took = Date.now() - started;
        assert.ok(took < 1_000, `took ${took} ms`);
        assert.equal(JSON.parse(frame!.data!).data.object.name, `Elsewhere ${i}`);
      }
      stream.close();
    });
  });
}

describe('event stream: a consumer that stops reading', () => {
  const getApp = sharedApp({ env: { ...env, PETSTORE_EVENT_STREAM_HEARTBEAT_MS: '15000', PETSTORE_EVENT_STREAM_BUFFER_BYTES: '16384' } });

  test('when a client does not read while events pile up, then its stream is cut off (memory stays bounded) and it can resume by id', async () => {
    const app = await getApp();
    const owner = await app.createAccount();
    const port = Number(new URL(app.url).port);
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET ${STREAM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${owner.key}\r\n\r\n`);
    await waitFor(() => received.includes('retry: 1000'));
    socket.pause();
    const closed = new Promise((resolve) => socket.once('close', resolve));
    // Enough events to fill the kernel's buffers on loopback and then the server's 16 KiB.
    const name = 'x'.repeat(240);
    for (let batch = 0; batch < 150 && app.services.eventStreams.openCount() > 0; batch++) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => app.services.pets.create(owner.accountId, { name: `${name}${i}`, categoryId: 1, status: 'available' })));
    }
    await waitFor(() => app.services.eventStreams.openCount() === 0, 15_000);
    assert.ok(app.logs.some((line) => line.includes('event stream cut off')), 'the cut-off is logged');
    socket.resume();
    await closed;
    const ids = [...received.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    assert.ok(ids.length > 0 && ids.length < 15_000, `got ${ids.length} events before the cut`);
    assert.deepEqual(ids, ids.map((_, i) => i + 1), 'what arrived is in order, without gaps');
    const resumed = await openSse(`${app.url}${STREAM}`, owner.key, { 'last-event-id': String(ids.at(-1)) });
    const [next] = await resumed.events(1);
    resumed.close();
    assert.equal(Number(next!.id), ids.at(-1)! + 1);
  });
});

async function waitFor(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(20);
  }
}
