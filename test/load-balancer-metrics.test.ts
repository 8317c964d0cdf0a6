// deploy/haproxy.cfg keeps /metrics, /healthz and /readyz from clients in every spelling: real
// HAProxy in front of the real app (in this process, on a loopback listener, so the app itself
// serves /metrics to anyone who reaches it). HAProxy matches the path as sent, undecoded, while
// the service decodes it: without `normalize-uri` before the rule, /%6detrics got metrics
// through. Each spelling is also sent to the app directly, to show it is a spelling the service
// would answer, and the API still passes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { haproxySkip } from './helpers/haproxy.js';
import { haproxyInFront, rawGet as get } from './helpers/haproxy-in-front.js';

const METRICS_SPELLINGS = ['/metrics', '/%6detrics', '/%6Detrics', '/metric%73', '//metrics', '/./metrics', '/x/../metrics', '/%2e/metrics', '/metrics/', '/metrics?x=1'];

describe('HAProxy hides the operations endpoints in every spelling (deploy/haproxy.cfg)', { skip: haproxySkip }, () => {
  const front = haproxyInFront();

  test('when /metrics is asked for in any spelling, then HAProxy answers 404 and no metric leaves', async () => {
    const { app, lb } = front;
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
      assert.equal((await get(front.lb.url, path)).status, 404, path);
    }
  });

  test('when a client calls the API or a normalized spelling of it, then it passes', async () => {
    const { key } = await front.app.createAccount();
    for (const path of ['/v1/pets', '//v1/pets', '/v1/./pets', '/v1/%70ets']) {
      assert.equal((await get(front.lb.url, path, { headers: { authorization: `Bearer ${key}` } })).status, 200, path);
    }
  });
});
