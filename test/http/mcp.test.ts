// /mcp through the official SDK's own client over real HTTP, on every store: the tools are one
// per operation of both served documents, each checked against its operation (name, description,
// markers, parameters); list and create called as tools (create twice with one key: one pet (a repeated
// call reuses its derived Idempotency-Key; distinct keys make two), the API's JSON as the result); a refused call is a
// tool error with status and code; a key's scope and account apply; no key is 401. ~5 s a store.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

type Op = { operationId: string; summary?: string; deprecated?: boolean; 'x-sunset'?: string; 'x-stability'?: string; parameters?: Array<{ name: string; in: string }>; requestBody?: unknown };
type Tool = { name: string; description?: string; inputSchema: { properties?: Record<string, unknown>; required?: string[] } };
type CallResult = { isError?: boolean; content: Array<{ type: string; text: string }> };

const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' };

async function connect(app: TestApp, key: string) {
  const client = new Client({ name: 'petstore-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as CallResult;

for (const backend of backends) {
  describe(`MCP at /mcp (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });

    test('when the SDK client lists tools, then there is one per operation of both documents, as the document describes it', async () => {
      const app = await getApp();
      const { key } = await app.createAccount();
      const client = await connect(app, key);
      try {
        const { tools } = (await client.listTools()) as { tools: Tool[] };
        const ops: Op[] = [];
        for (const path of ['/v1/openapi.json', '/example/v1/openapi.json']) {
          const doc = (await app.request('GET', path)).body as { paths: Record<string, Record<string, Op>> };
          for (const item of Object.values(doc.paths)) ops.push(...Object.values(item).filter((o) => o.operationId));
        }
        assert.deepEqual(tools.map((t) => t.name).sort(), ops.map((o) => o.operationId).sort());
        for (const op of ops) {
          const tool = tools.find((t) => t.name === op.operationId)!;
          assert.ok(tool.description?.includes(op.summary ?? op.operationId), `${op.operationId}: its summary`);
          assert.equal(/EXPERIMENTAL/.test(tool.description ?? ''), op['x-stability'] === 'experimental', `${op.operationId}: experimental marked`);
          assert.equal(/DEPRECATED/.test(tool.description ?? ''), op.deprecated === true, `${op.operationId}: deprecated marked`);
          for (const p of op.parameters ?? []) assert.ok(tool.inputSchema.properties?.[p.name], `${op.operationId}: ${p.name}`);
          assert.equal(Boolean(tool.inputSchema.properties?.body), Boolean(op.requestBody), `${op.operationId}: body`);
        }
        const getPet = tools.find((t) => t.name === 'getPet')!;
        const sunset = ops.find((o) => o.operationId === 'getPet')!['x-sunset']!;
        assert.ok(getPet.description!.includes(`removed on ${sunset}`), getPet.description);
      } finally {
        await client.close();
      }
    });

    test('when tools are called, then results are the API\'s JSON, a repeated create makes one pet (distinct Idempotency-Keys two), a refused call is a tool error with its code, and isolation holds', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const other = await app.createAccount();
      const client = await connect(app, owner.key);
      const otherClient = await connect(app, other.key);
      try {
        // An agent retrying the same call: one pet, the same answer.
        const first = await call(client, 'createPet', { body: { name: 'Rex', categoryId: 1, status: 'available' } });
        const retried = await call(client, 'createPet', { body: { name: 'Rex', categoryId: 1, status: 'available' } });
        assert.equal(first.isError, undefined, first.content[0]!.text);
        assert.equal(retried.content[0]!.text, first.content[0]!.text);
        const a = JSON.parse(first.content[0]!.text) as { id: number };
        // Two on purpose: distinct Idempotency-Key values.
        const b = JSON.parse((await call(client, 'createPet', { body: { name: 'Rex', categoryId: 1, status: 'available' }, 'Idempotency-Key': 'second-rex' })).content[0]!.text) as { id: number };
        assert.notEqual(a.id, b.id);
        const listed = await call(client, 'listPets', { limit: 10 });
        assert.deepEqual(JSON.parse(listed.content[0]!.text), [a, b], 'one pet per distinct call');
        const pets = await app.request('GET', '/v1/pets?limit=10', { key: owner.key });
        assert.equal(listed.content[0]!.text, pets.text, 'the API\'s own bytes');
        const refused = await call(client, 'createPet', { body: { name: '', categoryId: 1 } });
        assert.equal(refused.isError, true);
        assert.deepEqual(Object.keys(JSON.parse(refused.content[0]!.text)), ['status', 'code', 'message']);
        assert.equal(JSON.parse(refused.content[0]!.text).code, 'invalid_request');
        const theirs = await call(otherClient, 'getPet', { petId: a!.id });
        assert.equal(JSON.parse(theirs.content[0]!.text).code, 'not_found', 'another account\'s pet is not there');
        assert.deepEqual(JSON.parse((await call(otherClient, 'listPets')).content[0]!.text), []);
      } finally {
        await client.close();
        await otherClient.close();
      }
    });

    test('when a list has another page, a pet has an ETag or a write was a replay, then the result says so after the API\'s JSON: nextCursor pages on, etag guards an update', async () => {
      const app = await getApp();
      const owner = await app.createAccount();
      const client = await connect(app, owner.key);
      try {
        const created = await call(client, 'createPet', { body: { name: 'One', categoryId: 1 } });
        const one = JSON.parse(created.content[0]!.text) as { id: number };
        const createdEtag = (JSON.parse(created.content[1]!.text) as { etag: string }).etag;
        assert.match(createdEtag, /^"[^"]+"$/, 'createPet gives its ETag');
        const replayed = await call(client, 'createPet', { body: { name: 'One', categoryId: 1 } });
        assert.equal(JSON.parse(replayed.content[1]!.text).idempotentReplayed, true, 'a repeated call says it was a replay');
        for (const name of ['Two', 'Three']) await call(client, 'createPet', { body: { name, categoryId: 1 } });

        const page1 = await call(client, 'listPets', { limit: 2 });
        assert.deepEqual((JSON.parse(page1.content[0]!.text) as Array<{ name: string }>).map((p) => p.name), ['One', 'Two']);
        const { nextCursor } = JSON.parse(page1.content[1]!.text) as { nextCursor: string };
        assert.ok(nextCursor, 'the next page\'s cursor');
        const page2 = await call(client, 'listPets', { limit: 2, cursor: nextCursor });
        assert.deepEqual((JSON.parse(page2.content[0]!.text) as Array<{ name: string }>).map((p) => p.name), ['Three']);
        assert.equal(page2.content.length, 1, 'the last page: nothing after the JSON');

        const updated = await call(client, 'updatePet', { petId: one.id, body: { name: 'Uno' }, 'if-match': createdEtag });
        assert.equal(updated.isError, undefined, updated.content[0]!.text);
        const stale = await call(client, 'updatePet', { petId: one.id, body: { name: 'Lost' }, 'if-match': createdEtag });
        assert.equal(stale.isError, true);
        assert.equal(JSON.parse(stale.content[0]!.text).code, 'precondition_failed');
      } finally {
        await client.close();
      }
    });

    test('when /mcp is called without a key or with a bad one, then it answers 401 unauthorized', async () => {
      const app = await getApp();
      const body = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
      const headers = { accept: 'application/json, text/event-stream' };
      for (const key of [undefined, 'psk_live_nope']) {
        const res = await app.request('POST', '/mcp', { key, body, headers });
        assert.equal(res.status, 401);
        assert.equal((res.body as { code: string }).code, 'unauthorized');
      }
    });

    test('when a key restricted to pets:read connects, then it lists tools and reads, and a write is a tool error with insufficient_scope', async () => {
      const app = await getApp();
      const { accountId } = await app.createAccount();
      const { key } = await app.services.apiKeys.create(accountId, undefined, { scopes: ['pets:read'] });
      const client = await connect(app, key);
      try {
        assert.ok(((await client.listTools()) as { tools: Tool[] }).tools.length > 0);
        assert.ok(!(await call(client, 'listPets')).isError);
        const refused = await call(client, 'createPet', { body: { name: 'Rex', categoryId: 1 } });
        assert.equal(refused.isError, true);
        assert.match(refused.content[0]!.text, /"code":\s*"insufficient_scope"/);
      } finally {
        await client.close();
      }
    });
  });

  describe(`MCP at /mcp under the failed-authentication limit (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env: { ...env, PETSTORE_AUTH_FAILURE_LIMIT_BURST: '3', PETSTORE_AUTH_FAILURE_LIMIT_PER_SECOND: '0.01' } });

    test('when an address keeps sending bad keys to /mcp, then after the burst it answers 429 rate_limited without a lookup', async () => {
      const app = await getApp();
      const body = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
      const headers = { accept: 'application/json, text/event-stream' };
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await app.request('POST', '/mcp', { key: `psk_live_nope${i}`, body, headers })).status);
      assert.deepEqual(statuses, [401, 401, 401, 429]);
      const res = await app.request('POST', '/mcp', { key: 'psk_live_nope', body, headers });
      assert.equal((res.body as { code: string }).code, 'rate_limited');
    });
  });
}
