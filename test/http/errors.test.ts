import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { describe, test } from 'node:test';
import { startApp } from '../helpers/app.js';
import type { Store } from '../../src/store/types.js';

type ErrorBody = { code: string; message: string; status: number };

describe('error model', () => {
  test('when a route does not exist, then 404 not_found as an Error body', async (t) => {
    const app = await startApp(t);
    for (const path of ['/nope', '/docs/nope', '/docs/assets/nope.js', '/v1', '/v1/pet', '/v2/pets', '/v1/pets/1/extra']) {
      const res = await app.request('GET', path);
      assert.equal(res.status, 404, path);
      assert.equal((res.body as ErrorBody).code, 'not_found');
    }
  });

  test('when a route exists but not for the method, then 405 method_not_allowed with Allow', async (t) => {
    const app = await startApp(t);
    for (const [method, path, allow] of [
      ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
      ['PUT', '/v1/pets', 'GET, HEAD, POST'],
      ['PUT', '/v1/pets/1', 'GET, HEAD, PATCH, DELETE'],
      ['POST', '/v1/pets/1', 'GET, HEAD, PATCH, DELETE'],
      ['POST', '/v1/categories/1', 'GET, HEAD, PUT, DELETE'],
      ['DELETE', '/v1/store/inventory', 'GET, HEAD'],
      ['POST', '/healthz', 'GET, HEAD'],
    ]) {
      const res = await app.request(method!, path!);
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal((res.body as ErrorBody).code, 'method_not_allowed');
      assert.equal(res.headers.get('allow'), allow);
    }
  });

  test('when a route exists and the method is one fetch cannot send (TRACE, PROPFIND, SEARCH…), then 405 method_not_allowed with Allow too', async (t) => {
    const app = await startApp(t);
    const { port } = new URL(app.url);
    for (const [method, path, allow] of [
      ['TRACE', '/v1/pets', 'GET, HEAD, POST'],
      ['PROPFIND', '/v1/pets/1', 'GET, HEAD, PATCH, DELETE'],
      ['SEARCH', '/v1/pets', 'GET, HEAD, POST'],
      ['MKCOL', '/v1/store/inventory', 'GET, HEAD'],
    ]) {
      const res = await new Promise<{ status: number; allow: string | undefined; body: string }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method, path }, (r) => {
          let data = '';
          r.on('data', (c: Buffer) => (data += c.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, allow: r.headers.allow, body: data }));
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal((JSON.parse(res.body) as ErrorBody).code, 'method_not_allowed');
      assert.equal(res.allow, allow, `${method} ${path}`);
    }
  });

  test('when a page on another origin sends a CORS preflight, then 405 and no Access-Control-* header: keys are secrets, browsers call from the same origin (docs/api.md#cors)', async (t) => {
    const app = await startApp(t);
    const { key } = await app.createAccount();
    const origin = { origin: 'https://shop.example' };
    const preflight = await app.request('OPTIONS', '/v1/pets', { headers: { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
    assert.equal(preflight.status, 405);
    assert.equal(preflight.headers.get('allow'), 'GET, HEAD, POST');
    const get = await app.request('GET', '/v1/pets', { key, headers: origin });
    assert.equal(get.status, 200);
    for (const res of [preflight, get]) assert.deepEqual([...res.headers.keys()].filter((name) => name.startsWith('access-control-')), []);
  });

  test('when a body comes compressed (Content-Encoding gzip, br), then 415 unsupported_content_encoding with Accept-Encoding: identity, and nothing is created', async (t) => {
    const app = await startApp(t);
    const { key } = await app.createAccount();
    const json = JSON.stringify({ name: 'Rex', categoryId: 1 });
    for (const [encoding, rawBody] of [
      ['gzip', gzipSync(json)],
      ['br', json],
    ] as const) {
      const res = await app.request('POST', '/v1/pets', { key, rawBody, headers: { 'content-type': 'application/json', 'content-encoding': encoding } });
      assert.equal(res.status, 415, encoding);
      assert.equal((res.body as ErrorBody).code, 'unsupported_content_encoding');
      assert.equal(res.headers.get('accept-encoding'), 'identity');
      assert.match((res.body as ErrorBody).message, /uncompressed/);
    }
    const list = await app.request('GET', '/v1/pets', { key });
    assert.deepEqual(list.body, []);
    const identity = await app.request('POST', '/v1/pets', { key, rawBody: json, headers: { 'content-type': 'application/json', 'content-encoding': 'identity' } });
    assert.equal(identity.status, 201);
  });

  test('when the store fails unexpectedly, then 500 internal_error without internals', async (t) => {
    const app = await startApp(t);
    const { key } = await app.createAccount();
    // Fault injection on the real store: the next createPet throws a raw driver-like error.
    const store = app.store as Store;
    store.pets.create = async () => {
      throw new Error('SQLITE_CORRUPT: database disk image is malformed at /secret/path/petstore.db');
    };
    const res = await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } });
    assert.equal(res.status, 500);
    assert.equal((res.body as ErrorBody).code, 'internal_error');
    assert.doesNotMatch(res.text, /SQLITE|secret|petstore\.db|at /);
    assert.match(res.headers.get('x-request-id') ?? '', /.+/);
  });

  test('when headers exceed 16 KiB, then 431 headers_too_large as an Error body', async (t) => {
    const app = await startApp(t);
    const { port } = new URL(app.url);
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/pets', headers: { 'x-big': 'a'.repeat(20_000) } }, (res) => {
        let data = '';
        res.on('data', (c: Buffer) => (data += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 431);
    assert.deepEqual(JSON.parse(body), { code: 'headers_too_large', message: JSON.parse(body).message, status: 431 });
  });

  test('when the URL alone is too long, then 414 uri_too_long (not 431: no header is at fault)', async (t) => {
    const app = await startApp(t);
    const { port } = new URL(app.url);
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: `/v1/pets?cursor=${'a'.repeat(20_000)}` }, (res) => {
        let data = '';
        res.on('data', (c: Buffer) => (data += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 414);
    assert.equal((JSON.parse(body) as ErrorBody).code, 'uri_too_long');
  });

  test('when the request line is malformed, then 400 invalid_request as an Error body', async (t) => {
    const app = await startApp(t);
    const { port } = new URL(app.url);
    const raw = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('GARBAGE\r\n\r\n'));
      let data = '';
      socket.on('data', (c) => (data += c.toString()));
      socket.on('close', () => resolve(data));
    });
    assert.match(raw, /^HTTP\/1\.1 400/);
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as ErrorBody;
    assert.equal(body.code, 'invalid_request');
    assert.equal(body.status, 400);
  });

  test('when the client sends X-Request-Id, then it is echoed; otherwise one is generated', async (t) => {
    const app = await startApp(t);
    const given = await app.request('GET', '/healthz', { headers: { 'x-request-id': 'req-123.abc' } });
    assert.equal(given.headers.get('x-request-id'), 'req-123.abc');
    const generated = await app.request('GET', '/healthz');
    assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    const hostile = await app.request('GET', '/healthz', { headers: { 'x-request-id': 'x'.repeat(300) } });
    assert.match(hostile.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  test('when ids are generated for consecutive requests, then they are random UUIDs that count nothing (no tenant learns the others\' traffic from the gap)', async (t) => {
    const app = await startApp(t);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await app.request('GET', '/healthz')).headers.get('x-request-id') ?? '');
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const tails = ids.map((id) => BigInt(`0x${id.slice(24)}`));
    const heads = new Set(ids.map((id) => id.slice(0, 24)));
    assert.equal(heads.size, ids.length, 'no shared per-process prefix');
    for (let i = 1; i < tails.length; i++) assert.ok(tails[i]! - tails[i - 1]! > 16n || tails[i]! < tails[i - 1]!, `ids ${ids[i - 1]} and ${ids[i]} look counted`);
  });
});

describe('health', () => {
  test('when the store is reachable, then /healthz and /readyz answer 200 without auth', async (t) => {
    const app = await startApp(t);
    assert.deepEqual((await app.request('GET', '/healthz')).body, { status: 'ok' });
    assert.deepEqual((await app.request('GET', '/readyz')).body, { status: 'ready' });
  });

  test('when the store is closed, then /readyz answers 503 service_unavailable and /healthz stays 200', async (t) => {
    const app = await startApp(t);
    await app.store.close();
    const res = await app.request('GET', '/readyz');
    assert.equal(res.status, 503);
    assert.equal((res.body as ErrorBody).code, 'service_unavailable');
    assert.ok(res.headers.get('retry-after'));
    assert.equal((await app.request('GET', '/healthz')).status, 200);
  });
});

describe('connections', () => {
  test('when a response is sent, then idle keep-alive connections are held for 72 s (longer than load balancers)', async (t) => {
    const app = await startApp(t);
    const res = await app.request('GET', '/healthz');
    assert.equal(res.status, 200);
    assert.equal(app.app.server.keepAliveTimeout, 72_000);
  });
});
