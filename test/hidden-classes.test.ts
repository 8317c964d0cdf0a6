// Hot objects keep one hidden class. On Node 20, V8 gives an object built as `{ ...x, extra }` a
// hidden class of its own, and every property access that meets such objects goes megamorphic
// for every request (docs/performance.md, "Tracing on, sixteenth round"). The server runs with
// V8's IC log; after hot requests on one kept-alive connection, no property access may have met a
// new hidden class for most of them.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type OtlpReceiver, startOtlpReceiver } from './helpers/otlp-receiver.js';
import { createAccountWithKey, type ServerProcess, startServerProcess } from './helpers/process.js';
import { sqliteBackend } from './helpers/backends.js';

const REQUESTS = 200;

/** The hidden classes each site met after `since` (µs since the process started); a site: kind, line:column and property. */
function sitesAfter(log: string, since: number): Map<string, Set<string>> {
  const sites = new Map<string, Set<string>>();
  for (const line of log.split('\n')) {
    // LoadIC,<pc>,<time>,<line>,<column>,<old state>,<new state>,<map>,<key>,…
    if (!/^[A-Za-z]*IC,/.test(line)) continue;
    const f = line.split(',');
    if (Number(f[2]) < since) continue;
    const key = `${f[0]} ${f[3]}:${f[4]} ${f[8]}`;
    const maps = sites.get(key) ?? new Set<string>();
    maps.add(f[7]!);
    sites.set(key, maps);
  }
  return sites;
}

/** The log's time of the first IC event on the request path (its authorization header read). */
const firstRequestAt = (log: string): number => Number(/^\w*IC,[^,]*,(\d+),[^\n]*,authorization,/m.exec(log)?.[1] ?? 0);

describe('hot objects keep one hidden class (V8 IC log, tracing on at 100 %)', () => {
  let serve: ServerProcess;
  let otlp: OtlpReceiver;
  let drop: () => Promise<void>;
  const logFile = path.join(os.tmpdir(), `petstore-ic-${process.pid}.log`);
  let key: string;

  before(async () => {
    const database = await sqliteBackend.createDatabase();
    drop = database.drop;
    otlp = await startOtlpReceiver();
    const env = { PETSTORE_DATABASE_URL: database.url, PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' };
    serve = await startServerProcess(
      { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '200' },
      [],
      { nodeArgs: ['--log-ic', `--logfile=${logFile}`, '--no-logfile-per-isolate'] },
    );
    key = (await createAccountWithKey(env)).key;
  });
  after(async () => {
    await serve?.stop('SIGKILL');
    await otlp?.close();
    await drop?.();
    rmSync(logFile, { force: true });
  });

  test('when pets are created and the inventory read one at a time, then no property access meets a new hidden class per request', async () => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    // fetch keeps its connection: one socket, so Node's per-connection objects are not counted.
    for (let i = 0; i < REQUESTS; i++) {
      const created = await fetch(`${serve.url}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `Rex ${i}`, categoryId: 1 }) });
      assert.equal(created.status, 201);
      await created.arrayBuffer();
      const inventory = await fetch(`${serve.url}/v1/store/inventory`, { headers });
      assert.equal(inventory.status, 200);
      await inventory.arrayBuffer();
    }
    await serve.stop('SIGTERM'); // the log is complete once the process has exited
    const log = readFileSync(logFile, 'latin1');
    const since = firstRequestAt(log);
    assert.ok(since > 0, 'the IC log names the requests\' authorization header (is --log-ic still a V8 flag?)');
    const perRequest = [...sitesAfter(log, since)].filter(([, maps]) => maps.size >= REQUESTS / 2);
    assert.deepEqual(
      perRequest.map(([name, maps]) => `${name}: ${maps.size} hidden classes`),
      [],
      'property accesses that met a new hidden class for most requests (an object built as { ...x, extra } on the path?)',
    );
  });
});
