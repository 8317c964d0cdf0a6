// A real server process at log level info, SIGTERM'd right after a burst of requests: its
// stdout holds every request's line and the shutdown lines, last of all "shut down cleanly".
// The log destination is asynchronous (src/logger.ts), so lines queued at the signal must be
// flushed before the process exits.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
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

/** Runs `body` (a module's text, with createLogger and createLogDestination imported) in a child process; its stdout. */
async function runLoggerScript(body: string): Promise<{ code: number | null; stdout: string }> {
  const { spawn } = await import('node:child_process');
  const script = `import { createLogger, createLogDestination } from ${JSON.stringify(pathToFileURL(path.resolve('src/logger.ts')).href)};\n${body}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout };
}

test('when process.exit() is called in the same turn as a burst of lines, then every line is written (the turn\'s batch is flushed on exit)', async () => {
  const { code, stdout } = await runLoggerScript(`
    const logger = createLogger({ level: 'info' }, createLogDestination(1));
    for (let i = 0; i < 5000; i++) logger.info({ n: i }, 'burst');
    process.exit(3);
  `);
  assert.equal(code, 3);
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as { n: number });
  assert.deepEqual(lines.map((l) => l.n), Array.from({ length: 5000 }, (_, i) => i));
});

test('when one line is logged on an idle process, then it is written within a turn, not held back for more', async () => {
  const { code, stdout } = await runLoggerScript(`
    const logger = createLogger({ level: 'info' }, createLogDestination(1));
    logger.info('alone');
    // Keep the process alive, idle, until the line has left: it must not wait for company.
    const started = Date.now();
    const timer = setInterval(() => {
      if (Date.now() - started > 5000) process.exit(1);
    }, 10);
    process.stdout.on('error', () => {});
    setTimeout(() => { clearInterval(timer); process.kill(process.pid, 'SIGKILL'); }, 300);
  `);
  assert.equal(code, null, 'killed (no exit hook ran)');
  assert.match(stdout, /"msg":"alone"/);
});
