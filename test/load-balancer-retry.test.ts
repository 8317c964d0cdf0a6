// deploy/haproxy.cfg's retry policy, with real HAProxy in front of three small HTTP servers:
// "a" passes its health checks but closes every other connection without answering (an
// instance that died, or a kept-alive connection to it that is already dead); "b" and "c"
// answer. A request a closed is repeated on another instance only when repeating it cannot
// apply it twice (GET, HEAD, or a request with an Idempotency-Key); for any other HAProxy
// closes the client's connection as the instance did (the client sees a network error, as it
// would from the instance itself) and never sends it twice. And the Keep-Alive time clients are
// told is HAProxy's own, not the instances' longer one.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { KEEP_ALIVE_TIMEOUT_MS } from '../src/http/instance.js';
import { HAPROXY_CONFIG, haproxySkip, type Haproxy, startHaproxy } from './helpers/haproxy.js';

interface Instance {
  address: string;
  /** Requests received (health checks aside), as "METHOD key-or-dash". */
  seen: string[];
  close(): Promise<void>;
}

async function startInstance(answers: boolean): Promise<Instance> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    if (req.url === '/readyz') {
      res.writeHead(200).end('{}');
      return;
    }
    seen.push(`${req.method} ${req.headers['idempotency-key'] ?? '-'}`);
    if (!answers) {
      req.socket.destroy();
      return;
    }
    req.resume();
    req.on('end', () => res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' }).end('{}'));
  });
  // As `petstore serve` does: its Keep-Alive time on every answer.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

describe('HAProxy retry policy (deploy/haproxy.cfg)', { skip: haproxySkip }, () => {
  let lb: Haproxy;
  let instances: Instance[];
  before(async () => {
    instances = [await startInstance(false), await startInstance(true), await startInstance(true)];
    lb = await startHaproxy(instances.map((i) => i.address));
  });
  after(async () => {
    await lb?.stop();
    for (const instance of instances ?? []) await instance.close();
  });

  const reset = () => {
    for (const instance of instances) instance.seen.length = 0;
  };
  /** Sequential requests (one at a time: leastconn then takes the servers in turn); 0 for a network error. */
  const send = async (count: number, init: (i: number) => RequestInit) => {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) {
      try {
        const res = await fetch(`${lb.url}/v1/pets`, { ...init(i), signal: AbortSignal.timeout(5000) });
        await res.arrayBuffer();
        statuses.push(res.status);
      } catch (error) {
        assert.match(String((error as Error).cause), /other side closed|ECONNRESET/);
        statuses.push(0);
      }
    }
    return statuses;
  };
  const [dead, ...alive] = [0, 1, 2];
  const seenBy = (i: number) => instances[i]!.seen;
  const answered = () => alive.flatMap((i) => seenBy(i));

  test('when an instance closes a GET without answering, then HAProxy repeats it on another and the client gets its 200', async () => {
    reset();
    const statuses = await send(9, () => ({}));
    assert.ok(seenBy(dead!).length > 0, 'the closing instance was given some GETs');
    assert.deepEqual(statuses, Array(9).fill(200));
    assert.equal(answered().length, 9, 'each GET answered once, by an instance that answers');
  });

  test('when an instance closes a POST with an Idempotency-Key without answering, then HAProxy repeats it, with its key, on another', async () => {
    reset();
    const statuses = await send(9, (i) => ({ method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': `key-${i}` }, body: '{}' }));
    assert.ok(seenBy(dead!).length > 0, 'the closing instance was given some POSTs');
    assert.deepEqual(statuses, Array(9).fill(201));
    assert.deepEqual(answered().sort(), Array.from({ length: 9 }, (_, i) => `POST key-${i}`).sort(), 'each POST answered once, with its key');
  });

  test('when an instance closes a POST without an Idempotency-Key without answering, then the client sees the connection closed and the POST is never sent again', async () => {
    reset();
    const statuses = await send(9, () => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }));
    const closed = seenBy(dead!).length;
    assert.ok(closed > 0, 'the closing instance was given some POSTs');
    assert.equal(statuses.filter((s) => s === 0).length, closed, 'one closed connection for each POST the instance closed');
    assert.equal(statuses.filter((s) => s === 201).length, 9 - closed);
    assert.equal(answered().length, 9 - closed, 'no POST reached two instances');
  });

  test('when an instance announces a longer keep-alive than HAProxy keeps an idle client connection, then the client is told a time within HAProxy\'s', async () => {
    const idle = /^\s*timeout http-keep-alive (\d+)s$/m.exec(readFileSync(HAPROXY_CONFIG, 'utf8'));
    assert.ok(idle, 'deploy/haproxy.cfg sets timeout http-keep-alive in seconds');
    const res = await fetch(`${lb.url}/v1/pets`, { signal: AbortSignal.timeout(5000) });
    await res.arrayBuffer();
    const announced = /^timeout=(\d+)$/.exec(res.headers.get('keep-alive') ?? '');
    assert.ok(announced, `Keep-Alive: timeout=N announced (got ${res.headers.get('keep-alive')})`);
    // A client keeping a connection for the announced time must not reach HAProxy's close.
    assert.ok(Number(announced[1]) + 2 <= Number(idle[1]), `announced ${announced[1]} s, HAProxy closes after ${idle[1]} s`);
  });
});
