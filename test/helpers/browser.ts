// Debian's Chromium driven by playwright-core; a browser is never downloaded. Without one the
// browser suites are skipped and say so, unless PETSTORE_TEST_REQUIRE_BROWSER=1 (set in CI).
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** A reason to skip the browser suites, or false when Chromium is there. */
export const browserSkip: string | false = existsSync(CHROMIUM_PATH)
  ? false
  : `no Chromium at ${CHROMIUM_PATH} (install Debian's package: apt-get install -y chromium)`;

if (browserSkip && process.env.PETSTORE_TEST_REQUIRE_BROWSER) {
  // CI sets this: skipping there would hide a broken portal.
  throw new Error(`PETSTORE_TEST_REQUIRE_BROWSER is set but there is ${browserSkip}.`);
}
if (browserSkip) process.stderr.write(`Browser tests skipped: ${browserSkip}.\n`);

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Screenshots of the pages, for people to look at (git-ignored). */
export const SCREENSHOTS_DIR = path.resolve('.tmp', 'screenshots');

/** One Chromium with a fresh profile; close() ends it and removes the profile. */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'petstore-chromium-'));
  mkdirSync(SCREENSHOTS_DIR, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 900 },
  });
  context.setDefaultTimeout(15_000);
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
