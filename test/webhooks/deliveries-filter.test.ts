// GET /v1/webhook-endpoints/{id}/deliveries?status=… on both stores: the filter answers 200
// with the deliveries in that status only (SQLite once answered 500: its INDEXED BY clause
// followed the join instead of its table, a syntax error). The backlog gauge counts events not
// fanned out yet as it counts deliveries.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

describe('listing deliveries by status', { concurrency: true }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when deliveries are listed with status=pending, succeeded or failed, then each answer holds only the deliveries in that status`, async (t) => {
      // The worker is off: the deliveries stay pending.
      const app = await startApp(t, { backend, env: { PETSTORE_WEBHOOK_WORKER: 'false', PETSTORE_WEBHOOK_ALLOW_HTTP: 'true', PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' } });
      const { key } = await app.createAccount();
      const endpoint = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'http://127.0.0.1:9/hook' } });
      assert.equal(endpoint.status, 201);
      const { id } = endpoint.body as { id: string };
      for (const name of ['Rex', 'Tom']) assert.equal((await app.request('POST', '/v1/pets', { key, body: { name, categoryId: 1 } })).status, 201);
      // The worker being off, the backlog is two events not fanned out yet; the test fans them out itself.
      const before = await app.store.webhooks.stats();
      assert.equal(before.pending, 2, 'events past the cursor count as pending');
      assert.ok(before.oldestCreatedAt && Date.now() - Date.parse(before.oldestCreatedAt) < 60_000, `oldest pending: ${before.oldestCreatedAt}`);
      assert.equal(await app.store.webhooks.fanOut(1000), 2);
      assert.deepEqual(await app.store.webhooks.stats(), before, 'the same backlog, now as deliveries with jobs');
      for (const [status, count] of [['pending', 2], ['succeeded', 0], ['failed', 0]] as const) {
        const res = await app.request('GET', `/v1/webhook-endpoints/${id}/deliveries?status=${status}`, { key });
        assert.equal(res.status, 200, `status=${status}: ${res.text}`);
        const deliveries = res.body as Array<{ status: string; eventType: string }>;
        assert.equal(deliveries.length, count, `status=${status}`);
        assert.ok(deliveries.every((d) => d.status === status && d.eventType === 'pet.created'));
      }
    });
  }
});
