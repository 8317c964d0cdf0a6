// Exactly once without a crash, also under load (issue 30, part 1): two `petstore serve`
// instances on one PostgreSQL database drain 1000 pet.created events to one receiver answering
// 200 at once, with default delivery settings, while a third process spins on the CPU. No
// process is killed, so no event may be received twice: a delivery that waited for a slot
// renews its lease before it is sent (or is dropped when it lost it), and a failed recording is
// tried again while the leases hold, so a live worker's delivery is never taken over.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends, postgresBackend } from '../helpers/backends.js';
import { createFixture, type ServerChild, startServer } from '../helpers/durability.js';
import { checkReceived, createPets, listDeliveries, listEvents, registerEndpoint, startReceiver, WEBHOOK_ENV } from '../helpers/webhooks.js';

const EVENTS = 1000;
// Default attempt timeout (15 s, so a lease of 40 s): only the load may make an instance late.
const ENV = { ...WEBHOOK_ENV, PETSTORE_WEBHOOK_TIMEOUT_MS: '15000' };

describe('exactly once under load', () => {
  it('postgres: when two instances drain 1000 events to one receiver while a third process spins on the CPU, then each event is received exactly once', { skip: backends.includes(postgresBackend) ? false : 'set PETSTORE_TEST_POSTGRES_URL', timeout: 170_000 }, async (t) => {
    const fixture = await createFixture(postgresBackend);
    const receiver = await startReceiver({ status: 200 });
    const servers: ServerChild[] = [];
    let spinner: ChildProcess | undefined;
    t.after(async () => {
      spinner?.kill('SIGKILL');
      for (const server of servers) server.kill('SIGKILL');
      await Promise.all(servers.map((s) => s.exited));
      await receiver.close();
      await fixture.drop();
    });
    // The backlog, written with the worker off.
    const writer = await startServer({ ...fixture.env, ...ENV, PETSTORE_WEBHOOK_WORKER: 'false' });
    const endpoint = await registerEndpoint(writer.url, fixture.key, receiver.url);
    await createPets(writer.url, fixture.key, EVENTS);
    writer.kill('SIGTERM');
    await writer.exited;

    spinner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    servers.push(...(await Promise.all([startServer({ ...fixture.env, ...ENV }), startServer({ ...fixture.env, ...ENV })])));
    const deadline = Date.now() + 150_000;
    for (;;) {
      const all = await listDeliveries(servers[0]!.url, fixture.key, endpoint.id);
      if (all.length === EVENTS && all.every((d) => d.status === 'succeeded')) break;
      assert.ok(Date.now() < deadline, `${all.filter((d) => d.status === 'succeeded').length} of ${EVENTS} succeeded`);
      await sleep(500);
    }
    const events = await listEvents(servers[0]!.url, fixture.key);
    assert.equal(events.length, EVENTS);
    assert.equal(checkReceived(receiver.received, events, endpoint.secret), 0, 'no webhook-id received twice');
    assert.equal(receiver.received.length, EVENTS);
  });
});
