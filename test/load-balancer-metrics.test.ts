// deploy/haproxy.cfg keeps /metrics, /healthz and /readyz from clients in every spelling: real
// HAProxy in front of the real app (in this process, on a loopback listener, so the app itself
// serves /metrics to anyone who reaches it). HAProxy matches the path as sent, undecoded, while
// the service decodes it: without `normalize-uri` before the rule, /%6detrics got metrics
// through. Each spelling is also sent to the app directly, to show it is a spelling the service
// would answer, and the API still passes.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startApp, type TestApp } from './helpers/app.js';
import { haproxySkip, type Haproxy, startHaproxy } from './helpers/haproxy.js';

/** GET `path` exactly as written (fetch would resolve dot segments and merge nothing). */
function get(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const request = http.request({ hostname, port, path, method: 'GET', agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

const METRICS_SPELLINGS = ['/metrics', '/%6detrics', '/%6Detrics', '/metric%73', '//metrics', '/./metrics', '/x/../metrics', '/%2e/metrics', '/metrics/', '/metrics?x=1'];

describe('HAProxy hides the operations endpoints in every spelling (deploy/haproxy.cfg)', { skip: haproxySkip }, () => {
  let lb: Haproxy;
  let app: TestApp;
  const cleanups: Array<() => unknown> = [];
  before(async () => {
    app = await startApp({ after: (fn: () => unknown) => cleanups.push(fn) });
    const address = new URL(app.url).host;
    lb = await startHaproxy([address, address, address]);
    await lb.waitForStatus('a', 'UP', 10_000);
  });
  after(async () => {
    await lb?.stop();
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test('when /metrics is asked for in any spelling, then HAProxy answers 404 and no metric leaves', async () => {
    const served: string[] = [];
    for (const path of METRICS_SPELLINGS) {
      const direct = await get(app.url, path);
      if (direct.body.includes('petstore_http_requests_total')) served.push(path);
      const through = await get(lb.url, path);
      assert.equal(through.status, 404, `${path} through HAProxy: ${through.status} ${through.body.slice(0, 200)}`);
      assert.ok(!through.body.includes('petstore_'), `${path} through HAProxy showed metrics`);
    }
    // The service itself answers these spellings with metrics: the proxy's rule is what hides them.
    for (const path of ['/metrics', '/%6detrics', '/%6Detrics', '/metric%73']) assert.ok(served.includes(path), `the app served ${path}: ${served.join(' ')}`);
  });

  test('when /healthz or /readyz is asked for in another spelling, then HAProxy answers 404', async () => {
    for (const path of ['/healthz', '/%68ealthz', '//readyz', '/./readyz', '/ready%7a']) {
      assert.equal((await get(lb.url, path)).status, 404, path);
    }
  });

  test('when a client calls the API or a normalized spelling of it, then it passes', async () => {
    const { key } = await app.createAccount();
    for (const path of ['/v1/pets', '//v1/pets', '/v1/./pets', '/v1/%70ets']) {
      const answer = await new Promise<number>((resolve, reject) => {
        const { hostname, port } = new URL(lb.url);
        http
          .request({ hostname, port, path, headers: { authorization: `Bearer ${key}` }, agent: false }, (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          })
          .on('error', reject)
          .end();
      });
      assert.equal(answer, 200, path);
    }
  });
});
