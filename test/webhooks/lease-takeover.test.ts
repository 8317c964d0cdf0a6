// A delivery that waited in one worker's memory past its lease is not sent by it once another
// worker took it over (issue 30, part 1: "a live worker's delivery must never be taken over").
// Two apps on one database (a third, without a worker, writes the events) share a clock the test moves. Instance 1 claims five deliveries of an
// endpoint with one slot: the first hangs at the receiver, four wait in memory. The clock passes
// their lease (the hanging attempt's own lease is kept, as its timeout would in real time), so
// instance 2 claims and delivers those four. When the first attempt ends, instance 1 must renew
// before sending each waiting one, find the lease gone, and drop it: each event arrives once.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { startApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { eventually } from '../helpers/receiver.js';

const TIMEOUT_MS = 30_000;
const LEASE_MS = 2 * TIMEOUT_MS + 10_000;

describe('a lease taken over', { concurrency: true }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when deliveries waited in one worker past their lease and another delivered them, then the first worker does not send them again`, async (t) => {
      // The receiver: the first request hangs until the test answers it; the others get 204.
      const received: number[] = [];
      let hanging: http.ServerResponse | undefined;
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          received.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { sequence: number }).sequence);
          if (received.length === 1) hanging = res;
          else res.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      t.after(() => new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }));
      let offset = 0;
      const clock = { now: () => Date.now() + offset };
      const env = {
        PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
        PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
        PETSTORE_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        PETSTORE_WEBHOOK_ENDPOINT_CONCURRENCY: '1',
        PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0,1',
      };
      // The five events are written first (no worker), so instance 1's first claim takes them all.
      const writer = await startApp(t, { backend, env: { ...env, PETSTORE_WEBHOOK_WORKER: 'false' } });
      const { key } = await writer.createAccount();
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const created = await writer.request('POST', '/v1/webhook-endpoints', { key, body: { url } });
      assert.equal(created.status, 201, created.text);
      const endpointId = (created.body as { id: string }).id;
      for (let i = 0; i < 5; i++) assert.equal((await writer.request('POST', '/v1/pets', { key, body: { name: `P${i}`, categoryId: 1 } })).status, 201);
      const first = await startApp(t, { backend, env, clock, databaseUrl: writer.config.database.url });
      await eventually(async () => (received.length === 1 ? true : undefined), 10_000, 'the first attempt');
      assert.deepEqual(received, [1]);

      // Past the four waiting leases; the attempt in flight keeps its own.
      offset = LEASE_MS + 1000;
      const p = backend.name === 'sqlite' ? ['?', '?'] : ['$1', '$2'];
      assert.equal(await first.store.db.run(`UPDATE jobs SET leased_until = leased_until + 600000 WHERE grp = ${p[0]} AND ref = ${p[1]}`, [endpointId, 1]), 1);
      const second = await startApp(t, { backend, env, clock, databaseUrl: writer.config.database.url });
      await eventually(async () => (received.length === 5 ? true : undefined), 20_000, 'the second instance delivering the four');
      assert.deepEqual([...received].sort(), [1, 2, 3, 4, 5]);

      // The first attempt ends: the first instance turns to its waiting deliveries.
      hanging!.writeHead(204).end();
      const lost = () => first.logs.filter((line) => line.includes('lost its lease')).length;
      await eventually(async () => (lost() === 4 || received.length > 5 ? true : undefined), 20_000, 'the first instance done with its waiting deliveries');
      assert.deepEqual([...received].sort(), [1, 2, 3, 4, 5], 'no event sent twice');
      assert.equal(lost(), 4);
      await eventually(async () => {
        const res = await second.request('GET', `/v1/webhook-endpoints/${endpointId}/deliveries`, { key });
        const list = res.body as Array<{ status: string; attempts: number }>;
        return list.length === 5 && list.every((d) => d.status === 'succeeded') ? list : undefined;
      }, 20_000, 'every delivery succeeded');
    });
  }
});
