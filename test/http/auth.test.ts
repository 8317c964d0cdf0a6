import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { generateKey } from '../../src/services/api-keys.js';
import { sharedApp, startApp, type TestApp } from '../helpers/app.js';

type ErrorBody = { code: string; message: string; status: number };

const operations: Array<[string, string]> = [
  ['GET', '/v1/pets'],
  ['POST', '/v1/pets'],
  ['GET', '/v1/pets/1'],
];

describe('authentication', () => {
  const getApp = sharedApp();
  let app: TestApp;
  let account: { accountId: string; key: string; keyId: string };
  before(async () => {
    app = await getApp();
    account = await app.createAccount();
  });

  for (const [method, path] of operations) {
    test(`when ${method} ${path} has no Authorization header, then 401 unauthorized with a bare Bearer challenge`, async () => {
      const res = await app.request(method, path, method === 'POST' ? { body: { name: 'Rex', categoryId: 1 } } : {});
      assert.equal(res.status, 401);
      assert.equal((res.body as ErrorBody).code, 'unauthorized');
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="petstore"');
    });
  }

  // The last character is the checksum's: replace it with one it is not.
  const issued = generateKey('production');
  const wrongChecksum = `${issued.slice(0, -1)}${issued.endsWith('X') ? 'Y' : 'X'}`;
  const presented: Array<[string, string, RegExp]> = [
    ['a malformed key', 'Bearer not-a-key', /malformed/],
    ['a key with a wrong checksum', `Bearer ${wrongChecksum}`, /malformed/],
    ['a well-formed key that was never issued', `Bearer ${generateKey('production')}`, /not recognised/],
    ['a staging key on the production API', `Bearer ${generateKey('staging')}`, /staging key but this is the production API/],
  ];
  for (const [label, header, message] of presented) {
    test(`when the request carries ${label}, then 401 unauthorized with error="invalid_token"`, async () => {
      const res = await app.request('GET', '/v1/pets', { headers: { authorization: header } });
      assert.equal(res.status, 401);
      const body = res.body as ErrorBody;
      assert.equal(body.code, 'unauthorized');
      assert.match(body.message, message);
      assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="petstore", error="invalid_token", error_description="[\x20-\x7e]+"$/);
    });
  }

  for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer ', 'Token abc', `${'x'.repeat(20)}`]) {
    test(`when the Authorization header is "${header}", then 401 unauthorized without error code`, async () => {
      const res = await app.request('GET', '/v1/pets', { headers: { authorization: header } });
      assert.equal(res.status, 401);
      assert.equal((res.body as ErrorBody).code, 'unauthorized');
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="petstore"');
    });
  }

  test('when the scheme is written bearer or BEARER, then the key is accepted', async () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const res = await app.request('GET', '/v1/pets', { headers: { authorization: `${scheme} ${account.key}` } });
      assert.equal(res.status, 200, scheme);
    }
  });

  test('when the key is revoked, then the next request is refused with 401', async () => {
    const other = await app.createAccount('Revoked');
    assert.equal((await app.request('GET', '/v1/pets', { key: other.key })).status, 200);
    await app.services.apiKeys.revoke(other.keyId);
    const res = await app.request('GET', '/v1/pets', { key: other.key });
    assert.equal(res.status, 401);
    assert.match((res.body as ErrorBody).message, /revoked/);
  });

  test('when an unauthenticated request has an invalid body, then 401 comes before validation', async () => {
    const res = await app.request('POST', '/v1/pets', { rawBody: '{oops', headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 401);
    const huge = await app.request('POST', '/v1/pets', { body: { name: 'x'.repeat(100_000), categoryId: 1 } });
    assert.equal(huge.status, 401);
    const badQuery = await app.request('GET', '/v1/pets?limit=0');
    assert.equal(badQuery.status, 401);
  });

  test('when a request is authenticated, then the response carries Cache-Control: no-store and nosniff', async () => {
    const res = await app.request('GET', '/v1/pets', { key: account.key });
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  });
});

describe('environments', () => {
  test('when a production key is used on a staging server, then 401 and the staging key works', async (t) => {
    const app = await startApp(t, { env: { PETSTORE_ENV: 'staging' } });
    const account = await app.services.accounts.create('Both');
    const live = await app.services.apiKeys.create(account.id, 'production');
    const test_ = await app.services.apiKeys.create(account.id, 'staging');
    assert.match(test_.key, /^psk_test_/);
    assert.match(live.key, /^psk_live_/);
    const refused = await app.request('GET', '/v1/pets', { key: live.key });
    assert.equal(refused.status, 401);
    assert.match((refused.body as ErrorBody).message, /production key but this is the staging API/);
    assert.equal((await app.request('GET', '/v1/pets', { key: test_.key })).status, 200);
  });
});

describe('verified-key cache', () => {
  test('when another process revokes a key in the same SQLite file, then the next request is refused', async (t) => {
    const app = await startApp(t);
    const account = await app.createAccount();
    assert.equal((await app.request('GET', '/v1/pets', { key: account.key })).status, 200, 'key is now cached');
    // A second connection to the same file stands in for the CLI process.
    const { createStore } = await import('../../src/store/index.js');
    const other = await createStore(app.config);
    t.after(() => other.close());
    await other.apiKeys.revoke(account.keyId, new Date().toISOString());
    assert.equal((await app.request('GET', '/v1/pets', { key: account.key })).status, 401);
  });
});
