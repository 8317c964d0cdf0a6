// One account's dead receivers cannot hold back another account's deliveries (issue 30, part 1):
// an account holds at most PETSTORE_WEBHOOK_ACCOUNT_CONCURRENCY of a process's attempts, and
// claims skip an account at its share. Real receivers on 127.0.0.1: account A's two accept and
// never answer; account B's answers 204. Ordering, not timing: B's delivery must arrive while
// A's first attempts still hang (A's receivers have seen only A's share), where before A held
// every slot until its attempts timed out; manual retries of A's deliveries change nothing. Then
// A's receivers recover and get everything.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';

const env = {
  PETSTORE_RATE_LIMIT_PER_SECOND: '100000',
  PETSTORE_RATE_LIMIT_BURST: '100000',
  PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
  PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
  // Four slots, two per endpoint: A's two endpoints alone could fill them all.
  PETSTORE_WEBHOOK_CONCURRENCY: '4',
  PETSTORE_WEBHOOK_ENDPOINT_CONCURRENCY: '2',
  PETSTORE_WEBHOOK_ACCOUNT_CONCURRENCY: '2',
  // Long enough that B's delivery cannot be explained by A's attempts timing out first.
  PETSTORE_WEBHOOK_TIMEOUT_MS: '8000',
  PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.2,0.2',
};

describe('fair deliveries', { concurrency: true }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when account A's receivers never answer, then account B's delivery still goes at once, and A's arrive once its receivers recover`, async (t) => {
      const receivers: Receiver[] = [];
      t.after(async () => {
        for (const r of receivers) await r.close();
      });
      const receiver = async (answer?: Receiver['answer']) => {
        const r = await startReceiver(answer);
        receivers.push(r);
        return r;
      };
      const app = await startApp(t, { backend, env });
      const a = await app.createAccount('A');
      const b = await app.createAccount('B');
      const silentA = [await receiver(() => 'hang'), await receiver(() => 'hang')];
      const endpointsA: string[] = [];
      for (const r of silentA) {
        const res = await app.request('POST', '/v1/webhook-endpoints', { key: a.key, body: { url: r.url } });
        assert.equal(res.status, 201, res.text);
        endpointsA.push((res.body as { id: string }).id);
      }
      for (let i = 0; i < 6; i++) assert.equal((await app.request('POST', '/v1/pets', { key: a.key, body: { name: `A${i}`, categoryId: 1 } })).status, 201);
      const seenByA = () => silentA.reduce((sum, r) => sum + r.received.length, 0);
      await eventually(async () => (seenByA() >= 2 ? true : undefined), 10_000, "A's share in flight");

      const answeringB = await receiver();
      const created = await app.request('POST', '/v1/webhook-endpoints', { key: b.key, body: { url: answeringB.url } });
      assert.equal(created.status, 201, created.text);
      assert.equal((await app.request('POST', '/v1/pets', { key: b.key, body: { name: 'B0', categoryId: 1 } })).status, 201);
      await answeringB.waitFor(1, 30_000);
      assert.equal(seenByA(), 2, "B's delivery arrived while A held only its share, its first attempts still hanging");

      // Manual retries of every pending delivery of A do not bypass its share either.
      for (const id of endpointsA) {
        const list = (await app.request('GET', `/v1/webhook-endpoints/${id}/deliveries?limit=100`, { key: a.key })).body as Array<{ id: string }>;
        for (const d of list) assert.equal((await app.request('POST', `/v1/webhook-endpoints/${id}/deliveries/${d.id}/retry`, { key: a.key })).status, 202);
      }
      assert.equal((await app.request('POST', '/v1/pets', { key: b.key, body: { name: 'B1', categoryId: 1 } })).status, 201);
      await answeringB.waitFor(2, 30_000);
      assert.equal(seenByA(), 2, "B's second delivery arrived while A, retried by hand, still held only its share");

      // A's receivers recover: every one of A's deliveries arrives (retries of the hung ones included).
      for (const r of silentA) r.answer = () => ({ status: 204 });
      for (const id of endpointsA) {
        await eventually(async () => {
          const res = await app.request('GET', `/v1/webhook-endpoints/${id}/deliveries?limit=100`, { key: a.key });
          const list = res.body as Array<{ status: string }>;
          return list.length === 6 && list.every((d) => d.status === 'succeeded') ? list : undefined;
        }, 60_000, `A's deliveries to ${id}`);
      }
    });
  }
});
