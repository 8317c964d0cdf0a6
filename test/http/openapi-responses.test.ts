// Every response the suite sees is checked against the served documents (test/helpers/app.ts,
// served-responses.ts, openapi.ts). These tests show that check can fail: on the real documents
// (no 204 declares content) and on a small app that repeats the mistakes it exists to catch.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerOpenApiDocument } from '../../src/http/plugins/openapi.js';
import { noContent } from '../../src/http/responses.js';
import { startApp } from '../helpers/app.js';
import { createOpenApiChecker, type OpenApiDocument } from '../helpers/openapi.js';
import { checkServedResponses, type ServedResponses } from '../helpers/served-responses.js';

type Responses = Record<string, { content?: Record<string, unknown> }>;

/** A small app with its own document under /api, watched like the test app is. */
async function watchedApp(t: TestContext, routes: (app: FastifyInstance) => void): Promise<{ url: string; served: ServedResponses }> {
  const app = Fastify();
  t.after(() => app.close());
  const document = await registerOpenApiDocument(app, {
    path: '/api/openapi.json',
    basePath: '/api',
    info: { title: 'Widgets', version: '1', description: 'Test.' },
    servers: [{ url: 'http://widgets.test/api', description: 'Test' }],
    tags: [{ name: 'widgets', description: 'Widgets.' }],
  });
  routes(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const check = createOpenApiChecker(document() as OpenApiDocument, '/api');
  const served = checkServedResponses(app.server, {
    covers: (method, path) => check.operation(method, path) !== undefined,
    problems: (res) => [...check.errorModelProblems(res), ...check.documentProblems(res)],
  });
  const address = app.server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, served };
}

const widget = { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: false };

describe('the served documents', () => {
  test('when read, then no 204 declares content and every other 2xx does, in both documents', async (t) => {
    const app = await startApp(t);
    for (const path of ['/v1/openapi.json', '/example/v1/openapi.json']) {
      const doc = (await app.request('GET', path)).body as OpenApiDocument;
      let noContentSeen = 0;
      for (const [template, operations] of Object.entries(doc.paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          for (const [status, response] of Object.entries(operation.responses as Responses)) {
            if (!status.startsWith('2')) continue;
            const where = `${path}: ${method.toUpperCase()} ${template} ${status}`;
            if (status === '204') noContentSeen++;
            assert.equal(response.content === undefined, status === '204', `${where}: ${status === '204' ? 'declares no content' : 'declares content'}`);
          }
        }
      }
      if (path === '/v1/openapi.json') assert.ok(noContentSeen >= 1, 'deleteWebhookEndpoint answers 204');
    }
  });

  test('when a documented operation is called without the request helper (a bare fetch, the fast path), then its response is still checked', async (t) => {
    const app = await startApp(t);
    const { key } = await app.createAccount();
    const auth = { authorization: `Bearer ${key}` };
    const before = app.served.checked;
    await (await fetch(`${app.url}/v1/pets`, { headers: auth })).arrayBuffer(); // answered by the fast path
    await (await fetch(`${app.url}/v1/webhook-endpoints/wh_missing`, { method: 'DELETE', headers: auth })).arrayBuffer();
    await (await fetch(`${app.url}/health`)).arrayBuffer(); // not a documented operation
    assert.equal(app.served.checked - before, 2);
    assert.deepEqual(app.served.take(), []);
  });
});

describe('the response check, on an app that breaks its document', () => {
  test('when a 204 is declared the way that published content (no type), then the body it never sends is reported', async (t) => {
    const { url, served } = await watchedApp(t, (app) => {
      const schema = (response: object) => ({ operationId: 'deleteWidget', tags: ['widgets'], response: { 204: response } });
      app.delete('/api/widgets/:id', { schema: schema({ description: 'Deleted.' }) }, async (_request, reply) => reply.status(204).send());
      app.delete('/api/gadgets/:id', { schema: { ...schema(noContent('Deleted.')), operationId: 'deleteGadget' } }, async (_request, reply) => reply.status(204).send());
    });
    await (await fetch(`${url}/api/widgets/1`, { method: 'DELETE' })).arrayBuffer();
    assert.deepEqual(served.take(), ['deleteWidget (DELETE /widgets/{id}) → 204: the document declares content (application/json), but the response has no body']);
    await (await fetch(`${url}/api/gadgets/1`, { method: 'DELETE' })).arrayBuffer();
    assert.deepEqual(served.take(), [], 'noContent() publishes no content');
    assert.equal(served.checked, 2);
  });

  test('when an answer breaks the document (undeclared status, body where none is declared, wrong media type, wrong shape), then each is reported; a valid one is not', async (t) => {
    const { url, served } = await watchedApp(t, (app) => {
      const declared = { 200: { description: 'A widget.', content: { 'application/json': { schema: widget } } }, 204: noContent('Nothing.') };
      const route = (path: string, answer: (reply: import('fastify').FastifyReply) => unknown) =>
        app.get(`/api/${path}`, { schema: { operationId: path, tags: ['widgets'], response: declared } }, async (_request, reply) => answer(reply));
      route('ok', (reply) => reply.send({ id: 1 }));
      route('undeclared', (reply) => reply.status(201).send({ id: 1 }));
      // hijacked: the raw writes bypass Fastify's serializer (as the fast path does)
      route('body-on-204', (reply) => { reply.hijack(); reply.raw.writeHead(204, { 'content-type': 'application/json' }); reply.raw.end('{"id":1}'); });
      route('text', (reply) => reply.header('content-type', 'text/plain').send('1'));
      route('shape', (reply) => { reply.hijack(); reply.raw.writeHead(200, { 'content-type': 'application/json' }); reply.raw.write('{"id":'); reply.raw.end('"one"}'); });
    });
    const problems: Record<string, string[]> = {};
    for (const path of ['ok', 'undeclared', 'body-on-204', 'text', 'shape']) {
      await (await fetch(`${url}/api/${path}`)).arrayBuffer();
      problems[path] = served.take();
    }
    assert.deepEqual(problems.ok, []);
    assert.match(problems.undeclared!.join('\n'), /^undeclared \(GET \/undeclared\) → 201: status 201 is not declared/);
    // Node drops a 204's body on the wire; the document still must not promise one, and the code must not send one.
    assert.match(problems['body-on-204']!.join('\n'), /→ 204: the document declares no content, but the response has a body/);
    assert.match(problems['body-on-204']!.join('\n'), /→ 204: the document declares no content, but the response has Content-Type application\/json/);
    assert.match(problems.text!.join('\n'), /→ 200: Content-Type text\/plain is not declared \(declared: application\/json\)/);
    assert.match(problems.shape!.join('\n'), /→ 200: body matches the document: data\/id must be integer/);
  });

  test('when a status is only covered by a range or default, then it is accepted', () => {
    const check = createOpenApiChecker({
      openapi: '3.0.3',
      components: { schemas: { Error: { type: 'object' } } },
      paths: { '/things': { get: { operationId: 'listThings', responses: { '2XX': { content: { 'application/json': { schema: { type: 'array' } } } }, default: {} } } } },
    }, '');
    assert.deepEqual(check.documentProblems({ method: 'GET', path: '/things', status: 206, contentType: 'application/json', body: [], text: '[]' }), []);
    assert.deepEqual(check.documentProblems({ method: 'GET', path: '/things', status: 302, contentType: null, body: undefined, text: '' }), []);
    assert.deepEqual(check.documentProblems({ method: 'GET', path: '/things', status: 206, contentType: 'application/json', body: {}, text: '{}' }), [
      'listThings (GET /things) → 206: body matches the document: data must be array',
    ]);
  });
});
