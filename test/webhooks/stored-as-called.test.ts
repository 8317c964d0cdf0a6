// Webhook URLs are stored and shown as they are called (issue 30, part 4): the normalized URL
// (scheme and host lower-cased, backslashes as slashes, dot segments resolved), on both stores
// and a real receiver on 127.0.0.1; control characters (which the URL parser would drop or trim
// silently) are refused at registration and on change with 400 invalid_webhook_url.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { startReceiver } from '../helpers/receiver.js';

const env = {
  PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
  PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
  PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0',
};

describe('webhook URLs are stored as called', { concurrency: true }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when a URL is registered in an odd spelling, then the normalized URL is stored, shown and called`, async (t) => {
      const receiver = await startReceiver();
      t.after(() => receiver.close());
      const app = await startApp(t, { backend, env });
      const { key, accountId } = await app.createAccount();
      const typed = `HTTP://127.0.0.1:${receiver.port}\\a\\..\\..\\b`;
      const called = `http://127.0.0.1:${receiver.port}/b`;
      const created = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: typed } });
      assert.equal(created.status, 201, created.text);
      const { id, url } = created.body as { id: string; url: string };
      assert.equal(url, called);
      assert.equal(((await app.request('GET', `/v1/webhook-endpoints/${id}`, { key })).body as { url: string }).url, called);
      assert.equal(((await app.request('GET', '/v1/webhook-endpoints', { key })).body as Array<{ url: string }>)[0]?.url, called);
      assert.equal((await app.store.webhooks.getEndpoint(accountId, id))?.url, called, 'the row holds the normalized URL');

      assert.equal((await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).status, 201);
      const [delivery] = await receiver.waitFor(1);
      assert.equal(delivery?.path, '/b');

      const changed = await app.request('PATCH', `/v1/webhook-endpoints/${id}`, { key, body: { url: `http://127.0.0.1:${receiver.port}/c/./d/../e` } });
      assert.equal(changed.status, 200, changed.text);
      assert.equal((changed.body as { url: string }).url, `http://127.0.0.1:${receiver.port}/c/e`);
      assert.equal((await app.store.webhooks.getEndpoint(accountId, id))?.url, `http://127.0.0.1:${receiver.port}/c/e`);
    });

    it(`${backend.name}: when a URL holds a control character, then registration and change answer 400 invalid_webhook_url and store nothing`, async (t) => {
      const app = await startApp(t, { backend, env: { ...env, PETSTORE_WEBHOOK_WORKER: 'false' } });
      const { key, accountId } = await app.createAccount();
      const refused = [
        'https://example.com/a\r\nX-Injected: 1',
        'https://example.com/a\nb',
        'https://example.com/a\tb',
        'https://exa\tmple.com/',
        '\u0001https://example.com/',
        'https://example.com/\u0000',
        'https://example.com/\u007f',
        'https://example.com/\u0085',
        'https://example.com/\u001b[31m',
      ];
      for (const url of refused) {
        const res = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url } });
        assert.equal(res.status, 400, `${JSON.stringify(url)}: ${res.text}`);
        const body = res.body as { code: string; message: string };
        assert.equal(body.code, 'invalid_webhook_url', JSON.stringify(url));
        assert.match(body.message, /control characters; found U\+00[0-9A-F]{2}/);
      }
      assert.equal((await app.store.webhooks.listEndpoints({ accountId, limit: 10 })).length, 0);

      const created = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'https://example.com/hook' } });
      assert.equal(created.status, 201, created.text);
      const { id } = created.body as { id: string };
      for (const url of refused) {
        const res = await app.request('PATCH', `/v1/webhook-endpoints/${id}`, { key, body: { url } });
        assert.equal(res.status, 400, `${JSON.stringify(url)}: ${res.text}`);
        assert.equal((res.body as { code: string }).code, 'invalid_webhook_url');
      }
      assert.equal((await app.store.webhooks.getEndpoint(accountId, id))?.url, 'https://example.com/hook');
    });
  }
});
