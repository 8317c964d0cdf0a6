// Behind real HAProxy (deploy/haproxy.cfg, `option forwardfor`) the failed-authentication limit
// counts each client's own address: the service trusts X-Forwarded-For from the proxy only
// (PETSTORE_TRUSTED_PROXIES=127.0.0.1), so a client cannot escape its bucket by sending its own
// X-Forwarded-For, nor fill another's. Clients connect from other loopback addresses
// (127.0.0.2, 127.0.0.3) than HAProxy does (127.0.0.1).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { haproxySkip } from './helpers/haproxy.js';
import { haproxyInFront, rawGet } from './helpers/haproxy-in-front.js';

const BAD_KEY = 'psk_live_000000000000000000000000000000000000';

/** GET /v1/pets through `base` from `localAddress`, with the given key and extra headers: the status. */
async function get(base: string, localAddress: string, key: string, headers: Record<string, string> = {}): Promise<number> {
  return (await rawGet(base, '/v1/pets', { localAddress, headers: { authorization: `Bearer ${key}`, ...headers } })).status;
}

describe('the failed-authentication limit behind HAProxy (deploy/haproxy.cfg)', { skip: haproxySkip }, () => {
  const front = haproxyInFront({
    env: { PETSTORE_TRUSTED_PROXIES: '127.0.0.1', PETSTORE_AUTH_FAILURE_LIMIT_BURST: '5', PETSTORE_AUTH_FAILURE_LIMIT_PER_SECOND: '0.01' },
  });

  test('when a client hammers bad keys, each with a made-up X-Forwarded-For, then it gets 429 and another client is unaffected', async () => {
    const { app, lb } = front;
    const { key } = await app.createAccount();
    for (let i = 0; i < 5; i++) assert.equal(await get(lb.url, '127.0.0.2', BAD_KEY, { 'x-forwarded-for': `10.0.0.${i}` }), 401);
    assert.equal(await get(lb.url, '127.0.0.2', BAD_KEY, { 'x-forwarded-for': '10.0.0.99' }), 429, 'spoofing does not escape the bucket');
    assert.equal(await get(lb.url, '127.0.0.3', key), 200, "another client's valid key");
    assert.equal(await get(lb.url, '127.0.0.3', key), 200, 'again: the fast path answers it (a cached key and page)');
    assert.equal(await get(lb.url, '127.0.0.3', BAD_KEY, { 'x-forwarded-for': '127.0.0.2' }), 401, "a client cannot fill another's bucket");
    assert.equal(await get(lb.url, '127.0.0.2', key), 200, 'a key that authenticated lately is never slowed');
    const lines = app.logs.map((l) => JSON.parse(l) as { req?: { url?: string; remoteAddress?: string }; res?: { statusCode?: number } });
    assert.equal(lines.find((l) => l.res?.statusCode === 429)?.req?.remoteAddress, '127.0.0.2', 'the log names the client, not the proxy');
    const answered = lines.filter((l) => l.req?.url === '/v1/pets' && l.res?.statusCode === 200).map((l) => l.req?.remoteAddress);
    assert.deepEqual([...new Set(answered)].sort(), ['127.0.0.2', '127.0.0.3'], "every line, the fast path's too, names the client");
    assert.ok(Number(/petstore_fast_path_responses_total (\d+)/.exec(await (await fetch(`${app.url}/metrics`)).text())?.[1]) > 0, 'the fast path answered some');
  });
});
