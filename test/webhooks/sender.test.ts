// The webhook sender (src/webhooks/sender.ts) against real receivers on 127.0.0.1.
//
// Every test connects to 127.0.0.1 only. Sends go through resolvers that answer 127.0.0.1
// (with or without a refused address next to it); answers with a public address are tested on
// the lookup function alone, with no socket at all, so even a broken policy cannot connect out.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { parseAllowedNetworks, type AllowedNetworks } from '../../src/webhooks/address-policy.js';
import { createPolicyLookup, createWebhookSender, parseRetryAfter, type WebhookResolver, type WebhookSenderOptions } from '../../src/webhooks/sender.js';

interface Receiver {
  url: string;
  port: number;
  connections: number;
  requests: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }>;
}

/** An http server on 127.0.0.1 that records connections and requests, then runs `handler`. */
async function receiver(
  t: TestContext,
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) => res.end(),
): Promise<Receiver> {
  const server = http.createServer();
  const seen: Receiver = { url: '', port: 0, connections: 0, requests: [] };
  server.on('connection', () => seen.connections++);
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  seen.port = (server.address() as AddressInfo).port;
  seen.url = `http://127.0.0.1:${seen.port}`;
  return seen;
}

const loopback = parseAllowedNetworks('127.0.0.1/32');
const none = parseAllowedNetworks(undefined);

function sender(t: TestContext, options: Partial<WebhookSenderOptions> = {}) {
  const created = createWebhookSender({ allowHttp: true, allowed: loopback, timeoutMs: 2000, ...options });
  t.after(() => created.close());
  return created;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('responses', () => {
  test('200, with the body and headers as sent; the sender owns type, length, agent and host', async (t) => {
    const hook = await receiver(t);
    const result = await sender(t).send(
      `${hook.url}/hook?x=1`,
      { 'webhook-id': 'msg_1', 'content-type': 'text/plain', 'User-Agent': 'spoof', Host: 'evil.example', 'Transfer-Encoding': 'chunked' },
      '{"type":"pet.created","name":"Rex ü"}',
    );
    assert.deepEqual(result, { kind: 'response', status: 200 });
    assert.equal(hook.requests.length, 1);
    const [request] = hook.requests;
    assert.equal(request?.method, 'POST');
    assert.equal(request?.url, '/hook?x=1');
    assert.equal(request?.body, '{"type":"pet.created","name":"Rex ü"}');
    assert.equal(request?.headers['content-type'], 'application/json');
    assert.equal(request?.headers['user-agent'], 'Petstore-Webhooks/1');
    assert.equal(request?.headers['content-length'], String(Buffer.byteLength('{"type":"pet.created","name":"Rex ü"}')));
    assert.equal(request?.headers['webhook-id'], 'msg_1');
    assert.equal(request?.headers.host, `127.0.0.1:${hook.port}`);
    assert.equal(request?.headers['transfer-encoding'], undefined);
  });

  test('500 is a status', async (t) => {
    const hook = await receiver(t, (_req, res) => {
      res.statusCode = 500;
      res.end('internal details the sender must not keep');
    });
    assert.deepEqual(await sender(t).send(hook.url, {}, '{}'), { kind: 'response', status: 500 });
  });

  test('301 is a status, and the redirect is not followed', async (t) => {
    const target = await receiver(t);
    const hook = await receiver(t, (_req, res) => {
      res.writeHead(301, { Location: `${target.url}/elsewhere` });
      res.end();
    });
    assert.deepEqual(await sender(t).send(hook.url, {}, '{}'), { kind: 'response', status: 301 });
    await delay(50);
    assert.equal(target.connections, 0);
    assert.equal(target.requests.length, 0);
  });

  test('429 with Retry-After: 7 gives 7000 ms', async (t) => {
    const hook = await receiver(t, (_req, res) => {
      res.writeHead(429, { 'Retry-After': '7' });
      res.end();
    });
    assert.deepEqual(await sender(t).send(hook.url, {}, '{}'), { kind: 'response', status: 429, retryAfterMs: 7000 });
  });

  test('503 with an HTTP-date Retry-After gives the ms until then', async (t) => {
    const hook = await receiver(t, (_req, res) => {
      res.writeHead(503, { 'Retry-After': new Date(Date.now() + 120_000).toUTCString() });
      res.end();
    });
    const result = await sender(t).send(hook.url, {}, '{}');
    assert.equal(result.kind === 'response' && result.status, 503);
    const ms = result.kind === 'response' ? result.retryAfterMs ?? -1 : -1;
    assert.ok(ms > 118_000 && ms <= 120_000, `retryAfterMs ${ms}`);
  });

  test('Retry-After is ignored on other statuses and when garbage', async (t) => {
    let status = 200;
    const hook = await receiver(t, (_req, res) => {
      res.writeHead(status, { 'Retry-After': status === 200 ? '5' : 'soon' });
      res.end();
    });
    const send = sender(t);
    assert.deepEqual(await send.send(hook.url, {}, '{}'), { kind: 'response', status: 200 });
    status = 429;
    assert.deepEqual(await send.send(hook.url, {}, '{}'), { kind: 'response', status: 429 });
  });

  test('a receiver that never answers: no response within the timeout', async (t) => {
    const hook = await receiver(t, () => {});
    const started = Date.now();
    const result = await sender(t, { timeoutMs: 300 }).send(hook.url, {}, '{}');
    assert.deepEqual(result, { kind: 'error', category: 'timeout', reason: 'no response within 300 ms' });
    assert.ok(Date.now() - started < 2000);
  });

  test('a closed port: ECONNREFUSED', async (t) => {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    assert.deepEqual(await sender(t).send(`http://127.0.0.1:${port}/`, {}, '{}'), { kind: 'error', category: 'connection_failed', reason: 'ECONNREFUSED' });
  });

  test('a 10 MB response body is cut, not read, and its socket is not reused', async (t) => {
    const total = 10 * 1024 * 1024;
    let written = 0;
    let cut: Promise<boolean> | undefined;
    const hook = await receiver(t, (_req, res) => {
      cut = new Promise((resolve) => res.once('close', () => resolve(!res.writableFinished)));
      res.writeHead(200, { 'Content-Length': String(total) });
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = (): void => {
        while (written < total && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (written >= total) res.end();
      };
      pump();
    });
    const send = sender(t);
    assert.deepEqual(await send.send(hook.url, {}, '{}'), { kind: 'response', status: 200 });
    assert.equal(await cut, true, 'the receiver saw the connection closed before the body was finished');
    assert.ok(written < total, `receiver wrote ${written} of ${total} bytes`);
    await send.send(hook.url, {}, '{}');
    assert.equal(hook.connections, 2);
  });

  test('keep-alive: several sends use one connection', async (t) => {
    const hook = await receiver(t, (_req, res) => res.end('ok'));
    const send = sender(t);
    for (let i = 0; i < 5; i++) assert.deepEqual(await send.send(hook.url, {}, '{}'), { kind: 'response', status: 200 });
    assert.equal(hook.requests.length, 5);
    assert.equal(hook.connections, 1);
  });

  test('maxSockets bounds the connections per receiver', async (t) => {
    const hook = await receiver(t, (_req, res) => setTimeout(() => res.end(), 20));
    const send = sender(t, { maxSockets: 2 });
    const results = await Promise.all(Array.from({ length: 6 }, () => send.send(hook.url, {}, '{}')));
    assert.ok(results.every((r) => r.kind === 'response' && r.status === 200));
    assert.equal(hook.connections, 2);
  });

  test('after close, sends fail without connecting', async (t) => {
    const hook = await receiver(t);
    const send = sender(t);
    send.close();
    assert.deepEqual(await send.send(hook.url, {}, '{}'), { kind: 'error', category: 'connection_failed', reason: 'sender closed' });
    assert.equal(hook.connections, 0);
  });
});

describe('refusal', () => {
  test('a name resolving to 127.0.0.1 with no allowed networks is refused, and nothing connects', async (t) => {
    const hook = await receiver(t);
    const asked: string[] = [];
    const send = sender(t, {
      allowed: none,
      resolve: async (hostname) => {
        asked.push(hostname);
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
    const result = await send.send(`http://hook.example.test:${hook.port}/`, {}, '{}');
    assert.deepEqual(result, { kind: 'error', category: 'address_not_allowed', reason: 'connection refused by policy: 127.0.0.1 is a loopback address' });
    assert.deepEqual(asked, ['hook.example.test']);
    await delay(50);
    assert.equal(hook.connections, 0);
  });

  test('the same name with 127.0.0.1/32 allowed is delivered through the resolver', async (t) => {
    const hook = await receiver(t);
    const send = sender(t, { resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    assert.deepEqual(await send.send(`http://hook.example.test:${hook.port}/`, {}, '{}'), { kind: 'response', status: 200 });
    assert.equal(hook.requests[0]?.headers.host, `hook.example.test:${hook.port}`);
  });

  test('any refused address refuses the name, even when the first one is allowed', async (t) => {
    // 127.0.0.2 is refused (only 127.0.0.1/32 is allowed) yet stays on this machine, whatever happens.
    const hook = await receiver(t);
    const send = sender(t, {
      resolve: async () => [
        { address: '127.0.0.1', family: 4 },
        { address: '127.0.0.2', family: 4 },
      ],
    });
    assert.deepEqual(await send.send(`http://hook.example.test:${hook.port}/`, {}, '{}'), {
      kind: 'error',
      category: 'address_not_allowed',
      reason: 'connection refused by policy: 127.0.0.2 is a loopback address',
    });
    await delay(50);
    assert.equal(hook.connections, 0);
  });

  test('an IP literal 127.0.0.1 without allowance is refused without resolving or connecting', async (t) => {
    const hook = await receiver(t);
    let resolved = 0;
    const send = sender(t, {
      allowed: none,
      resolve: async () => {
        resolved++;
        return [];
      },
    });
    const result = await send.send(`${hook.url}/`, {}, '{}');
    assert.equal(result.kind, 'error');
    assert.match(result.kind === 'error' ? result.reason : '', /^connection refused by policy: .*127\.0\.0\.1 is a loopback address/);
    assert.equal(resolved, 0);
    await delay(50);
    assert.equal(hook.connections, 0);
  });

  test('the connected address is checked again: a socket to a refused address is destroyed before the request is written', async (t) => {
    const hook = await receiver(t);
    // Allows 127.0.0.1 for the URL check, then refuses it: the check on 'connect' must catch it.
    let asked = 0;
    const onceOnly: AllowedNetworks = { entries: ['127.0.0.1/32'], includes: () => ++asked === 1 };
    const send = sender(t, { allowed: onceOnly });
    assert.deepEqual(await send.send(`${hook.url}/`, {}, '{}'), {
      kind: 'error',
      category: 'address_not_allowed',
      reason: 'connection refused by policy: 127.0.0.1 is a loopback address',
    });
    await delay(50);
    assert.equal(hook.requests.length, 0);
  });

  test('http is refused when allowHttp is off, before connecting', async (t) => {
    const hook = await receiver(t);
    const result = await sender(t, { allowHttp: false }).send(hook.url, {}, '{}');
    assert.match(result.kind === 'error' ? result.reason : '', /^connection refused by policy: webhook URLs must use https/);
    assert.equal(hook.connections, 0);
  });

  test('DNS failures are short reasons', async (t) => {
    const failing = sender(t, {
      resolve: async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND hook.example.test'), { code: 'ENOTFOUND' });
      },
    });
    assert.deepEqual(await failing.send('https://hook.example.test/', {}, '{}'), { kind: 'error', category: 'dns_failure', reason: 'DNS: ENOTFOUND' });
    const empty = sender(t, { resolve: async () => [] });
    assert.deepEqual(await empty.send('https://hook.example.test/', {}, '{}'), { kind: 'error', category: 'dns_failure', reason: 'DNS: no addresses' });
  });

  test('a resolver that never answers is covered by the timeout', async (t) => {
    const send = sender(t, { timeoutMs: 200, resolve: () => new Promise(() => {}) });
    assert.deepEqual(await send.send('https://hook.example.test/', {}, '{}'), { kind: 'error', category: 'timeout', reason: 'no response within 200 ms' });
  });
});

describe('the policy lookup (no sockets)', () => {
  type Answer = { error: Error | null; address: unknown; family?: number | undefined };
  function lookUp(resolve: WebhookResolver, allowed: AllowedNetworks, options: { all?: boolean; family?: number }): Promise<Answer> {
    return new Promise((done) => {
      createPolicyLookup(resolve, allowed)('hook.example.test', options, (error, address, family) => done({ error, address, family }));
    });
  }
  const mixed: WebhookResolver = async () => [
    { address: '93.184.216.34', family: 4 },
    { address: '10.0.0.1', family: 4 },
  ];

  test('a public and a private answer: refused, whichever comes first', async () => {
    for (const resolve of [mixed, async () => (await mixed('')).reverse()]) {
      for (const all of [true, false]) {
        const { error } = await lookUp(resolve, none, { all });
        assert.equal(error?.message, '10.0.0.1 is a private address (RFC 1918)');
      }
    }
  });

  test('a public answer is returned as net expects it, for all or for one', async () => {
    const resolve: WebhookResolver = async () => [
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
      { address: '93.184.216.34', family: 4 },
    ];
    assert.deepEqual(await lookUp(resolve, none, { all: true }), {
      error: null,
      address: [
        { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
        { address: '93.184.216.34', family: 4 },
      ],
      family: undefined,
    });
    assert.deepEqual(await lookUp(resolve, none, {}), { error: null, address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 });
    assert.deepEqual(await lookUp(resolve, none, { family: 4 }), { error: null, address: '93.184.216.34', family: 4 });
  });

  test('an answer that is not an IP address is refused', async () => {
    const { error } = await lookUp(async () => [{ address: 'evil.example', family: 4 }], none, { all: true });
    assert.equal(error?.message, 'evil.example is not an IP address');
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');

  test('delta-seconds', () => {
    assert.equal(parseRetryAfter('0', now), 0);
    assert.equal(parseRetryAfter('7', now), 7000);
    assert.equal(parseRetryAfter(' 120 ', now), 120_000);
    assert.equal(parseRetryAfter('999999999999', now), 24 * 60 * 60 * 1000);
  });

  test('HTTP-dates in the three formats, capped, the past as 0', () => {
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now), 60_000);
    assert.equal(parseRetryAfter('Thursday, 01-Jan-26 00:01:00 GMT', now), 60_000);
    assert.equal(parseRetryAfter('Thu Jan  1 00:01:00 2026', now), 60_000);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter('Fri, 01 Jan 2027 00:00:00 GMT', now), 24 * 60 * 60 * 1000);
  });

  test('garbage is ignored', () => {
    for (const value of [undefined, '', 'soon', '-1', '7.5', '1e3', '0x10', '2026-01-01T00:01:00Z', 'Thu, 1 Jan 2026 00:01:00 GMT', 'Thu, 01 Jan 2026 00:01:00 PST']) {
      assert.equal(parseRetryAfter(value, now), undefined, String(value));
    }
  });
});
