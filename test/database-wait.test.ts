// `serve`, `worker` and `migrate` wait at start for a PostgreSQL that takes no connection yet
// (PETSTORE_DATABASE_WAIT_MS, src/store/wait.ts): the real CLI against a port where nothing
// listens until the test starts a TCP proxy to the real server there. The URL carries a
// password (trust auth ignores it) that no line of output may repeat.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { cli, freePort, httpRequest, type LogLine, startServerProcess } from './helpers/process.js';
import { postgresAdminUrl, postgresBackend } from './helpers/backends.js';

const pgOnly = { skip: postgresAdminUrl ? false : 'set PETSTORE_TEST_POSTGRES_URL to run it' };
const PASSWORD = 'pw-never-printed-7c1e';

/** The database's URL moved to `port` (nothing listens there yet), with PASSWORD. */
function urlOnPort(databaseUrl: string, port: number): string {
  const url = new URL(databaseUrl);
  url.port = String(port);
  url.password = PASSWORD;
  return url.toString();
}

/** Forwards 127.0.0.1:port to the test's PostgreSQL: the database "comes up" there. */
async function proxyToPostgres(port: number): Promise<net.Server> {
  const target = new URL(postgresAdminUrl!);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  server.on('close', () => sockets.forEach((socket) => socket.destroy()));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

const isRetry = (line: LogLine) => typeof line.msg === 'string' && line.msg.includes('takes no connection yet');

test('when PostgreSQL comes up after serve started then serve retries, logging each retry without the password, and serves once it is reachable', pgOnly, async (t) => {
  const database = await postgresBackend.createDatabase();
  const port = await freePort();
  let proxy: Promise<net.Server> | undefined;
  t.after(async () => {
    (await proxy)?.close();
    await database.drop();
  });
  const server = await startServerProcess(
    { PETSTORE_DATABASE_URL: urlOnPort(database.url, port), PETSTORE_DATABASE_WAIT_MS: '30000' },
    [],
    {
      timeoutMs: 30_000,
      // After two refused attempts: the database appears only once serve has had to wait for it.
      onLogLine: (line) => {
        if (isRetry(line) && line.attempt === 2) proxy ??= proxyToPostgres(port);
      },
    },
  );
  t.after(() => server.stop('SIGKILL'));
  const retries = server.logs().filter(isRetry);
  assert.ok(retries.length >= 2, server.output());
  assert.equal(retries[0]!.level, 40, 'a retry is a warning');
  assert.match(String(retries[0]!.msg), new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${port}/\\w+ takes no connection yet \\(.*ECONNREFUSED.*\\); retrying in 250 ms`));
  assert.ok(server.logs().some((line) => /reachable after \d+ ms/.test(String(line.msg))), server.output());
  assert.ok(!server.output().includes(PASSWORD) && !server.errors().includes(PASSWORD), 'the password was printed');

  const ready = await httpRequest(server.url, 'GET', '/readyz');
  assert.equal(ready.status, 200, JSON.stringify(ready.body));
  assert.equal(await server.stop(), 0);
});

test('when PostgreSQL never comes up within PETSTORE_DATABASE_WAIT_MS then serve and migrate exit 1 saying so, after retrying for that long', pgOnly, async () => {
  const port = await freePort();
  const env = { PETSTORE_DATABASE_URL: urlOnPort(`${postgresAdminUrl}`, port), PETSTORE_DATABASE_WAIT_MS: '1500', PETSTORE_LOG_LEVEL: 'warn', PORT: '0' };
  for (const command of ['serve', 'migrate']) {
    const started = Date.now();
    const result = await cli([command], env, { timeoutMs: 20_000 });
    const elapsed = Date.now() - started;
    const output = result.stdout + result.stderr;
    assert.equal(result.code, 1, `${command}: ${output}`);
    const failure = new RegExp(`^petstore: PostgreSQL at 127\\.0\\.0\\.1:${port}/postgres took no connection within 1500 ms \\(PETSTORE_DATABASE_WAIT_MS; (\\d+) attempts?\\): .*ECONNREFUSED`, 'm').exec(result.stderr);
    assert.ok(failure, `${command}: ${output}`);
    // Every attempt but the last announced its retry (250, 500, then the rest of the wait: about 4 attempts).
    const retries = output.match(/takes no connection yet .*; retrying in \d+ ms/g) ?? [];
    assert.ok(retries.length >= 2, `${command}: ${output}`);
    assert.equal(retries.length, Number(failure[1]) - 1, `${command}: ${output}`);
    assert.ok(elapsed >= 1500, `${command} gave up after ${elapsed} ms`);
    assert.ok(!output.includes(PASSWORD), `${command} printed the password`);
  }
});

test('when the database answers but refuses the login (no such database) then serve exits 1 at once, without waiting', pgOnly, async () => {
  const url = new URL(postgresAdminUrl!);
  url.pathname = '/petstore_no_such_database';
  const started = Date.now();
  const result = await cli(['serve'], { PETSTORE_DATABASE_URL: url.toString(), PETSTORE_DATABASE_WAIT_MS: '30000', PETSTORE_LOG_LEVEL: 'warn', PORT: '0' }, { timeoutMs: 20_000 });
  assert.equal(result.code, 1, result.stdout + result.stderr);
  assert.match(result.stderr, /database "petstore_no_such_database" does not exist/);
  assert.doesNotMatch(result.stdout + result.stderr, /takes no connection yet/);
  assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
});
