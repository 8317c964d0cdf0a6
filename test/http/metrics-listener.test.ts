// Metrics are never public by accident (issue 30, part 3): when `serve`'s listener is not a
// loopback address and PETSTORE_METRICS_TOKEN is unset, /metrics moves to a listener of its own
// (PETSTORE_METRICS_HOST:PETSTORE_METRICS_PORT, 127.0.0.1:9464 by default) and the public one
// answers 404; with a token it stays public behind the token; on loopback nothing changes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isLoopbackHost, loadConfig } from '../../src/config.js';
import { startApp } from '../helpers/app.js';
import { sqliteBackend } from '../helpers/backends.js';
import { freePort, startServerProcess } from '../helpers/process.js';

describe('where /metrics is served', () => {
  test('when HOST is not loopback and no token is set, then the public /metrics answers 404 not_found and the metrics listener serves them', async (t) => {
    const port = await freePort();
    const app = await startApp(t, { env: { HOST: '0.0.0.0', PETSTORE_METRICS_PORT: String(port) } });
    const { key, accountId } = await app.createAccount();
    const pet = (await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).body as { id: number };
    await app.request('GET', `/v1/pets/${pet.id}`, { key });

    const hidden = await app.request('GET', '/metrics');
    assert.equal(hidden.status, 404, hidden.text);
    assert.equal((hidden.body as { code: string }).code, 'not_found');
    assert.ok(!hidden.text.includes('petstore_'));
    assert.equal((await app.request('GET', '/%6detrics')).status, 404);

    const apart = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(apart.status, 200);
    assert.match(apart.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await apart.text();
    assert.match(text, /petstore_http_requests_total\{method="POST",route="\/v1\/pets",status="201"\} 1/);
    assert.match(text, new RegExp(`petstore_deprecated_calls_total\\{operation="getPet",account_id="${accountId}"\\} 1`));
    assert.equal((await fetch(`http://127.0.0.1:${port}/v1/pets`)).status, 404, 'the metrics listener serves nothing else');
    assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status, 404);
    const started = app.logs.map((line) => JSON.parse(line) as { msg?: string; port?: number }).find((l) => l.msg?.startsWith('metrics listening apart'));
    assert.equal(started?.port, port);
  });

  test('when HOST is not loopback and a token is set, then the public /metrics needs the token and no metrics listener starts', async (t) => {
    const port = await freePort();
    const app = await startApp(t, { env: { HOST: '0.0.0.0', PETSTORE_METRICS_TOKEN: 'scrape-secret', PETSTORE_METRICS_PORT: String(port) } });
    const refused = await app.request('GET', '/metrics');
    assert.equal(refused.status, 401);
    assert.equal((refused.body as { code: string }).code, 'unauthorized');
    assert.equal((await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer scrape-secret' } })).status, 200);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`), 'nothing listens on the metrics port');
  });

  test('when the metrics port is taken, then the app does not start', async (t) => {
    const port = await freePort();
    const first = await startApp(t, { env: { HOST: '0.0.0.0', PETSTORE_METRICS_PORT: String(port) } });
    assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`)).status, 200);
    await assert.rejects(startApp(t, { env: { HOST: '0.0.0.0', PETSTORE_METRICS_PORT: String(port) } }), /EADDRINUSE/);
    assert.equal((await first.request('GET', '/metrics')).status, 404);
  });

  test('when `serve --workers 2` listens on 0.0.0.0 without a token, then its workers share the metrics listener and each scrape answers for the cluster', { timeout: 90_000 }, async (t) => {
    const database = await sqliteBackend.createDatabase();
    const port = await freePort();
    // Ready on the API port: the workers' metrics listener, which listens first, is not what the primary announces.
    const cluster = await startServerProcess({ PETSTORE_DATABASE_URL: database.url, HOST: '0.0.0.0', PETSTORE_METRICS_PORT: String(port) }, ['--workers', '2'], {
      ready: /cluster ready: 2 workers listening at http:\/\/0\.0\.0\.0:(\d+)/,
    });
    t.after(async () => {
      await cluster.stop('SIGTERM');
      await database.drop();
    });
    const url = `http://127.0.0.1:${cluster.url}`;
    assert.notEqual(Number(cluster.url), port);
    for (let i = 0; i < 4; i++) assert.equal((await fetch(`${url}/healthz`)).status, 200);
    const hidden = await fetch(`${url}/metrics`);
    assert.equal(hidden.status, 404);
    assert.equal(((await hidden.json()) as { code: string }).code, 'not_found');
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    // Both workers' counts, whichever answered: the four health checks and the 404.
    assert.match(text, /petstore_http_requests_total\{method="GET",route="\/healthz",status="200"\} 4/);
    assert.match(text, /petstore_http_requests_total\{method="GET",route="unmatched",status="404"\} 1/);
  });

  test('when HOST is loopback, then /metrics stays on it; otherwise the listener defaults to 127.0.0.1:9464', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost']) {
      assert.equal(isLoopbackHost(host), true, host);
      assert.equal(loadConfig({ HOST: host }).metrics.listener, undefined, host);
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'api.internal']) {
      assert.equal(isLoopbackHost(host), false, host);
      assert.deepEqual(loadConfig({ HOST: host }).metrics.listener, { host: '127.0.0.1', port: 9464 }, host);
    }
    assert.deepEqual(loadConfig({ HOST: '0.0.0.0', PETSTORE_METRICS_HOST: '10.0.0.5', PETSTORE_METRICS_PORT: '9100' }).metrics.listener, { host: '10.0.0.5', port: 9100 });
    assert.equal(loadConfig({ HOST: '0.0.0.0', PETSTORE_METRICS_TOKEN: 't' }).metrics.listener, undefined);
  });
});
