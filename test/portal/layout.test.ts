// The portal's layout in a real browser (Debian's Chromium) at a laptop's 1 280 px and a phone's
// 390 px: every page of the navigation fits the width (no sideways scroll of the page), code blocks
// wrap and have a Copy button that copies the block, the errors table stays readable, and the
// reference shows one section per resource and the document's webhook event kinds. Screenshots of
// every page at both widths go to .tmp/screenshots/layout-*.png, for people to look at.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { allOperations, type OpenApiDocument } from '../../src/http/portal/document.js';
import { PAGES } from '../../src/http/portal/layout.js';
import { resourceGroups } from '../../src/http/portal/reference-page.js';
import { EVENT_TYPES } from '../../src/schemas/events.js';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { browserSkip, launchChromium, SCREENSHOTS_DIR } from '../helpers/browser.js';

const WIDTHS = [1280, 390] as const;

/** The page's own width against what it lays out: more means a sideways scroll. */
const overflow = (page: Page) => page.evaluate<{ scroll: number; client: number }>('({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })');

describe('developer portal layout in Chromium', { skip: browserSkip }, () => {
  const getApp = sharedApp();
  let app: TestApp;
  let context: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;
  let docs: OpenApiDocument[];

  before(async () => {
    app = await getApp();
    docs = [(await app.request('GET', '/v1/openapi.json')).body, (await app.request('GET', '/example/v1/openapi.json')).body] as OpenApiDocument[];
    const browser = await launchChromium();
    context = browser.context;
    closeBrowser = browser.close;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url });
  });
  after(async () => {
    await closeBrowser?.();
  });

  /** Opens a page at a width; the reference once both APIs have rendered. */
  async function open(href: string, width: number): Promise<Page> {
    const page = await context.newPage();
    // Generous: Swagger UI's bundle parses slowly on a loaded 2-core machine. Not a speed assertion.
    page.setDefaultTimeout(60_000);
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${app.url}${href}`);
    if (href.startsWith('/docs#') || href === '/docs') {
      await page.locator('#petstore-api .opblock').first().waitFor();
      await page.locator('#example-api .opblock').first().waitFor();
    }
    return page;
  }

  for (const width of WIDTHS) {
    test(`when every page is opened ${width} px wide, then none scrolls sideways and every code block wraps inside its column`, async () => {
      for (const { href } of PAGES) {
        const page = await open(href, width);
        try {
          const name = href.replace(/^\/docs\/?/, '') || 'reference';
          await page.screenshot({ path: path.join(SCREENSHOTS_DIR, `layout-${name}-${width}.png`), fullPage: true });
          const { scroll, client } = await overflow(page);
          assert.ok(scroll <= client, `${href} at ${width} px is ${scroll} px wide`);
          // A code block shows its whole text: it wraps (diagrams scroll inside their own block).
          const hidden = await page.evaluate<string[]>(
            "[...document.querySelectorAll('main.guide pre')].filter((pre) => !pre.querySelector('code.language-text') && pre.scrollWidth > pre.clientWidth).map((pre) => pre.textContent.slice(0, 80))",
          );
          assert.deepEqual(hidden, [], `${href} at ${width} px`);
        } finally {
          await page.close();
        }
      }
    });
  }

  test('when a code block\'s Copy button is pressed, then the clipboard holds exactly that block and the button says so', async () => {
    const page = await open('/docs/quickstart', 1280);
    try {
      const blocks = page.locator('main.guide .code-block');
      assert.equal(await blocks.count(), await page.locator('main.guide pre').count(), 'every block has its bar');
      for (const index of [0, 1]) {
        const block = blocks.nth(index);
        await block.locator('button.copy-button').click();
        await block.locator('button.copy-button', { hasText: 'Copied' }).waitFor();
        const copied = await page.evaluate<string>('navigator.clipboard.readText()');
        assert.equal(copied, await block.locator('pre code').evaluate((code) => code.textContent));
        assert.match(copied, index === 0 ? /npx petstore accounts create/ : /curl -s -X POST http:\/\/127\.0\.0\.1:8080\/v1\/pets/);
      }
      assert.equal(await blocks.first().locator('.code-language').innerText(), 'sh');
    } finally {
      await page.close();
    }
  });

  test('when the webhooks guide is read, then no event kind or data field breaks across lines, at 1 280 px and as cards at 390 px', async () => {
    for (const width of WIDTHS) {
      const page = await open('/docs/webhooks', width);
      try {
        // An inline element broken across lines has one client rect per line.
        const broken = await page.evaluate<string[]>(
          "[...document.querySelectorAll('table.event-kinds td:first-child code, table.event-kinds td:last-child code')].filter((c) => c.getClientRects().length > 1).map((c) => c.textContent)",
        );
        assert.deepEqual(broken, [], `at ${width} px`);
        const description = (await page.locator('table.event-kinds tr#pet\\.updated td').nth(1).boundingBox())!;
        assert.ok(description.width >= (width === 390 ? 300 : 350), `what happened is ${description.width} px wide at ${width} px`);
      } finally {
        await page.close();
      }
    }
  });

  test('when the errors page is read, then its explanation column is the widest at 1 280 px and each code is one readable card at 390 px', async () => {
    const wide = await open('/docs/errors', 1280);
    const narrow = await open('/docs/errors', 390);
    try {
      const row = wide.locator('table.error-codes tr#invalid_request td');
      const widths = await Promise.all([0, 1, 2, 3].map(async (i) => (await row.nth(i).boundingBox())!.width));
      assert.ok(widths[2]! >= 350 && widths[2]! === Math.max(...widths), `columns ${widths.join(', ')}`);
      const height = await wide.evaluate<number>('document.documentElement.scrollHeight');
      assert.ok(height < 3500, `the page is ${height} px tall`);
      const card = narrow.locator('table.error-codes tr#invalid_request');
      const explanation = (await card.locator('td').nth(2).boundingBox())!;
      assert.ok(explanation.width >= 300, `the explanation is ${explanation.width} px wide`);
      await card.screenshot({ path: path.join(SCREENSHOTS_DIR, 'layout-errors-card-390.png') });
    } finally {
      await wide.close();
      await narrow.close();
    }
  });

  test('when the reference is opened, then each API shows one section per resource holding its operations, the webhook event kinds after them, and old deep links still open', async () => {
    const page = await open('/docs#/animals/placeOrder', 1280);
    try {
      for (const [i, section] of ['#petstore-api', '#example-api'].entries()) {
        const groups = resourceGroups(docs[i]!);
        const titles = await page.locator(`${section} .portal-resource .portal-resource-title`).allInnerTexts();
        assert.deepEqual(titles.map((t) => t.replace(/Guide$/, '').trim()), groups.map((g) => g.name));
        for (const group of groups) {
          const ops = await page.locator(`${section} #resource-${group.id} .opblock`).count();
          assert.equal(ops, group.operations.length, group.name);
        }
        assert.equal(await page.locator(`${section} .portal-resource .opblock`).count(), allOperations([docs[i]!]).length, 'every operation is in a resource');
      }
      // The deep link of the document's single tag still opens its operation.
      await page.locator('#operations-animals-placeOrder .opblock-body').waitFor();
      assert.match((await page.locator('#operations-animals-placeOrder').getAttribute('class')) ?? '', /\bis-open\b/);
      const kinds = await page.locator('#petstore-api .portal-after-operations #webhook-events article.webhook-event h3 code').allInnerTexts();
      assert.deepEqual(kinds, [...EVENT_TYPES]);
      // listOrders cannot be sent from the page: its note sends the reader to the orders guide.
      const orders = page.locator('#operations-animals-listOrders');
      await orders.locator('.opblock-summary-control').click();
      assert.equal(await orders.locator('.portal-no-try-it-note a').getAttribute('href'), '/docs/orders');
      await page.locator('#resource-orders').screenshot({ path: path.join(SCREENSHOTS_DIR, 'layout-reference-orders.png') });
    } finally {
      await page.close();
    }
    const linked = await open('/docs#webhook-events', 390);
    try {
      // A link to the event kinds lands on them once the page has rendered.
      await linked.waitForFunction('Math.abs(document.getElementById("webhook-events").getBoundingClientRect().top) < 5');
      await linked.screenshot({ path: path.join(SCREENSHOTS_DIR, 'layout-reference-webhook-events-390.png') });
    } finally {
      await linked.close();
    }
  });
});
