// PETSTORE_SHUTDOWN_DELAY_MS: on SIGTERM the instance first drains (/readyz answers 503 so the
// load balancer takes it out, everything else is still served), then shuts down as usual.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { sqliteBackend } from './helpers/backends.js';
import { createAccountWithKey, startServerProcess } from './helpers/process.js';

test('when an instance with PETSTORE_SHUTDOWN_DELAY_MS gets SIGTERM, then /readyz answers 503 at once while requests are still served, and it exits 0 after the delay', async (t) => {
  const database = await sqliteBackend.createDatabase();
  t.after(() => database.drop());
  const env = { PETSTORE_DATABASE_URL: database.url, PETSTORE_SHUTDOWN_DELAY_MS: '1500', PETSTORE_MESSAGE_WORKER: 'false' };
  const server = await startServerProcess(env);
  t.after(() => server.stop('SIGKILL'));
  const { key } = await createAccountWithKey(env);
  assert.equal((await fetch(`${server.url}/readyz`)).status, 200);

  const signalledAt = Date.now();
  const exited = once(server.child, 'exit');
  server.child.kill('SIGTERM');
  await server.waitForLog((line) => line.msg === 'shutting down: draining (/readyz answers 503) before closing');
  const ready = await fetch(`${server.url}/readyz`);
  assert.equal(ready.status, 503);
  assert.equal(((await ready.json()) as { code: string }).code, 'service_unavailable');
  const created = await fetch(`${server.url}/v1/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'During the drain', categoryId: 1 }),
  });
  assert.equal(created.status, 201, 'still served while draining');
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  const [code] = (await exited) as [number];
  assert.equal(code, 0);
  assert.ok(Date.now() - signalledAt >= 1500, 'closed only after the delay');
});
