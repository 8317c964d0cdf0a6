// The developer portal in a real browser (Debian's Chromium), against the real app on a real
// SQLite store with a real key: one browser and one server for the whole file.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { ERROR_CODES } from '../../src/errors.js';
import { operations, type OpenApiDocument } from '../../src/http/portal/document.js';
import { hideTryItPanel, stability } from '../../src/http/responses.js';
import { sharedAppWithKey, type TestApp } from '../helpers/app.js';
import { browserSkip, launchChromium, SCREENSHOTS_DIR } from '../helpers/browser.js';

const NAV = ['Reference', 'Quickstart', 'Errors', 'Deprecations', 'openapi.json', 'Example API openapi.json'];

/** Swagger UI's element for an operation (its deep-link id). */
const operationBlock = (page: Page, tag: string, operationId: string) => page.locator(`#operations-${tag}-${operationId}`);

describe('developer portal in Chromium', { skip: browserSkip }, () => {
  const getApp = sharedAppWithKey();
  let app: TestApp;
  let key: string;
  let context: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;
  let page: Page;
  let doc: OpenApiDocument;
  const requests: string[] = [];
  const consoleErrors: string[] = [];

  /** Records every request and every console error of a page, for the last test. */
  const watch = (p: Page) => {
    p.on('request', (request) => requests.push(request.url()));
    p.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(`${p.url()}: ${message.text()}`);
    });
    p.on('pageerror', (error) => consoleErrors.push(`${p.url()}: ${error.message}`));
  };
  const screenshot = (p: Page, name: string) => p.screenshot({ path: path.join(SCREENSHOTS_DIR, `${name}.png`), fullPage: true });

  before(async () => {
    ({ app, key } = await getApp());
    doc = (await app.request('GET', '/v1/openapi.json')).body as OpenApiDocument;
    const created = await app.request('POST', '/v1/pets', { key, body: { name: 'Biscuit', categoryId: 3, status: 'available' } });
    assert.equal(created.status, 201);
    const browser = await launchChromium();
    context = browser.context;
    closeBrowser = browser.close;
    page = await context.newPage();
    watch(page);
  });
  after(async () => {
    await closeBrowser?.();
  });

  /** Authorize with the key in Swagger UI's dialog (the key goes into the page's memory). */
  async function authorize(p: Page) {
    await p.locator('.scheme-container button.authorize').click();
    const dialog = p.locator('.dialog-ux .modal-ux');
    await dialog.locator('input').first().fill(key);
    await dialog.locator('button.authorize').click();
    await dialog.locator('button.btn-done').click();
    await dialog.waitFor({ state: 'detached' });
  }

  /** Expands an operation and presses Try it out; returns its block. */
  async function tryOut(p: Page, operationId: string) {
    const block = operationBlock(p, 'animals', operationId);
    await block.locator('.opblock-summary-control').click();
    await block.locator('button.try-out__btn').click();
    return block;
  }

  /** Presses Execute and waits for the live response; returns its status cell and body text. */
  async function execute(block: ReturnType<typeof operationBlock>) {
    await block.locator('button.execute').click();
    const response = block.locator('.live-responses-table .response').first();
    await response.waitFor();
    return {
      status: (await response.locator('.response-col_status').innerText()).trim(),
      body: await response.locator('.response-col_description').innerText(),
    };
  }

  test('when / is opened, then it lands on the reference, which lists every operation of the served document', async () => {
    await page.goto(`${app.url}/`);
    assert.equal(page.url(), `${app.url}/docs`);
    await page.locator('.opblock').first().waitFor();
    const ops = operations(doc);
    assert.deepEqual(
      ['listPets', 'createPet', 'getPet'].filter((id) => !ops.some((op) => op.operationId === id)),
      [],
      'the pet operations are in the document',
    );
    // Orders and the messaging example appear here by themselves once the document has them.
    for (const op of ops) {
      const block = operationBlock(page, op.tag, op.operationId);
      assert.equal(await block.count(), 1, `${op.operationId} is on the page`);
      assert.match(await block.locator('.opblock-summary').innerText(), new RegExp(op.operationId));
    }
    assert.deepEqual(await page.locator('.portal-nav a').allInnerTexts(), ['Petstore API', ...NAV]);
    await screenshot(page, 'reference');
  });

  test('when getPet is shown, then it is visibly deprecated, with its removal date and successor', async () => {
    const block = operationBlock(page, 'animals', 'getPet');
    assert.match((await block.getAttribute('class')) ?? '', /opblock-deprecated/);
    const summary = await block.locator('.opblock-summary').innerText();
    assert.match(summary, /Deprecated: removed on 5 December 2030/);
    assert.match(summary, /Use listPets instead/);
    await block.locator('.opblock-summary-control').click();
    // Swagger UI renders the body once it has resolved the operation: wait for it.
    await block.getByText('Warning: Deprecated').waitFor();
    assert.match(await block.locator('.opblock-body').innerText(), /removed on 5 December 2030/);
    await block.locator('.opblock-summary-control').click();
  });

  test('when the key is entered and listPets is sent, then the page shows 200 and the pet created beforehand', async () => {
    await authorize(page);
    const block = await tryOut(page, 'listPets');
    const sent = page.waitForRequest((r) => new URL(r.url()).pathname === '/v1/pets' && r.method() === 'GET');
    const response = await execute(block);
    const request = await sent;
    assert.equal(new URL(request.url()).origin, app.url, 'sent to the server that serves the page');
    assert.equal(request.headers().authorization, `Bearer ${key}`);
    assert.equal(response.status, '200');
    assert.match(response.body, /"name": "Biscuit"/);
    assert.match(await block.locator('.live-responses-table').innerText(), /ratelimit-policy/i, 'response headers are shown');
    await block.locator('.responses-wrapper').first().screenshot({ path: path.join(SCREENSHOTS_DIR, 'reference-list-pets-sent.png') });
  });

  test('when the key has been used, then it is in no storage, cookie or URL of the page', async () => {
    // A string, evaluated in the page (this project's TypeScript has no DOM types).
    const stored = await page.evaluate<string>(
      'JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie, url: location.href })',
    );
    assert.doesNotMatch(stored, new RegExp(key));
    assert.deepEqual(await context.cookies(), []);
  });

  test('when createPet is sent from the page, then GET /v1/pets lists the new pet', async () => {
    const block = await tryOut(page, 'createPet');
    await block.locator('textarea.body-param__text').fill(JSON.stringify({ name: 'Sent from the reference', categoryId: 7, status: 'pending' }));
    const response = await execute(block);
    assert.equal(response.status, '201');
    const list = await app.request('GET', '/v1/pets?limit=100', { key });
    assert.ok((list.body as Array<{ name: string }>).some((pet) => pet.name === 'Sent from the reference'), JSON.stringify(list.body));
  });

  test('when operations carry x-hideTryItPanel or x-stability, then they have no send control and show their stability', async () => {
    // Every such operation of the served document (listOrders, once orders exist)…
    const hidden = operations(doc).filter((op) => op.extensions['x-hideTryItPanel'] === true);
    for (const op of hidden) {
      const block = operationBlock(page, op.tag, op.operationId);
      await block.locator('.opblock-summary-control').click();
      // Its documented responses are rendered with the rest of the body: after them, no button can come.
      await block.locator('.responses-table tr.response').first().waitFor();
      assert.equal(await block.locator('button.try-out__btn, button.execute').count(), 0, `${op.operationId} has no send control`);
    }
    // …and, now, a test document with such an operation beside the real ones.
    const testPage = await context.newPage();
    watch(testPage);
    const testDoc = structuredClone(doc) as OpenApiDocument & { paths: Record<string, unknown> };
    testDoc.paths['/store/orders'] = {
      get: {
        operationId: 'listOrders',
        tags: ['animals'],
        summary: 'List orders (test operation)',
        ...hideTryItPanel,
        ...stability('experimental'),
        responses: { 200: { description: 'Orders.' } },
      },
    };
    await testPage.route(`${app.url}/v1/openapi.json`, (route) => route.fulfill({ json: testDoc }));
    await testPage.goto(`${app.url}/docs`);
    const orders = operationBlock(testPage, 'animals', 'listOrders');
    await orders.waitFor();
    assert.match(await orders.locator('.portal-badge-stability').innerText(), /experimental/i);
    assert.match(await orders.locator('.portal-badge-no-try-it').innerText(), /not sendable/i);
    await orders.locator('.opblock-summary-control').click();
    await orders.locator('.responses-table tr.response').first().waitFor();
    assert.equal(await orders.locator('button.try-out__btn, button.execute').count(), 0, 'listOrders has no send control');
    const pets = operationBlock(testPage, 'animals', 'listPets');
    await pets.locator('.opblock-summary-control').click();
    await pets.locator('button.try-out__btn').waitFor();
    assert.equal(await pets.locator('button.try-out__btn').count(), 1, 'listPets still has one');
    assert.equal(await operationBlock(testPage, 'animals', 'createPet').locator('.portal-badge').count(), 0, 'stable operations have no badge');
    await orders.screenshot({ path: path.join(SCREENSHOTS_DIR, 'reference-hidden-try-it.png') });
    await testPage.close();
  });

  test('when the quickstart, errors and deprecations pages are opened, then they render with the one navigation', async () => {
    for (const [name, heading] of [['quickstart', 'Quickstart'], ['errors', 'Errors'], ['deprecations', 'Deprecations']] as const) {
      await page.goto(`${app.url}/docs/${name}`);
      assert.equal(await page.locator('main h1').innerText(), heading);
      assert.deepEqual(await page.locator('.portal-nav a').allInnerTexts(), ['Petstore API', ...NAV]);
      assert.equal(await page.locator('.portal-nav a[aria-current="page"]').innerText(), heading);
      await screenshot(page, name);
    }
    await page.goto(`${app.url}/docs/errors`);
    assert.equal(await page.locator('table.error-codes tbody tr').count(), Object.keys(ERROR_CODES).length);
    await page.goto(`${app.url}/docs/deprecations`);
    assert.match(await page.locator('section#getPet').innerText(), /5 December 2030/);
    await page.goto(`${app.url}/docs/quickstart`);
    assert.ok((await page.locator('pre code').count()) >= 5, 'the quickstart has its code blocks');
  });

  test('when every page has been used, then every request went to the service and the console had no errors', () => {
    assert.ok(requests.length > 10, `requests were recorded (${requests.length})`);
    assert.deepEqual(requests.filter((url) => new URL(url).origin !== app.url), []);
    assert.deepEqual(consoleErrors, []);
  });
});
