// A failed delivery shows its owner only a category (issue 30, part 2): never an address, host
// or port the service resolved or connected to, so a tenant cannot map our network or scan ports
// through us. The detail goes to the server's log with the endpoint and delivery ids. Real
// receivers on 127.0.0.1 (a 500, one that never answers, a closed port, one that answers garbage
// or oversized headers, plain HTTP behind an https URL), a name resolving to a refused address and
// one that does not resolve; both stores.
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { startApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

type Delivery = { id: string; status: string; lastResponseStatus?: number; lastError?: string };

/** A TCP server on 127.0.0.1 that answers every connection with `bytes` and closes. */
async function rawServer(bytes: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => socket.end(bytes));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('quiet delivery errors', { concurrency: true }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when attempts fail in every way, then each delivery shows only its category and the log has the detail`, async (t) => {
      const failing = await startReceiver(() => ({ status: 500 }));
      const silent = await startReceiver(() => 'hang');
      const plain = await startReceiver();
      const garbage = await rawServer('NOT HTTP AT ALL\r\n\r\n');
      const huge = await rawServer(`HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`);
      const closed = await rawServer('');
      await closed.close();
      t.after(async () => {
        for (const server of [failing, silent, plain, garbage, huge]) await server.close();
      });
      const app = await startApp(t, {
        backend,
        env: {
          PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
          PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
          PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0',
          // Short for the silent receiver, with room for the others' answers under a loaded run (1 s once timed out a 500).
          PETSTORE_WEBHOOK_TIMEOUT_MS: '3000',
        },
        webhookResolver: async (name) => {
          if (name === 'inside.example.test') return [{ address: '127.0.0.2', family: 4 }];
          throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
        },
      });
      const { key } = await app.createAccount();
      const expected: Array<[url: string, category: string, status?: number]> = [
        [failing.url, 'http_status', 500],
        [silent.url, 'timeout'],
        [`http://127.0.0.1:${closed.port}/hook`, 'connection_failed'],
        [`http://127.0.0.1:${garbage.port}/hook`, 'invalid_response'],
        [`http://127.0.0.1:${huge.port}/hook`, 'response_too_large'],
        [`https://127.0.0.1:${plain.port}/hook`, 'tls_error'],
        [`http://inside.example.test:${plain.port}/hook`, 'address_not_allowed'],
        ['https://nowhere.example.test/hook', 'dns_failure'],
      ];
      const endpoints: string[] = [];
      for (const [url] of expected) {
        const res = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url } });
        assert.equal(res.status, 201, res.text);
        endpoints.push((res.body as { id: string }).id);
      }
      assert.equal((await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).status, 201);

      const seen: Delivery[] = [];
      for (const [i, [url, category, status]] of expected.entries()) {
        const [delivery] = await eventually(async () => {
          const res = await app.request('GET', `/v1/webhook-endpoints/${endpoints[i]}/deliveries`, { key });
          const list = res.body as Delivery[];
          return list[0]?.status === 'failed' ? list : undefined;
        });
        assert.equal(delivery?.lastError, category, url);
        assert.equal(delivery?.lastResponseStatus, status, url);
        seen.push(delivery!);
      }
      const shown = JSON.stringify(seen);
      for (const hidden of ['127.0.0', 'inside.example.test', 'nowhere', String(plain.port), String(closed.port), 'ECONN', 'ENOTFOUND']) {
        assert.ok(!shown.includes(hidden), `a delivery listing shows ${hidden}: ${shown}`);
      }

      // The operator's log has what the owner does not see, with the endpoint and delivery ids.
      const lines = app.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => l.msg === 'webhook attempt failed');
      const refused = lines.find((l) => l.endpointId === endpoints[6]);
      assert.equal(refused?.deliveryId, seen[6]!.id);
      assert.equal(refused?.category, 'address_not_allowed');
      assert.match(String(refused?.reason), /127\.0\.0\.2 is a loopback address/);
      assert.match(String(lines.find((l) => l.endpointId === endpoints[2])?.reason), /ECONNREFUSED/);
      assert.match(String(lines.find((l) => l.endpointId === endpoints[7])?.reason), /ENOTFOUND/);
      assert.equal(lines.filter((l) => l.endpointId === endpoints[0]).length, 0, 'a status hides nothing: not logged');
    });
  }
});
