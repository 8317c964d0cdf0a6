// Restricted keys over real HTTP, on every store. The operations are read from the served
// documents, so a new operation cannot be missed: each declares the scope it needs
// (x-required-scope, and a sentence in its description); a key without it gets 403
// insufficient_scope with RFC 6750's challenge naming it; a key with only that scope (or its
// :write) gets past the check. Then the order of the checks (401 before 403, 403 before
// anything about the resource), the fast path, and expiry.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { fixedClock } from '../../src/clock.js';
import { SCOPES, type Scope } from '../../src/schemas/api-keys.js';
import { sharedApp, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

type Parameter = { name: string; in: string; schema?: { type?: string } };
type Operation = {
  operationId: string;
  description?: string;
  parameters?: Parameter[];
  'x-required-scope'?: string;
  responses?: Record<string, { content?: Record<string, unknown> }>;
};
type Document = { paths: Record<string, Record<string, Operation>> };

const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' };

/** Every operation of a served document, with a URL that fills each path parameter with a plausible value. */
async function operationsOf(app: TestApp, documentPath: string, base: string) {
  const doc = (await (await fetch(app.url + documentPath)).json()) as Document;
  const found: Array<{ method: string; url: string; operation: Operation }> = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (!/^(get|post|put|patch|delete)$/.test(method)) continue;
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
        const parameter = operation.parameters?.find((p) => p.in === 'path' && p.name === name);
        return parameter?.schema?.type === 'integer' ? '1' : 'x_1';
      });
      found.push({ method: method.toUpperCase(), url: base + url, operation });
    }
  }
  return found;
}

/** The scopes a key lacking `needed` may hold: every other one but the `:write` that implies it. */
function allBut(needed: Scope): Scope[] {
  const implying = needed.endsWith(':read') ? needed.replace(/:read$/, ':write') : needed;
  return SCOPES.filter((scope) => scope !== needed && scope !== implying);
}

function assertInsufficientScope(res: TestResponse, scope: string, context: string): void {
  assert.equal(res.status, 403, `${context}: ${res.text}`);
  assert.equal((res.body as { code: string }).code, 'insufficient_scope', context);
  assert.match((res.body as { message: string }).message, new RegExp(scope), context);
  assert.equal(res.headers.get('www-authenticate'), `Bearer realm="petstore", error="insufficient_scope", scope="${scope}"`, context);
}

for (const backend of backends) {
  describe(`scopes (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });
    let app: TestApp;
    let accountId: string;
    const keyWith = async (scopes: Scope[] | null, options: { expiresAt?: string } = {}) =>
      (await app.services.apiKeys.create(accountId, undefined, { scopes, ...options })).key;
    before(async () => {
      app = await getApp();
      ({ accountId } = await app.createAccount('Scopes'));
    });

    test('when the documents are read, then every operation declares a known scope in x-required-scope and in its description', async () => {
      const operations = [...(await operationsOf(app, '/v1/openapi.json', '/v1')), ...(await operationsOf(app, '/example/v1/openapi.json', '/example/v1'))];
      assert.ok(operations.length >= 27, `${operations.length} operations`);
      for (const { operation } of operations) {
        const scope = operation['x-required-scope'];
        assert.ok(scope !== undefined && (SCOPES as readonly string[]).includes(scope), `${operation.operationId} declares a scope (${scope})`);
        assert.match(operation.description ?? '', new RegExp(`Requires the \`${scope}\` scope`), `${operation.operationId} says so`);
      }
    });

    for (const [label, documentPath, base] of [['v1', '/v1/openapi.json', '/v1'], ['example', '/example/v1/openapi.json', '/example/v1']] as const) {
      test(`when every ${label} operation is called with a key lacking its scope, then 403 insufficient_scope naming it; with a key holding only it, then not 403`, async () => {
        for (const { method, url, operation } of await operationsOf(app, documentPath, base)) {
          const scope = operation['x-required-scope'] as Scope;
          const context = `${operation.operationId} (${method} ${url})`;
          const lacking = await keyWith(allBut(scope));
          assertInsufficientScope(await app.request(method, url, { key: lacking }), scope, context);
          // Twice: the second answer comes from the remembered key.
          assertInsufficientScope(await app.request(method, url, { key: lacking }), scope, `${context}, remembered key`);
          const holding = await keyWith([scope]);
          // A body createApiKey accepts from this key (any other operation refuses it: 400, not 403).
          const body = /^(POST|PUT|PATCH)$/.test(method) ? { scopes: [scope] } : undefined;
          // A stream (streamEvents) never ends: an unknown type filter makes it answer 400 past the scope check.
          const streams = operation.responses?.['200']?.content?.['text/event-stream'] !== undefined;
          const allowed = await app.request(method, streams ? `${url}?type=no.such_type` : url, { key: holding, body });
          assert.notEqual(allowed.status, 403, `${context} with ${scope}: ${allowed.text}`);
          assert.notEqual(allowed.status, 401, `${context} with ${scope}: ${allowed.text}`);
        }
      });
    }

    test('when a key holds pets:write, then it may read pets too (write implies read)', async () => {
      const key = await keyWith(['pets:write']);
      const created = await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } });
      assert.equal(created.status, 201);
      for (let i = 0; i < 2; i++) assert.equal((await app.request('GET', '/v1/pets', { key })).status, 200);
      assert.equal((await app.request('GET', `/v1/pets/${(created.body as { id: number }).id}`, { key })).status, 200);
    });

    test('when a restricted key lacks pets:read, then GET /v1/pets is refused on every try (the fast path refuses it too)', async () => {
      const key = await keyWith(['orders:read']);
      for (let i = 0; i < 3; i++) assertInsufficientScope(await app.request('GET', '/v1/pets', { key }), 'pets:read', `try ${i}`);
      for (let i = 0; i < 3; i++) assertInsufficientScope(await app.request('GET', '/v1/pets/1', { key }), 'pets:read', `try ${i}`);
    });

    test('when a restricted key asks for a pet that exists and one that does not, then both answers are the same 403', async () => {
      const full = await keyWith(null);
      const pet = (await app.request('POST', '/v1/pets', { key: full, body: { name: 'Kept', categoryId: 1 } })).body as { id: number };
      const key = await keyWith(['orders:read']);
      const existing = await app.request('PATCH', `/v1/pets/${pet.id}`, { key, body: { name: 'x' } });
      const missing = await app.request('PATCH', '/v1/pets/987654321', { key, body: { name: 'x' } });
      assertInsufficientScope(existing, 'pets:write', 'existing');
      assert.deepEqual(existing.body, missing.body);
      assert.equal(existing.headers.get('www-authenticate'), missing.headers.get('www-authenticate'));
    });

    test('when an invalid key or none is sent to an operation a restricted key could not call, then 401 (authentication first)', async () => {
      assert.equal((await app.request('POST', '/v1/webhook-endpoints', { body: {} })).status, 401);
      const res = await app.request('POST', '/v1/webhook-endpoints', { headers: { authorization: 'Bearer psk_live_nope' }, body: {} });
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    });

    test('when a restricted key sends an invalid body to an operation it may not call, then 403 before validation', async () => {
      const key = await keyWith(['pets:read']);
      assertInsufficientScope(await app.request('POST', '/v1/pets', { key, rawBody: '{oops', headers: { 'content-type': 'application/json' } }), 'pets:write', 'bad JSON');
    });
  });

  describe(`expiry (${backend.name})`, () => {
    test('when a key passes its expiry, then it is refused with 401 invalid_token naming the instant, on the fast path too', async (t) => {
      const start = Date.parse('2026-11-27T10:00:00.000Z');
      const clock = fixedClock(start);
      const app = await startApp(t, { backend, clock, env });
      const { accountId } = await app.createAccount('Expiry');
      const expiresAt = new Date(start + 60_000).toISOString();
      const { key } = await app.services.apiKeys.create(accountId, undefined, { expiresAt, scopes: ['pets:read'] });
      for (let i = 0; i < 3; i++) assert.equal((await app.request('GET', '/v1/pets', { key })).status, 200);
      clock.set(start + 60_000);
      for (const path of ['/v1/pets', '/v1/pets/1', '/v1/store/orders']) {
        const res = await app.request('GET', path, { key });
        assert.equal(res.status, 401, `${path}: ${res.text}`);
        assert.equal((res.body as { code: string }).code, 'unauthorized');
        assert.match((res.body as { message: string }).message, new RegExp(`expired at ${expiresAt.replace(/\./g, '\\.')}`));
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="petstore", error="invalid_token", error_description="[^"]*expired at/);
      }
    });
  });
}

for (const backend of backends) {
  describe(`last use (${backend.name})`, () => {
    test('when a key is used on two instances, then lastUsedAt is the latest use, written once per interval per process, not per request', async (t) => {
      const one = await startApp(t, { backend, env });
      const two = await startApp(t, { backend, env, databaseUrl: one.config.database.url });
      const { accountId, keyId, key } = await one.createAccount('Last use');
      assert.equal((await one.store.apiKeys.get(accountId, keyId))?.lastUsedAt, null, 'never used');
      const before = Date.now();
      for (let i = 0; i < 5; i++) assert.equal((await one.request('GET', '/v1/pets', { key })).status, 200);
      assert.equal((await one.store.apiKeys.get(accountId, keyId))?.lastUsedAt, null, 'nothing written per request');
      await one.services.apiKeys.flushUsage();
      const first = (await one.store.apiKeys.get(accountId, keyId))?.lastUsedAt;
      assert.ok(first !== null && first !== undefined && Date.parse(first) >= before - 5, `written at the flush: ${first}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal((await two.request('GET', '/v1/store/orders', { key })).status, 200);
      await two.services.apiKeys.flushUsage();
      const second = (await one.store.apiKeys.get(accountId, keyId))?.lastUsedAt;
      assert.ok(second !== null && second !== undefined && second > first!, `the other instance's later use: ${second} > ${first}`);
      // An older use written late (instance one's, flushed after two's later one) does not move it back.
      assert.equal((await one.request('GET', '/v1/pets', { key })).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal((await two.request('GET', '/v1/pets', { key })).status, 200);
      await two.services.apiKeys.flushUsage();
      const latest = (await two.store.apiKeys.get(accountId, keyId))?.lastUsedAt;
      await one.services.apiKeys.flushUsage();
      assert.equal((await two.store.apiKeys.get(accountId, keyId))?.lastUsedAt, latest);
      assert.ok(latest! > second!);
    });
  });
}
