// Fan-out of GET /v1/events/stream: 1 000 open streams on one `petstore serve` (SQLite), all of
// one account (200 keys, 5 streams each: the per-key limit), then EVENTS pets created one after
// another. Reports events delivered per second (deliveries to all streams / the time from the
// first commit to the last receipt), p50/p99 from commit (the create's answer) to receipt, and
// the server's memory per open stream (RSS with the streams open minus before, / streams).
//   node --import tsx bench/stream-fanout.ts [--streams 1000] [--events 200]
// The built server (dist/, bin/petstore.js): run `npm run build` first. Everything on 127.0.0.1.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort, readMemory, runNode, startChild, stopAllChildren, waitForHttp } from './lib/procs.js';
import { serviceEnv } from './lib/service.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'petstore.js');
const { values } = parseArgs({ options: { streams: { type: 'string', default: '1000' }, events: { type: 'string', default: '200' } } });
const STREAMS = Number(values.streams);
const EVENTS = Number(values.events);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'petstore-fanout-'));
try {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = serviceEnv(port, path.join(tmp, 'petstore.db'), { PETSTORE_LOG_LEVEL: 'warn', PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000' });
  await runNode([BIN, 'migrate', '--json'], env);
  const account = JSON.parse(await runNode([BIN, 'accounts', 'create', '--name', 'fanout', '--json'], env)) as { id: string };
  const server = startChild('service', [BIN, 'serve'], env, { cwd: ROOT, forward: true });
  await waitForHttp(server, `${base}/readyz`);
  const keys: string[] = [];
  for (let i = 0; i < Math.ceil(STREAMS / 5); i++) {
    const res = await fetch(`${base}/v1/api-keys`, { method: 'POST', headers: { authorization: `Bearer ${keys[0] ?? (JSON.parse(await runNode([BIN, 'keys', 'create', '--account', account.id, '--json'], env)) as { key: string }).key}`, 'content-type': 'application/json' }, body: '{}' });
    keys.push(((await res.json()) as { key: string }).key);
  }
  await sleep(500);
  const rssBefore = readMemory(server.pid)!.rssKb;
  const received = new Map<number, number[]>(); // sequence → receipt times
  let opened = 0;
  const sockets: http.ClientRequest[] = [];
  for (let i = 0; i < STREAMS; i++) {
    const req = http.get(`${base}/v1/events/stream`, { headers: { authorization: `Bearer ${keys[Math.floor(i / 5)]}` }, agent: false });
    sockets.push(req);
    req.on('response', (res) => {
      opened++;
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const now = performance.now();
        buffer += chunk;
        for (const m of buffer.matchAll(/^id: (\d+)$/gm)) {
          const seq = Number(m[1]);
          const times = received.get(seq) ?? [];
          times.push(now);
          received.set(seq, times);
        }
        buffer = buffer.slice(buffer.lastIndexOf('\n\n') + 2);
      });
    });
    req.on('error', () => {});
  }
  while (opened < STREAMS) await sleep(50);
  await sleep(1000);
  const rssOpen = readMemory(server.pid)!.rssKb;
  const committed = new Map<number, number>();
  const started = performance.now();
  for (let i = 0; i < EVENTS; i++) {
    const res = await fetch(`${base}/v1/pets`, { method: 'POST', headers: { authorization: `Bearer ${keys[0]}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `Fan ${i}`, categoryId: 1 }) });
    await res.arrayBuffer();
    committed.set(i + 1, performance.now());
  }
  const deadline = Date.now() + 60_000;
  while ([...received.values()].reduce((n, t) => n + t.length, 0) < STREAMS * EVENTS && Date.now() < deadline) await sleep(100);
  const latencies: number[] = [];
  let last = 0;
  for (const [seq, times] of received) for (const t of times) {
    latencies.push(t - committed.get(seq)!);
    last = Math.max(last, t);
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  const delivered = latencies.length;
  console.log('### Stream fan-out bench\n');
  console.log(`${STREAMS} open streams on one \`petstore serve\` (SQLite, one account), ${EVENTS} pets created one after another; the machine is shared, figures provisional.\n`);
  console.log('| streams | events | delivered | delivered/s | p50 commit→receipt | p99 commit→receipt | memory per stream |');
  console.log('|---|---|---|---|---|---|---|');
  console.log(`| ${STREAMS} | ${EVENTS} | ${delivered} of ${STREAMS * EVENTS} | ${Math.round(delivered / ((last - started) / 1000))} | ${at(0.5).toFixed(1)} ms | ${at(0.99).toFixed(1)} ms | ${((rssOpen - rssBefore) / STREAMS).toFixed(1)} KiB |`);
  for (const req of sockets) req.destroy();
} finally {
  await stopAllChildren();
  fs.rmSync(tmp, { recursive: true, force: true });
}
