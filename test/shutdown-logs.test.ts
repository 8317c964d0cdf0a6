// A real server process at log level info, SIGTERM'd right after a burst of requests: its
// stdout holds every request's line and the shutdown lines, last of all "shut down cleanly".
// The log destination is asynchronous (src/logger.ts), so lines queued at the signal must be
// flushed before the process exits.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { sqliteBackend, type BackendDatabase } from './helpers/backends.js';
import { type ServerProcess, startServerProcess } from './helpers/process.js';

let database: BackendDatabase | undefined;
let server: ServerProcess | undefined;
after(async () => {
  await server?.stop('SIGKILL');
  await database?.drop();
});

test("when a server at info is SIGTERM'd right after a burst of requests, then every request's line and the last shutdown line are in its stdout", async () => {
  database = await sqliteBackend.createDatabase();
  server = await startServerProcess({ PETSTORE_DATABASE_URL: database.url, PETSTORE_LOG_LEVEL: 'info' });
  const ids = Array.from({ length: 2000 }, (_, i) => `burst-${i}`);
  // 50 at a time, like a busy server's last moments.
  for (let i = 0; i < ids.length; i += 50) {
    await Promise.all(
      ids.slice(i, i + 50).map(async (id) => {
        const res = await fetch(`${server!.url}/healthz`, { headers: { 'x-request-id': id } });
        assert.equal(res.status, 200);
        await res.arrayBuffer();
      }),
    );
  }
  // At once: the lines of the last requests are still queued in the process.
  const code = await server.stop('SIGTERM');
  assert.equal(code, 0);
  const lines = server.output().split('\n').filter((line) => line !== '');
  const parsed = lines.map((line) => JSON.parse(line) as { reqId?: string; msg?: string });
  const logged = new Set(parsed.filter((l) => l.msg === 'request completed').map((l) => l.reqId));
  const missing = ids.filter((id) => !logged.has(id));
  assert.deepEqual(missing, [], `${missing.length} request line(s) missing`);
  assert.equal(parsed.at(-1)?.msg, 'shut down cleanly', `the last line: ${lines.at(-1)}`);
  assert.ok(parsed.some((l) => l.msg === 'shutting down: finishing requests in flight'));
});
