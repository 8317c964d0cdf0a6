import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import Fastify from 'fastify';
import { loadConfig } from '../../src/config.js';
import { registerOpenApi } from '../../src/http/plugins/openapi.js';
import { hideTryItPanel, stability } from '../../src/http/responses.js';
import { sharedApp, type TestApp } from '../helpers/app.js';
import type { OpenApiDocument } from '../helpers/openapi.js';

type Operation = {
  operationId: string;
  tags: string[];
  deprecated?: boolean;
  security?: unknown;
  parameters?: Array<{ name: string; in: string; required: boolean }>;
  responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema: { $ref?: string } }> }>;
  [key: string]: unknown;
};

describe('OpenAPI document', () => {
  const getApp = sharedApp({
    env: { PETSTORE_PRODUCTION_URL: 'https://api.example.test/v1', PETSTORE_STAGING_URL: 'https://staging.example.test/v1' },
  });
  let app: TestApp;
  let doc: OpenApiDocument & Record<string, unknown>;
  const op = (p: string, m: string) => (doc.paths[p]?.[m] as unknown as Operation);

  before(async () => {
    app = await getApp();
    const res = await app.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body as typeof doc;
  });

  test('when fetched without a key, then it is OpenAPI 3.0.3 with the spec metadata', () => {
    assert.equal(doc.openapi, '3.0.3');
    const info = doc.info as { title: string; version: string };
    assert.equal(info.title, 'Petstore API');
    assert.equal(info.version, '1.0.0');
    assert.deepEqual((doc.tags as Array<{ name: string }>).map((t) => t.name), ['animals']);
  });

  test('when servers are configured, then Production and Staging carry those URLs', () => {
    assert.deepEqual(doc.servers, [
      { url: 'https://api.example.test/v1', description: 'Production' },
      { url: 'https://staging.example.test/v1', description: 'Staging' },
    ]);
  });

  test('when listing operations, then the pet operations and the experimental order, event, webhook, key and audit log operations exist at paths relative to /v1, all tagged animals', () => {
    assert.deepEqual(Object.keys(doc.paths).sort(), [
      '/api-keys', '/api-keys/{keyId}', '/api-keys/{keyId}/roll', '/audit-log',
      '/categories', '/categories/{categoryId}', '/events', '/events/stream', '/events/{eventId}',
      '/pets', '/pets/{petId}', '/store/inventory', '/store/orders', '/store/orders/{orderId}', '/store/orders/{orderId}/cancel', '/store/orders/{orderId}/deliver',
      '/webhook-endpoints', '/webhook-endpoints/{endpointId}', '/webhook-endpoints/{endpointId}/deliveries',
      '/webhook-endpoints/{endpointId}/deliveries/{deliveryId}/retry', '/webhook-endpoints/{endpointId}/rotate-secret',
    ]);
    assert.equal(op('/pets', 'get').operationId, 'listPets');
    assert.equal(op('/pets', 'post').operationId, 'createPet');
    assert.equal(op('/pets/{petId}', 'get').operationId, 'getPet');
    const orders = {
      listOrders: op('/store/orders', 'get'),
      placeOrder: op('/store/orders', 'post'),
      getOrder: op('/store/orders/{orderId}', 'get'),
      deliverOrder: op('/store/orders/{orderId}/deliver', 'post'),
      cancelOrder: op('/store/orders/{orderId}/cancel', 'post'),
    };
    for (const [id, o] of Object.entries(orders)) {
      assert.equal(o.operationId, id);
      assert.equal(o['x-stability'], 'experimental', `${id} is experimental`);
      assert.deepEqual(o.security ?? doc.security, [{ bearerAuth: [] }]);
      assert.equal(o['x-hideTryItPanel'], id === 'listOrders' ? true : undefined, `${id}: x-hideTryItPanel only on listOrders`);
    }
    for (const id of ['deliverOrder', 'cancelOrder'] as const) {
      assert.equal((orders[id] as { requestBody?: { required?: boolean } }).requestBody?.required, false, `${id}: the body may be left out`);
    }
    const eventsAndWebhooks = {
      listEvents: op('/events', 'get'),
      getEvent: op('/events/{eventId}', 'get'),
      streamEvents: op('/events/stream', 'get'),
      createWebhookEndpoint: op('/webhook-endpoints', 'post'),
      listWebhookEndpoints: op('/webhook-endpoints', 'get'),
      getWebhookEndpoint: op('/webhook-endpoints/{endpointId}', 'get'),
      updateWebhookEndpoint: op('/webhook-endpoints/{endpointId}', 'patch'),
      deleteWebhookEndpoint: op('/webhook-endpoints/{endpointId}', 'delete'),
      rotateWebhookEndpointSecret: op('/webhook-endpoints/{endpointId}/rotate-secret', 'post'),
      listWebhookDeliveries: op('/webhook-endpoints/{endpointId}/deliveries', 'get'),
      retryWebhookDelivery: op('/webhook-endpoints/{endpointId}/deliveries/{deliveryId}/retry', 'post'),
      createApiKey: op('/api-keys', 'post'),
      listApiKeys: op('/api-keys', 'get'),
      getApiKey: op('/api-keys/{keyId}', 'get'),
      rollApiKey: op('/api-keys/{keyId}/roll', 'post'),
      revokeApiKey: op('/api-keys/{keyId}', 'delete'),
      listAuditLog: op('/audit-log', 'get'),
    };
    for (const [id, o] of Object.entries(eventsAndWebhooks)) {
      assert.equal(o.operationId, id);
      assert.equal(o['x-stability'], 'experimental', `${id} is experimental`);
      assert.deepEqual(o.security ?? doc.security, [{ bearerAuth: [] }]);
      for (const status of ['401', '403', '429', '500', '503']) assert.ok(o.responses[status], `${id} declares ${status}`);
      assert.ok(o.responses['403']?.headers?.['WWW-Authenticate'], `${id}: 403 declares WWW-Authenticate`);
      if (o.responses['200']) assert.ok(o.responses['200'].headers?.RateLimit, `${id}: 200 declares RateLimit`);
    }
    for (const path of Object.keys(doc.paths)) {
      for (const o of Object.values(doc.paths[path]!)) assert.deepEqual((o as { tags?: string[] }).tags, ['animals']);
    }
    assert.deepEqual((doc.components.schemas.OrderStatus as { enum?: string[] }).enum, ['placed', 'delivered', 'cancelled']);
    assert.deepEqual((doc.components.schemas.NewOrder as { required?: string[] }).required, ['petId']);
    assert.deepEqual(Object.keys((doc.components.schemas.Order as { properties: object }).properties), ['id', 'petId', 'status', 'createdAt', 'updatedAt']);
    assert.match(String((doc.components.schemas.Pet as { properties: { id: { description: string } } }).properties.id.description), /unique within your account/);
  });

  test('when reading x-webhooks, then each event kind is a POST whose body is its event schema, with the Standard Webhooks headers', () => {
    const hooks = (doc as unknown as { 'x-webhooks': Record<string, { post: { requestBody: { content: Record<string, { schema: { $ref: string } }> }; parameters: Array<{ name: string; in: string }> } }> })['x-webhooks'];
    assert.deepEqual(Object.keys(hooks), ['pet.created', 'pet.status_changed', 'pet.updated', 'pet.deleted', 'order.placed', 'order.delivered', 'order.cancelled']);
    for (const [type, hook] of Object.entries(hooks)) {
      const ref = hook.post.requestBody.content['application/json']!.schema.$ref;
      const name = ref.replace('#/components/schemas/', '');
      const schema = doc.components.schemas[name] as { properties: { type: { const?: string; enum?: string[] } } };
      assert.ok(schema, `${type}: ${ref} is a component`);
      assert.deepEqual(schema.properties.type.const ?? schema.properties.type.enum?.[0], type);
      assert.deepEqual(hook.post.parameters.map((p) => `${p.in}:${p.name}`), ['header:webhook-id', 'header:webhook-timestamp', 'header:webhook-signature']);
    }
  });

  test('when reading security, then bearerAuth is an HTTP bearer scheme applied to every operation', () => {
    const components = doc.components as unknown as { securitySchemes: Record<string, { type: string; scheme: string }> };
    assert.deepEqual({ ...components.securitySchemes.bearerAuth, description: undefined }, { type: 'http', scheme: 'bearer', description: undefined });
    assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
    for (const o of [op('/pets', 'get'), op('/pets', 'post'), op('/pets/{petId}', 'get')]) {
      assert.ok(o.security === undefined || JSON.stringify(o.security) === '[{"bearerAuth":[]}]');
    }
  });

  test('when reading schemas, then PetStatus, NewPet, Pet, Pets and Error are named components used by the operations', () => {
    for (const name of ['PetStatus', 'NewPet', 'Pet', 'Pets', 'Error']) assert.ok(doc.components.schemas[name], name);
    assert.deepEqual(doc.components.schemas.PetStatus?.enum, ['available', 'pending', 'sold']);
    assert.deepEqual(doc.components.schemas.Error?.required, ['code', 'message', 'status']);
    assert.equal(op('/pets', 'get').responses['200']?.content?.['application/json']?.schema.$ref, '#/components/schemas/Pets');
    assert.equal(op('/pets', 'post').responses['201']?.content?.['application/json']?.schema.$ref, '#/components/schemas/Pet');
    const body = (op('/pets', 'post') as unknown as { requestBody: { required: boolean; content: Record<string, { schema: { $ref: string } }> } }).requestBody;
    assert.equal(body.required, true);
    assert.equal(body.content['application/json']?.schema.$ref, '#/components/schemas/NewPet');
  });

  test('when reading listPets parameters, then limit (1–100, default 20), status, categoryId and cursor are optional query parameters', () => {
    const params = op('/pets', 'get').parameters ?? [];
    assert.deepEqual(params.map((p) => [p.name, p.in, p.required]), [
      ['limit', 'query', false],
      ['status', 'query', false],
      ['categoryId', 'query', false],
      ['cursor', 'query', false],
    ]);
    assert.deepEqual((params[0] as unknown as { schema: object }).schema, { type: 'integer', minimum: 1, maximum: 100, default: 20 });
  });

  test('when reading responses, then every status the service can return is declared, with their headers', () => {
    assert.deepEqual(Object.keys(op('/pets', 'get').responses), ['200', '400', '401', '403', '429', '500', '503']);
    assert.deepEqual(Object.keys(op('/pets', 'post').responses), ['201', '400', '401', '403', '404', '409', '413', '415', '422', '429', '500', '503']);
    assert.ok(op('/pets', 'post').responses['415']?.headers?.['Accept-Encoding'], 'a compressed body is refused with Accept-Encoding');
    assert.deepEqual(Object.keys(op('/pets/{petId}', 'get').responses), ['200', '304', '400', '401', '403', '404', '410', '412', '429', '500', '503']);
    assert.ok(op('/pets', 'get').responses['200']?.headers?.Link);
    for (const [p, m, s] of [['/pets', 'get', '200'], ['/pets', 'post', '201'], ['/pets/{petId}', 'get', '200'], ['/pets', 'get', '429']]) {
      assert.ok(op(p!, m!).responses[s!]?.headers?.RateLimit, `${m} ${p} ${s} declares RateLimit`);
      assert.ok(op(p!, m!).responses[s!]?.headers?.['RateLimit-Policy'], `${m} ${p} ${s} declares RateLimit-Policy`);
    }
    assert.ok(op('/pets', 'get').responses['429']?.headers?.['Retry-After']);
    assert.ok(op('/pets', 'get').responses['401']?.headers?.['WWW-Authenticate']);
    assert.ok(op('/pets', 'get').responses['403']?.headers?.['WWW-Authenticate']);
    for (const [status, response] of Object.entries(op('/pets/{petId}', 'get').responses)) {
      for (const h of ['Deprecation', 'Sunset', 'Link']) assert.ok(response.headers?.[h], `getPet ${status} declares ${h}`);
    }
  });

  test('when reading createPet, then the optional Idempotency-Key header and its policy are documented', () => {
    const param = (op('/pets', 'post').parameters ?? []).find((p) => p.name.toLowerCase() === 'idempotency-key');
    assert.ok(param);
    assert.equal(param.in, 'header');
    assert.equal(param.required, false);
    assert.match(JSON.stringify(param), /24 hours/);
    assert.match(JSON.stringify(param), /255/);
    assert.ok(op('/pets', 'post').responses['201']?.headers?.['Idempotent-Replayed']);
  });

  test('when reading getPet, then it is deprecated and names the removal date and the replacement', () => {
    const getPet = op('/pets/{petId}', 'get');
    assert.equal(getPet.deprecated, true);
    assert.match(String(getPet.description), /5 December 2030/);
    assert.match(String(getPet.description), /GET \/pets` with the `status` filter/);
    assert.equal(op('/pets', 'get').deprecated, undefined);
  });

  test('when reading the Error schema, then every error code is enumerated with a description', () => {
    const code = (doc.components.schemas.Error?.properties as Record<string, { enum: string[]; 'x-enum-descriptions': Record<string, string> }>).code!;
    assert.ok(code.enum.includes('unauthorized') && code.enum.includes('invalid_cursor') && code.enum.includes('gone'));
    assert.deepEqual(Object.keys(code['x-enum-descriptions']), code.enum);
  });

  test('when reading updatePet, then its request body lists application/json and application/merge-patch+json, both the PetPatch schema', () => {
    const content = (op('/pets/{petId}', 'patch').requestBody as { required: boolean; content: Record<string, { schema: unknown }> }).content;
    assert.deepEqual(Object.keys(content), ['application/json', 'application/merge-patch+json']);
    for (const media of Object.values(content)) assert.deepEqual(media.schema, { $ref: '#/components/schemas/PetPatch' });
  });

  test('when reading the pet and category operations, then each takes If-Match and If-None-Match, answers with the ETag, and declares 412 (and 304 on reads)', () => {
    const operations: Array<[string, string, string[]]> = [
      ['/pets/{petId}', 'get', ['200', '304']],
      ['/pets/{petId}', 'patch', ['200']],
      ['/pets/{petId}', 'delete', []],
      ['/categories/{categoryId}', 'get', ['200', '304']],
      ['/categories/{categoryId}', 'put', ['200', '201']],
      ['/categories/{categoryId}', 'delete', []],
    ];
    for (const [p, m, tagged] of operations) {
      const operation = op(p, m);
      const headers = (operation.parameters ?? []).filter((param) => param.in === 'header').map((param) => [param.name, param.required]);
      assert.deepEqual(headers, [['if-match', false], ['if-none-match', false]], `${m} ${p}`);
      assert.match(JSON.stringify(operation.responses['412']), /precondition_failed/, `${m} ${p} declares 412`);
      for (const status of tagged) assert.ok(operation.responses[status]?.headers?.ETag, `${m} ${p} ${status} declares ETag`);
      assert.equal(operation.responses['304'] !== undefined, m === 'get', `${m} ${p}: 304 on reads only`);
    }
  });

  test('when linted with Spectral spectral:oas, then there are no warnings or errors', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-spectral-'));
    const file = path.join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const result = spawnSync('node_modules/.bin/spectral', ['lint', file, '--ruleset', '.spectral.yaml', '--fail-severity', 'warn'], {
      encoding: 'utf8',
    });
    assert.equal(result.status, 0, result.stdout + result.stderr);
  });

  test('when a pet operation is read, then none carries x-stability (as in the spec: they are stable)', () => {
    for (const o of [op('/pets', 'get'), op('/pets', 'post'), op('/pets/{petId}', 'get')]) assert.equal(o['x-stability'], undefined);
  });
});

describe('x-stability and x-hideTryItPanel', () => {
  test('when an operation schema is marked beta and without try-it, then the published operation carries both extensions', async (t) => {
    const app = Fastify();
    t.after(() => app.close());
    await registerOpenApi(app, loadConfig({}).docs);
    app.get('/v1/widgets', { schema: { operationId: 'listWidgets', tags: ['animals'], ...stability('beta'), ...hideTryItPanel } }, async () => []);
    await app.ready();
    const doc = app.swagger() as unknown as { paths: Record<string, Record<string, Record<string, unknown>>> };
    assert.equal(doc.paths['/widgets']?.get?.['x-stability'], 'beta');
    assert.equal(doc.paths['/widgets']?.get?.['x-hideTryItPanel'], true);
  });
});
