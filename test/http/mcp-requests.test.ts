// /mcp as the client sees it, over real HTTP: streamEvents is a bounded call (events with the
// cursor to continue, or none after waitSeconds) that never keeps a stream slot, not after it
// returns nor after its client disconnects; its bounds are checked; a change made through /mcp is
// audited with the client's address as /v1 records it (directly and behind a trusted proxy); and
// every /mcp answer carries the headers every answer carries.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { openSse, waitFor } from '../helpers/sse.js';

const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' };

interface Sent {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request over node:http, from `localAddress` (a loopback address other than the server's own, say). */
function send(app: TestApp, method: string, path: string, options: { key: string; body: unknown; localAddress?: string; headers?: Record<string, string>; signal?: AbortSignal }): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}${path}`, {
      method,
      agent: false,
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      headers: { authorization: `Bearer ${options.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...options.headers },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.once('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.end(JSON.stringify(options.body));
  });
}

let rpcId = 0;
/** A tools/call as JSON-RPC (the server is stateless: no session to initialize). */
const toolCall = (name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } });

/** The tool's result text as JSON, and whether it is a tool error. */
async function callTool(app: TestApp, key: string, name: string, args: Record<string, unknown>, localAddress?: string): Promise<{ isError: boolean; json: Record<string, unknown> }> {
  const res = await send(app, 'POST', '/mcp', { key, body: toolCall(name, args), ...(localAddress ? { localAddress } : {}) });
  assert.equal(res.status, 200, res.text);
  const result = (JSON.parse(res.text) as { result: { isError?: boolean; content: Array<{ text: string }> } }).result;
  return { isError: result.isError === true, json: JSON.parse(result.content[0]!.text) as Record<string, unknown> };
}

for (const backend of backends) {
  describe(`MCP streamEvents (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    const newPet = async (app: TestApp, key: string, name: string) =>
      assert.equal((await app.request('POST', '/v1/pets', { key, body: { name, categoryId: 1 } })).status, 201);

    test('when streamEvents is called, then it returns the events that arrived (at most maxEvents) with the cursor to continue, and none after waitSeconds with the same cursor', { timeout: 20_000 }, async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      for (const name of ['A', 'B', 'C']) await newPet(app, owner.key, name);
      const first = await callTool(app, owner.key, 'streamEvents', { after: 0, maxEvents: 2 });
      assert.equal(first.isError, false);
      assert.deepEqual((first.json.events as Array<{ sequence: number; type: string }>).map((e) => [e.sequence, e.type]), [[1, 'pet.created'], [2, 'pet.created']]);
      assert.equal(first.json.after, 2);
      const rest = await callTool(app, owner.key, 'streamEvents', { after: 2 });
      assert.deepEqual((rest.json.events as Array<{ sequence: number }>).map((e) => e.sequence), [3]);
      assert.equal(rest.json.after, 3);
      const started = Date.now();
      const none = await callTool(app, owner.key, 'streamEvents', { after: 3, waitSeconds: 0.5 });
      assert.ok(Date.now() - started < 2_000, `returned after ${Date.now() - started} ms`);
      assert.deepEqual(none.json, { events: [], after: 3 });
      // Waiting from now: an event committed during the call comes back at once.
      const before = app.services.eventStreams.openCount();
      const waiting = callTool(app, owner.key, 'streamEvents', { waitSeconds: 10 });
      await waitFor(() => app.services.eventStreams.openCount() === before + 1);
      await newPet(app, owner.key, 'D');
      const live = await waiting;
      assert.deepEqual((live.json.events as Array<{ sequence: number }>).map((e) => e.sequence), [4]);
      assert.equal(app.services.eventStreams.openCount(), before);
    });

    test('when streamEvents is called more often than a key has stream slots, each with a short wait, then every call returns and no slot stays taken', { timeout: 20_000 }, async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const before = app.services.eventStreams.openCount();
      for (let i = 0; i < 7; i++) {
        const got = await callTool(app, owner.key, 'streamEvents', { waitSeconds: 0.2 });
        assert.equal(got.isError, false, JSON.stringify(got.json));
        await waitFor(() => app.services.eventStreams.openCount() === before, 1_000);
      }
      const stream = await openSse(`${app.url}/v1/events/stream`, owner.key);
      assert.equal(stream.status, 200, 'the key can still open a stream');
      stream.close();
      await waitFor(() => app.services.eventStreams.openCount() === before);
    });

    test('when the MCP client disconnects during a streamEvents call, then the stream it opened is closed and its slot free again', { timeout: 20_000 }, async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const before = app.services.eventStreams.openCount();
      const gone = new AbortController();
      const call = send(app, 'POST', '/mcp', { key: owner.key, body: toolCall('streamEvents', { waitSeconds: 30 }), signal: gone.signal }).catch(() => undefined);
      await waitFor(() => app.services.eventStreams.openCount() === before + 1);
      gone.abort();
      await call;
      await waitFor(() => app.services.eventStreams.openCount() === before, 1_000);
    });

    test('when a JSON-RPC batch holds more than 10 messages, then 400 invalid_request and none is answered; 10 are answered', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const list = (n: number) => Array.from({ length: n }, () => ({ jsonrpc: '2.0', id: ++rpcId, method: 'tools/list' }));
      const refused = await send(app, 'POST', '/mcp', { key: owner.key, body: list(11) });
      assert.equal(refused.status, 400, refused.text);
      assert.equal((JSON.parse(refused.text) as { code: string }).code, 'invalid_request');
      assert.match(refused.text, /at most 10/);
      const answered = await send(app, 'POST', '/mcp', { key: owner.key, body: list(10) });
      assert.equal(answered.status, 200, answered.text);
      assert.equal((JSON.parse(answered.text) as unknown[]).length, 10);
    });

    test('when waitSeconds or maxEvents is out of range, then the call is a tool error 400 invalid_request naming the argument', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const before = app.services.eventStreams.openCount();
      for (const args of [{ waitSeconds: 31 }, { waitSeconds: 0 }, { waitSeconds: '5' }, { maxEvents: 0 }, { maxEvents: 101 }, { maxEvents: 2.5 }]) {
        const got = await callTool(app, owner.key, 'streamEvents', args);
        assert.equal(got.isError, true, JSON.stringify(args));
        assert.equal(got.json.status, 400, JSON.stringify(args));
        assert.equal(got.json.code, 'invalid_request', JSON.stringify(args));
        assert.match(String(got.json.message), new RegExp(`^${Object.keys(args)[0]} must be`));
      }
      assert.equal(app.services.eventStreams.openCount(), before, 'nothing was opened');
    });
  });
}

describe('MCP: who made a change, and the headers of every answer', () => {
  const getApp = sharedApp({ env });

  test('when a change is made through /mcp from another address, then its audit entry names that address, as the same change through /v1 does', async () => {
    const app = await getApp();
    const owner = await app.createAccount();
    const localAddress = '127.0.0.2';
    const direct = await send(app, 'POST', '/v1/api-keys', { key: owner.key, body: { name: 'via v1' }, localAddress });
    assert.equal(direct.status, 201, direct.text);
    const viaMcp = await callTool(app, owner.key, 'createApiKey', { body: { name: 'via mcp' } }, localAddress);
    assert.equal(viaMcp.isError, false, JSON.stringify(viaMcp.json));
    const entries = (await app.request('GET', '/v1/audit-log', { key: owner.key })).body as Array<{ action: string; clientAddress: string | null }>;
    assert.deepEqual(entries.map((e) => [e.action, e.clientAddress]), [['api_key.created', localAddress], ['api_key.created', localAddress]]);
  });

  test('when /mcp answers (a list, a refusal by the transport), then it carries X-Request-Id, X-Content-Type-Options: nosniff and Cache-Control: no-store', async () => {
    const app = await getApp();
    const owner = await app.createAccount();
    const listed = await send(app, 'POST', '/mcp', { key: owner.key, body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, headers: { 'x-request-id': 'mcp-headers-1' } });
    // The transport's own refusal: a client that cannot take JSON.
    const refused = await send(app, 'POST', '/mcp', { key: owner.key, body: { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, headers: { accept: 'text/plain', 'x-request-id': 'mcp-headers-2' } });
    assert.equal(listed.status, 200);
    assert.equal(refused.status, 406);
    for (const [res, id] of [[listed, 'mcp-headers-1'], [refused, 'mcp-headers-2']] as const) {
      assert.equal(res.headers['x-request-id'], id);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['cache-control'], 'no-store');
    }
  });
});

describe('MCP behind a trusted proxy', () => {
  const getApp = sharedApp({ env: { ...env, PETSTORE_TRUSTED_PROXIES: '127.0.0.1' } });

  test('when a change is made through /mcp via the trusted proxy, then its audit entry names the forwarded client, as through /v1; an untrusted sender is named itself', async () => {
    const app = await getApp();
    const owner = await app.createAccount();
    const forwarded = { 'x-forwarded-for': '203.0.113.7' };
    assert.equal((await send(app, 'POST', '/v1/api-keys', { key: owner.key, body: { name: 'via v1' }, headers: forwarded })).status, 201);
    const mcp = await send(app, 'POST', '/mcp', { key: owner.key, body: toolCall('createApiKey', { body: { name: 'via mcp' } }), headers: forwarded });
    assert.equal(mcp.status, 200, mcp.text);
    // Not a listed proxy: its X-Forwarded-For is not believed, through /mcp either.
    const spoofed = await send(app, 'POST', '/mcp', { key: owner.key, body: toolCall('createApiKey', { body: { name: 'spoofed' } }), headers: forwarded, localAddress: '127.0.0.2' });
    assert.equal(spoofed.status, 200, spoofed.text);
    const entries = (await app.request('GET', '/v1/audit-log', { key: owner.key })).body as Array<{ clientAddress: string | null }>;
    assert.deepEqual(entries.map((e) => e.clientAddress), ['203.0.113.7', '203.0.113.7', '127.0.0.2']);
  });
});
