// /docs/keys: served with the one navigation; its scopes table lists every scope with the
// operations the served document says need it; its checksum snippet, run as written, accepts the
// keys the server makes and refuses a changed one; its create and roll blocks work as pasted
// (in bash, with curl and node, against the real app).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { before, describe, test } from 'node:test';
import { runInNewContext } from 'node:vm';
import { createRequire } from 'node:module';
import { SCOPES } from '../../src/schemas/api-keys.js';
import { generateKey } from '../../src/services/api-keys.js';
import { codeBlocks } from '../../src/http/portal/markdown.js';
import { PAGES_DIR } from '../../src/http/portal/plugin.js';
import { sharedApp, type TestApp } from '../helpers/app.js';

const run = promisify(execFile);
const source = readFileSync(path.join(PAGES_DIR, 'keys.md'), 'utf8');
const blocks = codeBlocks(source);
const DOCUMENTED_URL = 'http://127.0.0.1:8080';

describe('/docs/keys', () => {
  const getApp = sharedApp({ env: { PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' } });
  let app: TestApp;
  before(async () => {
    app = await getApp();
  });

  test('when the page is read, then it is in the navigation and its scopes table names every scope with the operations that need it', async () => {
    const res = await fetch(`${app.url}/docs/keys`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /href="\/docs\/keys" aria-current="page"/);
    const doc = (await (await fetch(`${app.url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, { operationId: string; 'x-required-scope': string }>> };
    for (const scope of SCOPES) {
      const row = new RegExp(`<tr id="${scope.replace(':', '-')}">([^]*?)</tr>`).exec(html)?.[1];
      assert.ok(row, `a row for ${scope}`);
      for (const methods of Object.values(doc.paths)) {
        for (const op of Object.values(methods)) {
          if (op['x-required-scope'] === scope) assert.match(row, new RegExp(`<code>${op.operationId}</code>`), `${scope} lists ${op.operationId}`);
        }
      }
    }
    assert.match(html, /<a href="\/docs#\/messages\/sendMessage"><code>sendMessage<\/code><\/a>/, 'the example API\'s operations too');
  });

  test('when the checksum snippet runs as written, then it accepts keys the server makes and refuses a changed or malformed one', () => {
    const snippet = blocks.find((block) => block.includes('function isPetstoreKey'));
    assert.ok(snippet);
    const context: { require: NodeRequire; isPetstoreKey?: (key: string) => boolean } = { require: createRequire(import.meta.url) };
    runInNewContext(`${snippet}\nthis.isPetstoreKey = isPetstoreKey;`, context);
    const check = context.isPetstoreKey!;
    for (let i = 0; i < 50; i++) {
      const key = generateKey(i % 2 ? 'production' : 'staging');
      assert.equal(check(key), true, key);
      const changed = key.slice(0, 12) + (key[12] === 'a' ? 'b' : 'a') + key.slice(13);
      assert.equal(check(changed), false, changed);
    }
    assert.equal(check('psk_live_short'), false);
    assert.match(generateKey('production'), new RegExp(blocks.find((block) => block.startsWith('\\bpsk_'))!.trim().replace(/\\b/g, '')));
  });

  test('when the create and roll blocks run as pasted, then a restricted key is made, rolled, and both keys work during the overlap', async () => {
    const { key } = await app.createAccount('Docs');
    const shell = blocks.filter((block) => block.includes('curl'));
    assert.equal(shell.length, 2, 'the create block and the roll block');
    const env = { ...process.env, KEY: key };
    const created = JSON.parse((await run('bash', ['-euo', 'pipefail', '-c', shell[0]!.replaceAll(DOCUMENTED_URL, app.url)], { env })).stdout) as { key: string; scopes: string[]; name: string; expiresAt: string };
    assert.deepEqual(created.scopes, ['pets:read', 'orders:read']);
    assert.equal(created.name, 'reports');
    assert.ok(Math.abs(Date.parse(created.expiresAt) - (Date.now() + 30 * 86_400_000)) < 120_000, created.expiresAt);
    const rolled = await run('bash', ['-euo', 'pipefail', '-c', `${shell[1]!.replaceAll(DOCUMENTED_URL, app.url)}\necho "$NEW_KEY"`], { env });
    const [status, newKey] = rolled.stdout.trim().split('\n');
    assert.equal(status, '200');
    assert.match(newKey!, /^psk_live_/);
    assert.equal((await app.request('GET', '/v1/pets', { key: created.key })).status, 200, 'the old key works during the overlap');
    assert.equal((await app.request('GET', '/v1/store/orders', { key: newKey })).status, 200, 'the new key has the same scopes');
    assert.equal((await app.request('POST', '/v1/pets', { key: newKey, body: { name: 'x', categoryId: 1 } })).status, 403);
  });
});
