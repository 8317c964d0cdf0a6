import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startApp } from '../helpers/app.js';

test('when keys are created and used, good and bad, then neither the key nor the Authorization header appears in the logs', async (t) => {
  const app = await startApp(t);
  const { key } = await app.createAccount();
  await app.request('GET', '/v1/pets', { key });
  await app.request('POST', '/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } });
  await app.request('GET', '/v1/pets?limit=0', { key });
  await app.request('GET', '/v1/pets', { key: `${key.slice(0, -1)}Z` });
  await app.request('GET', '/v1/pets', { headers: { authorization: `Basic ${key}` } });
  await app.request('GET', `/v1/pets?api_key=${key}`, { key });
  await app.request('GET', `/v1/nope?key=${encodeURIComponent(key)}`);
  const logs = app.logs.join('\n');
  assert.ok(app.logs.length > 5, 'the app logged requests');
  assert.ok(app.logs.every((line) => JSON.parse(line)), 'logs are JSON lines');
  assert.equal(logs.includes(key.slice(9, 30)), false, 'no key material in logs');
  assert.doesNotMatch(logs, /psk_live_[A-Za-z0-9]{10}/);
  assert.doesNotMatch(logs, /"authorization"\s*:/i, "no Authorization header field in logs");
  assert.doesNotMatch(logs, /Basic psk_/);
});

test('when a request is served, then exactly one log line records it, with the request id, status and time', async (t) => {
  const app = await startApp(t);
  await app.request('GET', '/healthz', { headers: { 'x-request-id': 'trace-me-42' } });
  const lines = app.logs.map((line) => JSON.parse(line) as { reqId?: string; res?: { statusCode: number }; responseTime?: number });
  const mine = lines.filter((line) => line.reqId === 'trace-me-42');
  assert.equal(mine.length, 1);
  assert.equal(mine[0]?.res?.statusCode, 200);
  assert.equal(typeof mine[0]?.responseTime, 'number');
  const req = (mine[0] as { req?: { method?: string; url?: string; remoteAddress?: string } }).req;
  assert.deepEqual([req?.method, req?.url, req?.remoteAddress], ['GET', '/healthz', '127.0.0.1']);
});

test('when the level is warn, then a request builds no child logger, and a warning still carries its request id', async () => {
  const { Writable } = await import('node:stream');
  const { createLogger, lazyChildLoggerFactory } = await import('../../src/logger.js');
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8').trim());
      done();
    },
  });
  const parent = createLogger({ level: 'warn' }, sink);
  let children = 0;
  const child = parent.child.bind(parent);
  parent.child = ((...args: Parameters<typeof child>) => {
    children += 1;
    return child(...args);
  }) as typeof parent.child;

  const quiet = lazyChildLoggerFactory(parent, { reqId: 'r-1' }, {});
  quiet.info({ some: 'thing' }, 'request completed');
  quiet.debug('detail');
  assert.equal(children, 0, 'nothing written: no child made');
  assert.equal(quiet.level, 'warn');

  const loud = lazyChildLoggerFactory(parent, { reqId: 'r-2' }, {});
  loud.warn({ code: 'x' }, 'something odd');
  loud.error('worse');
  assert.equal(children, 1, 'one child, made on the first line written and reused');
  await new Promise((resolve) => setImmediate(resolve));
  const written = lines.map((line) => JSON.parse(line) as { reqId: string; msg: string });
  assert.deepEqual(written.map((l) => [l.reqId, l.msg]), [['r-2', 'something odd'], ['r-2', 'worse']]);
});

test('when the request line is written, then its bytes are what pino writes for the same fields through the same logger', async () => {
  const { Writable } = await import('node:stream');
  const { createLogger, createRequestLineWriter } = await import('../../src/logger.js');
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const logger = createLogger({ level: 'info' }, sink);
  const write = createRequestLineWriter(logger);
  // Odd but possible values: a quote and a key-shaped string in the URL, an array header, no port.
  const cases = [
    { reqId: 'r-1', method: 'GET', url: '/v1/pets?limit=20', version: undefined, host: '127.0.0.1:8080', remoteAddress: '127.0.0.1', remotePort: 51234, statusCode: 200, responseTime: 0.12345 },
    { reqId: 'r-"2"', method: 'POST', url: '/v1/pets?x="\u2028"&key=psk_live_ABCdef123', version: ['1', '2'], host: undefined, remoteAddress: undefined, remotePort: undefined, statusCode: 404, responseTime: 12 },
  ];
  for (const r of cases) {
    write(r);
    const req = { method: r.method, url: r.url, version: r.version, host: r.host, remoteAddress: r.remoteAddress, remotePort: r.remotePort };
    logger.info({ reqId: r.reqId, req, res: { statusCode: r.statusCode }, responseTime: r.responseTime }, 'request completed');
  }
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(lines.length, 4);
  const withoutTime = (line: string) => line.replace(/"time":\d+/, '"time":0');
  for (let i = 0; i < lines.length; i += 2) assert.equal(withoutTime(lines[i]!), withoutTime(lines[i + 1]!));
  assert.doesNotMatch(lines.join(''), /ABCdef123/, 'key-shaped text is scrubbed on this path too');
});
