// `petstore listen` (the built CLI) against the built server over HTTP: each event of the asked
// kinds is POSTed to a real receiver, signed as a real delivery (verified by the standardwebhooks
// package with the secret the command printed), its body the getEvent JSON, one line printed per
// event; the server restarted mid-stream, the command reconnects and forwards the events
// committed meanwhile, none skipped or repeated. ~15 s.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { createAccountWithKey, freePort, httpRequest, type ServerProcess, startServerProcess } from './helpers/process.js';
import { eventually, type Receiver, startReceiver } from './helpers/receiver.js';

const BIN = path.resolve('bin/petstore.js');

describe('petstore listen --forward-to', () => {
  let dir: string;
  let server: ServerProcess;
  let receiver: Receiver;
  let env: Record<string, string>;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-listen-'));
    env = { PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db'), PORT: String(await freePort()) };
    server = await startServerProcess(env);
    receiver = await startReceiver();
  });
  after(async () => {
    await server?.stop('SIGKILL');
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('when events are committed, then each of the asked kinds is forwarded signed like a delivery, and after a server restart the rest follow without gap or repeat', async () => {
    const { key } = await createAccountWithKey(env);
    const base = server.url;
    const newPet = async (name: string) => {
      const res = await httpRequest(base, 'POST', '/v1/pets', { key, body: { name, categoryId: 1, status: 'available' } });
      assert.equal(res.status, 201);
      return res.body as { id: number };
    };
    await newPet('Before listen');
    const child = spawn(process.execPath, [BIN, 'listen', '--api-key', key, '--base-url', `${base}/v1`, '--forward-to', `${receiver.url}/webhooks`, '--events', 'pet.created,order.placed'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    try {
      while (!out.includes('Ready:')) {
        assert.equal(child.exitCode, null, out);
        await sleep(50);
      }
      const secret = /Signing secret: (whsec_\S+)/.exec(out)![1]!;
      const rex = await newPet('Rex');
      await httpRequest(base, 'POST', '/v1/store/orders', { key, body: { petId: rex.id } });
      await receiver.waitFor(2, 10_000);

      await server.stop('SIGTERM');
      server = await startServerProcess(env);
      await newPet('While away');
      await newPet('Back');
      const received = await receiver.waitFor(4, 20_000);
      await sleep(300);
      assert.equal(receiver.received.length, 4, 'nothing repeated');

      const verifier = new Webhook(secret);
      const events = [];
      for (const r of received) {
        assert.equal(r.path, new URL(`${receiver.url}/webhooks`).pathname);
        assert.equal(r.headers['content-type'], 'application/json');
        assert.equal(r.headers['user-agent'], 'Petstore-Webhooks/1');
        const headers = { 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) };
        verifier.verify(r.body, headers); // throws on a bad signature
        const event = JSON.parse(r.body) as { id: string; type: string; sequence: number };
        const stored = await httpRequest(base, 'GET', `/v1/events/${event.id}`, { key });
        assert.deepEqual(stored.body, event, 'the body is the event as getEvent answers it');
        assert.equal(headers['webhook-id'], event.id);
        events.push([event.sequence, event.type]);
      }
      // 1 is before the command started; 4 (pet.status_changed) is not an asked kind.
      assert.deepEqual(events, [[2, 'pet.created'], [3, 'order.placed'], [5, 'pet.created'], [6, 'pet.created']]);
      assert.match(out, /reconnect/);
      assert.equal(out.match(/--> 204/g)?.length, 4, out);
    } finally {
      child.kill('SIGINT');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    assert.equal(child.exitCode, 0, out);
  });

  /** `petstore listen` with its output gathered; `stop` sends SIGINT and waits for the exit. */
  function startListen(key: string, forwardTo: string): { output: () => string; stop: () => Promise<number | null> } {
    const child = spawn(process.execPath, [BIN, 'listen', '--api-key', key, '--base-url', `${server.url}/v1`, '--forward-to', forwardTo], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    return {
      output: () => out,
      stop: async () => {
        child.kill('SIGINT');
        if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
        return child.exitCode;
      },
    };
  }

  test('when the receiver answers with a redirect, then it is not followed (a failure, as in a real delivery) and the event goes nowhere else', async () => {
    const { key } = await createAccountWithKey(env);
    const redirecting = await startReceiver(() => ({ status: 308, headers: { location: '/elsewhere' } }));
    const listener = startListen(key, `${redirecting.url}/webhooks`);
    try {
      await eventually(async () => (listener.output().includes('Ready:') ? true : undefined), 10_000, 'the stream to open');
      assert.equal((await httpRequest(server.url, 'POST', '/v1/pets', { key, body: { name: 'Moved', categoryId: 1 } })).status, 201);
      await eventually(async () => (/--> 308 \(a redirect: not followed/.test(listener.output()) ? true : undefined), 10_000, 'the 308 to be printed');
      await sleep(300);
      assert.deepEqual(redirecting.received.map((r) => r.path), [new URL(`${redirecting.url}/webhooks`).pathname], 'one POST, never one to the Location');
    } finally {
      assert.equal(await listener.stop(), 0, listener.output());
      await redirecting.close();
    }
  });

  test('when the key has its 5 streams open, then listen waits the 429\'s Retry-After (5 s) before trying again, and connects once one closes', async () => {
    const { key } = await createAccountWithKey(env);
    const open: http.ClientRequest[] = [];
    for (let i = 0; i < 5; i++) {
      const request = http.get(`${server.url}/v1/events/stream`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } });
      const response = await new Promise<http.IncomingMessage>((resolve) => request.once('response', resolve));
      assert.equal(response.statusCode, 200);
      open.push(request);
    }
    const listener = startListen(key, `${receiver.url}/webhooks`);
    try {
      await eventually(async () => (listener.output().includes('connection lost') ? true : undefined), 10_000, 'the first 429');
      await sleep(2_500); // backoff alone would have tried again at 250, 750 and 1 750 ms
      assert.equal(listener.output().match(/connection lost/g)?.length, 1, listener.output());
      open.pop()!.destroy();
      await eventually(async () => (listener.output().includes('Ready:') ? true : undefined), 10_000, 'the stream to open once one closed');
    } finally {
      for (const request of open) request.destroy();
      assert.equal(await listener.stop(), 0, listener.output());
    }
  });
});
