// GET /v1/events/stream against the built server process: through real HAProxy with
// deploy/haproxy.cfg a stream outlives HAProxy's 15 s `timeout server` (the quiet stretch is
// longer than it; the stream's path has its own timeout), and on SIGTERM every stream, direct or
// through HAProxy, ends cleanly after its last event, saying the id to resume from. ~25 s.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { haproxySkip, type Haproxy, startHaproxy } from './helpers/haproxy.js';
import { createAccountWithKey, httpRequest, type ServerProcess, startServerProcess } from './helpers/process.js';
import { openSse, type SseStream } from './helpers/sse.js';

// Longer than deploy/haproxy.cfg's `timeout server 15s`, shorter than the stream path's 1 m.
const HEARTBEAT_MS = 16_500;

describe('event stream through HAProxy, and SIGTERM', { skip: haproxySkip }, () => {
  let dir: string;
  let server: ServerProcess;
  let lb: Haproxy;
  let key: string;
  const env = () => ({ PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db'), PETSTORE_EVENT_STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS) });
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-stream-'));
    server = await startServerProcess(env());
    ({ key } = await createAccountWithKey(env()));
    const address = server.url.replace('http://', '');
    lb = await startHaproxy([address, address, address]);
    await lb.waitForStatus('a', 'UP', 10_000);
  });
  after(async () => {
    await lb?.stop();
    if (server?.child.exitCode === null) await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const createPet = async (base: string, name: string) => {
    const res = await httpRequest(base, 'POST', '/v1/pets', { key, body: { name, categoryId: 1 } });
    assert.equal(res.status, 201);
  };

  test('when a stream through HAProxy is quiet for longer than its timeout server, then it stays open: the heartbeat arrives, then events', async () => {
    const through = await openSse(`${lb.url}/v1/events/stream?after=0`, key);
    const direct = await openSse(`${server.url}/v1/events/stream?after=0`, key);
    assert.equal(through.status, 200);
    assert.match((await through.next())?.comment ?? '', /^after 0/);
    const started = Date.now();
    const heartbeat = await through.next(HEARTBEAT_MS + 5_000);
    assert.equal(heartbeat?.comment, '', `a heartbeat after ${Date.now() - started} ms, not the end of the stream`);
    await createPet(lb.url, 'Through HAProxy');
    const [event] = await through.events(1, 2_000);
    assert.equal(event!.id, '1');
    assert.deepEqual((await direct.events(1)).map((f) => f.id), ['1']);
    await shutdown([through, direct]);
  });

  async function shutdown(streams: SseStream[]) {
    const exit = server.stop('SIGTERM');
    for (const stream of streams) {
      const frames = [];
      for (let frame = await stream.next(10_000); frame; frame = await stream.next(10_000)) frames.push(frame);
      assert.ok(stream.ended());
      assert.match(frames.at(-1)?.comment ?? '', /reconnect with Last-Event-ID: 1$/, 'the last id sent, then a clean end');
    }
    assert.equal(await exit, 0);
  }
});
