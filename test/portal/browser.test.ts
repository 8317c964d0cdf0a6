// The developer portal in a real browser (Debian's Chromium), against the real app on a real
// SQLite store with a real key: one browser and one server for the whole file.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE } from '../../src/config.js';
import { ERROR_CODES } from '../../src/errors.js';
import { SCOPES } from '../../src/schemas/api-keys.js';
import { EVENT_TYPES } from '../../src/schemas/events.js';
import { allOperations, type OpenApiDocument } from '../../src/http/portal/document.js';
import { PAGES } from '../../src/http/portal/layout.js';
import { sharedAppWithKey, type TestApp } from '../helpers/app.js';
import { browserSkip, launchChromium, SCREENSHOTS_DIR } from '../helpers/browser.js';

const NAV = [...PAGES.map((p) => p.label), 'openapi.json', 'Example API openapi.json'];

/** Swagger UI's element for an operation (its deep-link id). */
const operationBlock = (page: Page, tag: string, operationId: string) => page.locator(`#operations-${tag}-${operationId}`);

/** The reference's sections, one Swagger UI each. */
const PETSTORE = '#petstore-api';
const EXAMPLE = '#example-api';

type Message = { id: string; message: string; status: string; createdAt: string; deliveredAt?: string };

describe('developer portal in Chromium', { skip: browserSkip }, () => {
  const getApp = sharedAppWithKey();
  let app: TestApp;
  let key: string;
  let context: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;
  let page: Page;
  /** The served documents: the Petstore's, then the example API's. */
  let docs: OpenApiDocument[];
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
  /** An operation's live response only (the request as curl, status, body, headers), without its documented responses. */
  const screenshotLiveResponse = (block: ReturnType<typeof operationBlock>, name: string) =>
    block.locator('.responses-inner > div').first().screenshot({ path: path.join(SCREENSHOTS_DIR, `${name}.png`) });

  before(async () => {
    ({ app, key } = await getApp());
    docs = [
      (await app.request('GET', '/v1/openapi.json')).body as OpenApiDocument,
      (await app.request('GET', '/example/v1/openapi.json')).body as OpenApiDocument,
    ];
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

  /** Authorize with the key in one section's dialog (the key goes into the page's memory). */
  async function authorize(p: Page, section: string) {
    await p.locator(`${section} .scheme-container button.authorize`).click();
    const dialog = p.locator('.dialog-ux .modal-ux');
    await dialog.locator('input').first().fill(key);
    await dialog.locator('button.authorize').click();
    await dialog.locator('button.btn-done').click();
    await dialog.waitFor({ state: 'detached' });
  }

  /** Expands an operation and presses Try it out; returns its block. */
  async function tryOut(p: Page, operationId: string, tag = 'animals') {
    const block = operationBlock(p, tag, operationId);
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

  /** Executes, checking that the request went to this server with the key; returns the live response. */
  async function executeWithKey(block: ReturnType<typeof operationBlock>, method: string, pathname: string) {
    const sent = page.waitForRequest((r) => new URL(r.url()).pathname === pathname && r.method() === method);
    const response = await execute(block);
    const request = await sent;
    assert.equal(new URL(request.url()).origin, app.url, 'sent to the server that serves the page');
    assert.equal(request.headers().authorization, `Bearer ${key}`);
    return response;
  }

  test('when / is opened, then it lands on the reference, which lists every operation of both served documents, each API in its own section', async () => {
    await page.goto(`${app.url}/`);
    assert.equal(page.url(), `${app.url}/docs`);
    await page.locator(`${PETSTORE} .opblock`).first().waitFor();
    await page.locator(`${EXAMPLE} .opblock`).first().waitFor();
    const ops = allOperations(docs);
    assert.deepEqual(
      ['listPets', 'createPet', 'getPet', 'listOrders', 'placeOrder', 'getOrder', 'deliverOrder', 'cancelOrder', 'sendMessage', 'getMessage', 'listMessages'].filter(
        (id) => !ops.some((op) => op.operationId === id),
      ),
      [],
      'the pet, order and messaging operations are in the documents',
    );
    for (const [section, doc] of [[PETSTORE, docs[0]!], [EXAMPLE, docs[1]!]] as const) {
      for (const op of allOperations([doc])) {
        const block = page.locator(section).locator(`#operations-${op.tag}-${op.operationId}`);
        assert.equal(await block.count(), 1, `${op.operationId} is in ${section}`);
        assert.match(await block.locator('.opblock-summary').innerText(), new RegExp(op.operationId));
      }
    }
    assert.match(await page.locator(`${PETSTORE} .info .title`).innerText(), /^Petstore API/);
    assert.match(await page.locator(`${EXAMPLE} .info .title`).innerText(), /^Example API/);
    // Try it goes to this server: each section's only server is this origin's base path.
    assert.deepEqual(await page.locator(`${PETSTORE} .servers select option`).allInnerTexts(), [`${app.url}/v1 - this server`]);
    assert.deepEqual(await page.locator(`${EXAMPLE} .servers select option`).allInnerTexts(), [`${app.url}/example/v1 - this server`]);
    assert.deepEqual(await page.locator('.portal-nav a').allInnerTexts(), ['Petstore API', ...NAV]);
    await screenshot(page, 'reference');
  });

  test('when an operation carries x-stability or x-hideTryItPanel, then it shows them, in either API; the others show no badge', async () => {
    for (const op of allOperations(docs)) {
      const summary = operationBlock(page, op.tag, op.operationId).locator('.opblock-summary');
      const stabilityValue = op.extensions['x-stability'];
      const badge = summary.locator('.portal-badge-stability');
      if (typeof stabilityValue === 'string') assert.equal((await badge.innerText()).toLowerCase(), stabilityValue, op.operationId);
      else assert.equal(await badge.count(), 0, `${op.operationId} has no stability badge`);
      assert.equal(await summary.locator('.portal-badge-no-try-it').count(), op.extensions['x-hideTryItPanel'] === true ? 1 : 0, op.operationId);
      if (!op.deprecated && stabilityValue === undefined) assert.equal(await summary.locator('.portal-badge').count(), 0, `${op.operationId} has no badge`);
    }
  });

  test('when getPet is shown, then it is visibly deprecated, with its removal date and successor', async () => {
    const block = operationBlock(page, 'animals', 'getPet');
    assert.match((await block.getAttribute('class')) ?? '', /opblock-deprecated/);
    const summary = await block.locator('.opblock-summary').innerText();
    assert.match(summary, /Deprecated: removed on 5 December 2030/);
    assert.match(summary, /Use listPets instead/);
    await block.locator('.opblock-summary-control').click();
    // Swagger UI renders the body once it has resolved the operation, the warning first and the
    // description after it (on a loaded machine, noticeably later): wait for both.
    await block.getByText('Warning: Deprecated').waitFor();
    await block.locator('.opblock-body').getByText(/removed on 5 December 2030/).first().waitFor();
    assert.match(await block.locator('.opblock-body').innerText(), /removed on 5 December 2030/);
    await block.locator('.opblock-summary-control').click();
  });

  test('when the key is entered and listPets is sent, then the page shows 200 and the pet created beforehand', async () => {
    await authorize(page, PETSTORE);
    const block = await tryOut(page, 'listPets');
    const response = await executeWithKey(block, 'GET', '/v1/pets');
    assert.equal(response.status, '200');
    assert.match(response.body, /"name": "Biscuit"/);
    assert.match(await block.locator('.live-responses-table').innerText(), /ratelimit-policy/i, 'response headers are shown');
    await screenshotLiveResponse(block, 'reference-list-pets-sent');
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

  test('when the real listOrders is opened, then it shows experimental and offers no send control, while placeOrder does', async () => {
    const orders = operationBlock(page, 'animals', 'listOrders');
    assert.match(await orders.locator('.portal-badge-stability').innerText(), /experimental/i);
    assert.match(await orders.locator('.portal-badge-no-try-it').innerText(), /not sendable/i);
    await orders.locator('.opblock-summary-control').click();
    // Its documented responses are rendered with the rest of the body: after them, no button can come.
    await orders.locator('.responses-table tr.response').first().waitFor();
    assert.equal(await orders.locator('button.try-out__btn, button.execute').count(), 0, 'listOrders has no send control');
    // Where the button would be, a note says why there is none and what to do instead.
    assert.match(await orders.locator('.portal-no-try-it-note').innerText(), /cannot be sent from this page[^]*x-hideTryItPanel[^]*terminal/);
    await orders.locator('.portal-no-try-it-note').scrollIntoViewIfNeeded();
    const box = (await orders.boundingBox())!;
    await page.screenshot({ path: path.join(SCREENSHOTS_DIR, 'reference-list-orders.png'), clip: { x: box.x, y: Math.max(0, box.y), width: box.width, height: 450 } });
    await orders.locator('.opblock-summary-control').click();
    // Every other operation marked so, in either document, is the same.
    for (const op of allOperations(docs).filter((o) => o.extensions['x-hideTryItPanel'] === true && o.operationId !== 'listOrders')) {
      const block = operationBlock(page, op.tag, op.operationId);
      await block.locator('.opblock-summary-control').click();
      await block.locator('.responses-table tr.response').first().waitFor();
      assert.equal(await block.locator('button.try-out__btn, button.execute').count(), 0, `${op.operationId} has no send control`);
      await block.locator('.opblock-summary-control').click();
    }
    // An experimental operation without the extension keeps its button.
    const place = operationBlock(page, 'animals', 'placeOrder');
    assert.match(await place.locator('.portal-badge-stability').innerText(), /experimental/i);
    await place.locator('.opblock-summary-control').click();
    await place.locator('button.try-out__btn').waitFor();
    assert.equal(await place.locator('button.try-out__btn').count(), 1, 'placeOrder has one');
    assert.equal(await place.locator('.portal-no-try-it-note').count(), 0, 'and no note');
    await place.locator('.opblock-summary-control').click();
  });

  test('when the key was entered in the Petstore section and sendMessage is sent, then the page shows 202 queued and the message gets delivered', async () => {
    // The key entered once (above, in the Petstore section) authorizes the example API too.
    assert.match((await page.locator(`${EXAMPLE} .scheme-container button.authorize`).getAttribute('class')) ?? '', /\blocked\b/, 'the example API is authorized');
    const block = await tryOut(page, 'sendMessage', 'messages');
    await block.locator('textarea.body-param__text').fill(JSON.stringify({ message: 'Sent from the reference' }));
    const response = await executeWithKey(block, 'POST', '/example/v1/messages');
    assert.equal(response.status, '202');
    assert.match(response.body, /"status": "queued"/);
    const headers = await block.locator('.live-responses-table').innerText();
    const location = /location: (\/example\/v1\/messages\/msg_\w+)/i.exec(headers)?.[1];
    assert.ok(location, `the Location header is shown:\n${headers}`);
    await screenshotLiveResponse(block, 'reference-send-message-sent');
    await block.locator('.opblock-summary-control').click();

    // Delivered within a second or so, as the quickstart says…
    let message: Message | undefined;
    for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      message = (await app.request('GET', location, { key })).body as Message;
      if (message.status !== 'queued') break;
    }
    assert.ok(message);
    assert.equal(message.message, 'Sent from the reference');
    assert.equal(message.status, 'delivered');
    // …and getMessage from the page says so too.
    const get = await tryOut(page, 'getMessage', 'messages');
    await get.locator('tr[data-param-name="id"] input').fill(message.id);
    const polled = await executeWithKey(get, 'GET', location);
    assert.equal(polled.status, '200');
    assert.match(polled.body, /"status": "delivered"/);
    assert.match(polled.body, /"deliveredAt"/);
    await get.locator('.opblock-summary-control').click();
  });

  test('when the reference is opened at a messaging deep link, then that operation is open', async () => {
    // The quickstart links to /docs#/messages/sendMessage.
    const linked = await context.newPage();
    watch(linked);
    await linked.goto(`${app.url}/docs#/messages/sendMessage`);
    const block = operationBlock(linked, 'messages', 'sendMessage');
    await block.locator('.opblock-body').waitFor();
    assert.match((await block.getAttribute('class')) ?? '', /\bis-open\b/);
    await linked.close();
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
    // Its messaging section: the statuses, and a link to sendMessage in the reference.
    const messaging = page.locator('h2#send-a-message-then-wait-for-it');
    assert.match(await messaging.innerText(), /Send a message/);
    assert.deepEqual(await page.locator('main table tbody td:first-child code').allInnerTexts(), ['queued', 'delivered', 'failed']);
    assert.ok((await page.locator('main a[href="/docs#/messages/sendMessage"]').count()) >= 1, 'it links sendMessage in the reference');
  });

  test('when /docs/webhooks is opened, then it renders its sections and generated tables with the one navigation, Webhooks current', async () => {
    await page.goto(`${app.url}/docs/webhooks`);
    assert.equal(await page.locator('main h1').innerText(), 'Events and webhooks');
    assert.deepEqual(await page.locator('.portal-nav a').allInnerTexts(), ['Petstore API', ...NAV]);
    assert.equal(await page.locator('.portal-nav a[aria-current="page"]').innerText(), 'Webhooks');
    assert.deepEqual(await page.locator('main h2').allInnerTexts(), [
      'Event kinds',
      'Try it first: petstore listen',
      'Try it on your machine',
      'Signatures',
      'Retries, 410, redirects and timeouts',
      'Ordering and catching up',
      'Rotating the secret',
      'Address policy',
    ]);
    assert.deepEqual(await page.locator('table.event-kinds tbody td:first-child code').allInnerTexts(), [...EVENT_TYPES]);
    assert.equal(await page.locator('table.retry-schedule tbody tr').count(), DEFAULT_WEBHOOK_RETRY_SCHEDULE.length);
    assert.match(await page.locator('main pre code.language-js').innerText(), /timingSafeEqual/);
    // The generated tables are readable: no cell squeezed to nothing.
    for (const cell of await page.locator('table.event-kinds td').all()) assert.ok(((await cell.boundingBox())?.width ?? 0) > 40);
    await screenshot(page, 'webhooks');
  });

  test('when a restricted key sends an operation it lacks the scope of, then the page shows the 403 insufficient_scope naming the scope', async () => {
    // Its own page: the browser logs a 4xx answer to the console, which the last test checks for the others.
    const restricted = (await app.request('POST', '/v1/api-keys', { key, body: { scopes: ['pets:read'] } })).body as { key: string };
    const other = await context.newPage();
    try {
      await other.goto(`${app.url}/docs`);
      await other.locator(`${PETSTORE} .scheme-container button.authorize`).click();
      const dialog = other.locator('.dialog-ux .modal-ux');
      await dialog.locator('input').first().fill(restricted.key);
      await dialog.locator('button.authorize').click();
      await dialog.locator('button.btn-done').click();
      await dialog.waitFor({ state: 'detached' });
      const block = operationBlock(other, 'animals', 'createPet');
      await block.locator('.opblock-summary-control').click();
      await block.locator('button.try-out__btn').click();
      await block.locator('textarea.body-param__text').fill(JSON.stringify({ name: 'Not allowed', categoryId: 1 }));
      await block.locator('button.execute').click();
      const response = block.locator('.live-responses-table .response').first();
      await response.waitFor();
      assert.equal((await response.locator('.response-col_status').innerText()).trim(), '403');
      assert.match(await response.locator('.response-col_description').innerText(), /insufficient_scope[^]*pets:write/);
      assert.match(await block.locator('.live-responses-table').innerText(), /error="insufficient_scope", ?scope="pets:write"/, "the challenge (Swagger UI shows it without the space after the comma)");
      await screenshotLiveResponse(block, 'reference-insufficient-scope');
      await other.goto(`${app.url}/docs/keys`);
      assert.equal(await other.locator('main h1').innerText(), 'API keys');
      assert.equal(await other.locator('.portal-nav a[aria-current="page"]').innerText(), 'Keys');
      assert.equal(await other.locator('table.scopes tbody tr').count(), SCOPES.length);
      await screenshot(other, 'keys');
    } finally {
      await other.close();
    }
  });

  test('when every page has been used, then every request went to the service and the console had no errors', () => {
    assert.ok(requests.length > 10, `requests were recorded (${requests.length})`);
    assert.deepEqual(requests.filter((url) => new URL(url).origin !== app.url), []);
    assert.deepEqual(consoleErrors, []);
  });
});
