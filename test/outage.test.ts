// A real PostgreSQL outage under a running `petstore serve`: the test makes a throwaway
// cluster (initdb + pg_ctl on a spare port, in a temp dir), stops it and starts it again.
// While it is down the API answers 503 and stays up; when it is back, requests succeed again
// without a restart. Skipped, and says so, when the PostgreSQL server binaries are not found.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createThrowawayPostgres, PG_BIN, pgSkip as skip, type ThrowawayPostgres } from './helpers/postgres-cluster.js';
import { createAccountWithKey, httpRequest, type ServerProcess, startServerProcess } from './helpers/process.js';

if (skip) process.stderr.write(`Outage tests skipped: ${skip}.\n`);

describe('a PostgreSQL outage under a running server (one process, and --workers 2)', { skip }, () => {
  let cluster: ThrowawayPostgres | undefined;
  const servers: ServerProcess[] = [];
  let key: string;
  let petBefore: unknown;
  let wentDown = false;

  before(async () => {
    cluster = await createThrowawayPostgres(PG_BIN!);
    const env = { PETSTORE_DATABASE_URL: cluster.url };
    servers.push(await startServerProcess(env));
    servers.push(await startServerProcess(env, ['--workers', '2']));
    ({ key } = await createAccountWithKey(env));
    const created = await httpRequest(servers[0]!.url, 'POST', '/v1/pets', { key, body: { name: 'Before', categoryId: 1 } });
    assert.equal(created.status, 201);
    petBefore = created.body;
  });

  after(async () => {
    for (const server of servers) await server.stop('SIGKILL');
    cluster?.destroy();
  });

  test('when the database is down, then /v1 answers 503 service_unavailable with Retry-After, /readyz 503, /healthz 200, and the process stays up', async () => {
    await cluster!.stop();
    wentDown = true;
    for (const s of servers) {
      // Twice each: separate connections reach both workers of the cluster.
      for (const [method, path, body] of [
        ['GET', '/v1/pets', undefined],
        ['POST', '/v1/pets', { name: 'During', categoryId: 1 }],
        ['GET', '/v1/pets/1', undefined],
        ['GET', '/v1/pets', undefined],
        ['POST', '/v1/pets', { name: 'During', categoryId: 1 }],
        ['GET', '/v1/pets/1', undefined],
      ] as const) {
        const started = Date.now();
        const res = await httpRequest(s.url, method, path, { key, body });
        assert.equal(res.status, 503, `${method} ${path}: ${JSON.stringify(res.body)}`);
        assert.equal((res.body as { code: string }).code, 'service_unavailable');
        assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/);
        assert.ok(Date.now() - started < 5000, `${method} ${path} answered in ${Date.now() - started} ms`);
      }
      const ready = await httpRequest(s.url, 'GET', '/readyz');
      assert.equal(ready.status, 503);
      assert.equal((ready.body as { code: string }).code, 'service_unavailable');
      assert.equal((await httpRequest(s.url, 'GET', '/healthz')).status, 200);
    }
    await sleep(500);
    for (const s of servers) {
      assert.equal(s.child.exitCode, null, 'the process is still running');
      assert.equal(s.child.signalCode, null);
      assert.equal((await httpRequest(s.url, 'GET', '/healthz')).status, 200);
      assert.equal(s.logs().some((l) => l.msg === 'worker exited unexpectedly; restarting it'), false, 'no worker died');
    }
  });

  test('when the database comes back, then requests succeed again within 10 s without a restart', async () => {
    assert.ok(wentDown, 'runs after the outage test');
    await cluster!.start();
    for (const s of servers) {
      let status = 0;
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        status = (await httpRequest(s.url, 'GET', '/v1/pets', { key })).status;
        if (status === 200) break;
        await sleep(200);
      }
      assert.equal(status, 200, 'listing works again');
      for (let i = 0; i < 2; i += 1) {
        const list = await httpRequest(s.url, 'GET', '/v1/pets', { key });
        assert.equal(list.status, 200);
        assert.deepEqual((list.body as unknown[])[0], petBefore, 'the data written before the outage is there');
        assert.equal((await httpRequest(s.url, 'POST', '/v1/pets', { key, body: { name: 'After', categoryId: 1 } })).status, 201);
        assert.equal((await httpRequest(s.url, 'GET', '/readyz')).status, 200);
      }
      assert.equal(s.child.exitCode, null, 'same process');
    }
    const [single, workers] = servers;
    assert.equal(single!.logs().filter((l) => String(l.msg).startsWith('Server listening at')).length, 1, 'started once');
    assert.equal(workers!.logs().filter((l) => l.msg === 'worker listening').length, 2, 'no worker was replaced');
  });
});
