// The developer portal over HTTP: redirect, security headers, validators, compression, the
// generated pages, and PETSTORE_DOCS=false.
import assert from 'node:assert/strict';
import { get, type IncomingHttpHeaders } from 'node:http';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { ERROR_CODES, ERROR_STATUS, type ErrorCode } from '../../src/errors.js';
import { deprecationsList } from '../../src/http/portal/deprecations-page.js';
import { errorsTable } from '../../src/http/portal/errors-page.js';
import { allOperations, type OpenApiDocument } from '../../src/http/portal/document.js';
import { PAGES as NAVIGATION } from '../../src/http/portal/layout.js';
import { markdown } from '../../src/http/portal/markdown.js';
import { resourceGroups } from '../../src/http/portal/reference-page.js';
import { webhookEventsSection } from '../../src/http/portal/webhook-events.js';
import { EVENT_TYPES } from '../../src/schemas/events.js';
import { sharedApp, startApp } from '../helpers/app.js';

const PAGES = NAVIGATION.map((page) => page.href);
const ASSETS = ['/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css', '/docs/assets/reference.js', '/docs/assets/portal.css', '/docs/assets/portal.js'];

/** A GET that keeps the body as bytes and decodes nothing (fetch would undo Content-Encoding). */
function rawGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

describe('developer portal over HTTP', () => {
  const getApp = sharedApp();

  test('when / or /docs/ is requested, then 302 to /docs', async () => {
    const app = await getApp();
    for (const path of ['/', '/docs/']) {
      const res = await rawGet(app.url + path);
      assert.equal(res.status, 302, path);
      assert.equal(res.headers.location, '/docs');
    }
  });

  test('when pages and assets are requested, then the CSP allows only this origin and nosniff is set', async () => {
    const app = await getApp();
    for (const path of [...PAGES, ...ASSETS, '/']) {
      const res = await rawGet(app.url + path);
      assert.ok(res.status === 200 || res.status === 302, `${path}: ${res.status}`);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', path);
      const csp = String(res.headers['content-security-policy'] ?? '');
      const directives = new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]));
      assert.deepEqual(directives.get('default-src'), ["'self'"], `${path}: ${csp}`);
      for (const [name, values] of directives) {
        for (const value of values) {
          // Only keywords for this origin or nothing, and data: images (Swagger UI's icons): no host, no inline, no eval.
          assert.ok(["'self'", "'none'"].includes(value) || (name === 'img-src' && value === 'data:'), `${path}: ${name} ${value}`);
        }
      }
    }
  });

  test('when pages are requested, then they are HTML with the one navigation, and uncacheable without revalidation', async () => {
    const app = await getApp();
    for (const path of PAGES) {
      const res = await rawGet(app.url + path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      assert.equal(res.headers['cache-control'], 'no-cache');
      const html = res.body.toString('utf8');
      for (const href of ['/docs', '/docs/quickstart', '/docs/webhooks', '/docs/keys', '/docs/errors', '/docs/deprecations', '/v1/openapi.json', '/example/v1/openapi.json']) {
        assert.match(html, new RegExp(`<nav[^]*href="${href}"[^]*</nav>`), `${path} links ${href}`);
      }
      assert.match(html, new RegExp(`href="${path}" aria-current="page"`), `${path} is the current page`);
    }
  });

  test('when a page or asset is requested again with its ETag, then 304 without a body; a stale ETag gets 200', async () => {
    const app = await getApp();
    for (const path of [...PAGES, ...ASSETS]) {
      for (const encoding of ['identity', 'br']) {
        const first = await rawGet(app.url + path, { 'accept-encoding': encoding });
        const etag = first.headers.etag;
        assert.ok(etag, `${path} has an ETag`);
        const again = await rawGet(app.url + path, { 'if-none-match': etag, 'accept-encoding': encoding });
        assert.equal(again.status, 304, `${path} (${encoding})`);
        assert.equal(again.body.length, 0);
        const stale = await rawGet(app.url + path, { 'if-none-match': '"stale"', 'accept-encoding': encoding });
        assert.equal(stale.status, 200);
      }
    }
  });

  test('when an asset is requested with Accept-Encoding, then br or gzip bytes that decode to the file, else the file itself', async () => {
    const app = await getApp();
    for (const path of ['/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css']) {
      const plain = await rawGet(app.url + path);
      assert.equal(plain.status, 200);
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.ok(plain.body.length > 100_000, `${path} is a large asset`);
      assert.match(String(plain.headers.vary), /accept-encoding/i);

      const br = await rawGet(app.url + path, { 'accept-encoding': 'gzip, deflate, br' });
      assert.equal(br.headers['content-encoding'], 'br');
      assert.match(String(br.headers.vary), /accept-encoding/i);
      assert.ok(br.body.length < plain.body.length / 3, `${path}: br ${br.body.length} of ${plain.body.length} bytes`);
      assert.ok(brotliDecompressSync(br.body).equals(plain.body));

      const gzip = await rawGet(app.url + path, { 'accept-encoding': 'gzip' });
      assert.equal(gzip.headers['content-encoding'], 'gzip');
      assert.ok(gunzipSync(gzip.body).equals(plain.body));
      assert.notEqual(gzip.headers.etag, br.headers.etag, 'each encoding has its own validator');
    }
  });

  test('when the errors page is read, then every code of the error model is listed with its status', async () => {
    const app = await getApp();
    const html = (await rawGet(`${app.url}/docs/errors`)).body.toString('utf8');
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
      assert.match(html, new RegExp(`<tr id="${code}"><td><code>${code}</code></td><td>${ERROR_STATUS[code]}</td>`), code);
    }
    // …and the statuses are the ones the API really sends.
    const { key } = await app.createAccount();
    for (const [method, path, options] of [
      ['GET', '/nope', {}],
      ['GET', '/v1/pets', {}],
      ['DELETE', '/v1/pets', { key }],
      ['POST', '/v1/pets', { key, rawBody: '{', headers: { 'content-type': 'application/json' } }],
      ['GET', '/v1/pets?cursor=forged', { key }],
    ] as const) {
      const res = await app.request(method, path, options);
      const { code, status } = res.body as { code: ErrorCode; status: number };
      assert.equal(ERROR_STATUS[code], status, `${method} ${path}: ${code}`);
      assert.match(html, new RegExp(`<tr id="${code}"><td><code>${code}</code></td><td>${status}</td>`));
    }
  });

  test("when docs/api.md's error table is read, then it lists every code with the status of the error model", () => {
    const api = readFileSync('docs/api.md', 'utf8');
    const table = api.slice(api.indexOf('### Error codes'));
    const rows = new Map([...table.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]));
    assert.deepEqual(Object.fromEntries(rows), { ...ERROR_STATUS });
  });

  test('when the deprecations page is read, then getPet is listed with since, sunset and successor from the document', async () => {
    const app = await getApp();
    const html = (await rawGet(`${app.url}/docs/deprecations`)).body.toString('utf8');
    const section = /<section class="deprecation" id="getPet">[^]*?<\/section>/.exec(html)?.[0] ?? '';
    assert.match(section, /<code>GET \/v1\/pets\/\{petId\}<\/code>/);
    assert.match(section, /<dt>Deprecated since<\/dt><dd>21 November 2026<\/dd>/);
    assert.match(section, /<dt>Removed on \(sunset\)<\/dt><dd><strong>5 December 2030<\/strong><\/dd>/);
    assert.match(section, /<code>GET \/v1\/pets<\/code> with the <code>status<\/code> filter \(<a href="\/docs#\/animals\/listPets">/);
    assert.equal(html.match(/<section class="deprecation"/g)?.length, 1, 'only deprecated operations are listed');
  });

  test('when the example API\'s document is read too, then its operations are on the errors page, and its deprecations would be listed', async () => {
    const app = await getApp();
    const html = (await rawGet(`${app.url}/docs/errors`)).body.toString('utf8');
    // sendMessage's 400 names invalid_content_type: it is linked where that code is documented.
    const row = /<tr id="invalid_content_type">[^]*?<\/tr>/.exec(html)?.[0] ?? '';
    assert.match(row, /<a href="\/docs#\/messages\/sendMessage"><code>sendMessage<\/code><\/a>/, row);
    assert.match(row, /<a href="\/docs#\/animals\/createPet">/, row);

    // The example document has no deprecated operation today; one that had would be listed with
    // its own base path, and a successor in either document is found.
    const example = (await app.request('GET', '/example/v1/openapi.json')).body as { servers: unknown; paths: Record<string, Record<string, Record<string, unknown>>> };
    const petstore = (await app.request('GET', '/v1/openapi.json')).body as { servers: unknown; paths: unknown };
    assert.equal(deprecationsList([example]), '<p>No operation is deprecated.</p>');
    const deprecated = structuredClone(example);
    Object.assign(deprecated.paths['/messages']!.get!, {
      deprecated: true,
      'x-deprecated-since': '2026-11-21T00:00:00.000Z',
      'x-sunset': '2031-01-01T00:00:00.000Z',
      'x-successor': { operationId: 'listPets', note: 'for no reason but this test' },
    });
    const list = deprecationsList([petstore, deprecated]);
    const section = /<section class="deprecation" id="listMessages">[^]*?<\/section>/.exec(list)?.[0] ?? '';
    assert.match(section, /<code>GET \/example\/v1\/messages<\/code>/);
    assert.match(section, /<strong>1 January 2031<\/strong>/);
    assert.match(section, /<code>GET \/v1\/pets<\/code> for no reason but this test \(<a href="\/docs#\/animals\/listPets">/);
    assert.match(section, /<a href="\/docs#\/messages\/listMessages">/);
    assert.equal(list.match(/<section class="deprecation"/g)?.length, 2, 'getPet and listMessages');
  });

  test('when the reference page is read, then it has one section per API, each naming its document and this server\'s base path', async () => {
    const app = await getApp();
    const html = (await rawGet(`${app.url}/docs`)).body.toString('utf8');
    const sections = [...html.matchAll(/<section class="reference-api" id="([^"]+)"[^>]* data-document="([^"]+)" data-server="([^"]+)"[^>]*>/g)].map((m) => m.slice(1));
    assert.deepEqual(sections, [
      ['petstore-api', '/v1/openapi.json', '/v1'],
      ['example-api', '/example/v1/openapi.json', '/example/v1'],
    ]);
    for (const [, document] of sections) assert.equal((await rawGet(app.url + document!)).status, 200, document);
  });

  test('when the reference page is read, then it groups every operation under one resource, in the page order, each linked from the contents', async () => {
    const app = await getApp();
    const html = (await rawGet(`${app.url}/docs`)).body.toString('utf8');
    const docs = [(await app.request('GET', '/v1/openapi.json')).body, (await app.request('GET', '/example/v1/openapi.json')).body] as OpenApiDocument[];
    const groups = docs.map(resourceGroups);
    assert.deepEqual(groups.map((g) => g.map((r) => r.name)), [
      ['Pets', 'Categories', 'Orders', 'Events', 'Webhook endpoints', 'API keys', 'Audit log'],
      ['Messages'],
    ]);
    for (const [i, doc] of docs.entries()) {
      const grouped = groups[i]!.flatMap((g) => g.operations).toSorted();
      assert.deepEqual(grouped, allOperations([doc]).map((op) => `${op.method.toLowerCase()} ${op.path}`).toSorted(), 'each operation once');
    }
    assert.ok(groups[0]!.find((g) => g.name === 'Orders')!.operations.includes('get /store/orders'));
    assert.ok(groups[0]!.find((g) => g.name === 'Pets')!.operations.includes('get /store/inventory'));
    assert.equal(groups[0]!.find((g) => g.name === 'Orders')!.guide, '/docs/orders');
    for (const group of groups.flat()) assert.match(html, new RegExp(`<a href="#resource-${group.id}">${group.name}</a>`));
    // The page hands the groups to reference.js as they are.
    const attribute = /id="petstore-api"[^>]* data-groups="([^"]*)"/.exec(html)?.[1] ?? '';
    assert.deepEqual(JSON.parse(attribute.replace(/&quot;/g, '"').replace(/&amp;/g, '&')), groups[0]);
  });

  test("when the reference page is read, then it shows each x-webhooks event kind with its payload's fields and the signature headers", async () => {
    const app = await getApp();
    const html = (await rawGet(`${app.url}/docs`)).body.toString('utf8');
    const section = /<section class="webhook-events" id="webhook-events"[^]*?<\/section>/.exec(html)?.[0] ?? '';
    assert.deepEqual([...section.matchAll(/<article class="webhook-event" id="webhook-([a-z_.]+)">/g)].map((m) => m[1]), [...EVENT_TYPES]);
    for (const header of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) assert.match(section, new RegExp(`<td><code>${header}</code></td>`));
    const changed = /<article class="webhook-event" id="webhook-pet\.status_changed">[^]*?<\/article>/.exec(section)?.[0] ?? '';
    assert.match(changed, /Body: <code>PetStatusChangedEvent<\/code>/);
    assert.match(changed, /<td><code>type<\/code><\/td><td><code>&quot;pet\.status_changed&quot;<\/code><\/td>/);
    assert.match(changed, /<td><code>data\.object<\/code><\/td><td><code>Pet<\/code><\/td>/);
    assert.match(changed, /<td><code>data\.previousStatus<\/code>/);
    assert.match(html, /<a href="#webhook-events">Webhook events<\/a>/);
  });

  test('when the errors page lists more than four operations for a code, then they fold behind a summary', async () => {
    const app = await getApp();
    const html = (await rawGet(`${app.url}/docs/errors`)).body.toString('utf8');
    const row = /<tr id="invalid_request">[^]*?<\/tr>/.exec(html)?.[0] ?? '';
    const count = Number(/<summary>(\d+) operations<\/summary>/.exec(row)?.[1]);
    assert.ok(count > 4, row);
    assert.equal(row.match(/<a href="\/docs#\//g)?.length, count);
  });

  test('when the document or the Markdown holds HTML, then the pages show it as text', () => {
    const hostile = '<script>alert(1)</script><img src=x onerror=alert(2)>';
    const doc = {
      servers: [{ url: 'https://api.example/v1' }],
      paths: {
        [`/x/${hostile}`]: {
          get: {
            operationId: hostile,
            summary: hostile,
            description: hostile,
            deprecated: true,
            'x-deprecated-since': hostile,
            'x-successor': { operationId: hostile, note: hostile },
            responses: { 400: { description: `${hostile} (\`invalid_request\`)` } },
          },
        },
      },
    };
    const hooks = { ...doc, 'x-webhooks': { [hostile]: { post: { description: hostile, 'x-stability': hostile, parameters: [{ name: hostile, description: hostile }] } } } };
    for (const html of [deprecationsList([doc]), errorsTable([doc]), webhookEventsSection(hooks), markdown.render(`# ${hostile}\n\n${hostile}\n\n[x](javascript:alert(3))`)]) {
      assert.doesNotMatch(html, /<script|<img|href="javascript:/i, html);
      assert.match(html, /&lt;script&gt;/);
    }
  });

  test('when PETSTORE_DOCS=false, then the portal answers 404 but the OpenAPI document and the deprecation notice stay', async (t) => {
    const app = await startApp(t, { env: { PETSTORE_DOCS: 'false' } });
    for (const path of ['/', '/docs', '/docs/', '/docs/quickstart', '/docs/errors', '/docs/assets/swagger-ui-bundle.js']) {
      const res = await app.request('GET', path);
      assert.equal(res.status, 404, path);
      assert.equal((res.body as { code: string }).code, 'not_found');
    }
    assert.equal((await app.request('GET', '/v1/openapi.json')).status, 200);
    // getPet's Link header points here, so it stays, without the portal's navigation and assets.
    const notice = await app.request('GET', '/docs/deprecations');
    assert.equal(notice.status, 200);
    assert.match(notice.text, /id="getPet"/);
    assert.doesNotMatch(notice.text, /<nav|\/docs\/assets\//);
  });
});
