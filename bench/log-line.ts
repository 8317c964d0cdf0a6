// CPU per "request completed" line through the service's logger (src/logger.ts), written to a
// file: what logging at info costs each request, measured apart from any HTTP noise.
//   node --import tsx bench/log-line.ts [lines per round, default 200000]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { createLogger, createLogDestination, createRequestLineWriter } from '../src/logger.js';

const lines = Number(process.argv[2] ?? 100_000);
const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'petstore-log-line-')), 'out.log');
const fd = fs.openSync(file, 'w');
const logger = createLogger({ level: 'info' }, createLogDestination(fd));
// The shape Fastify's serializers give the per-request line (see src/http/fast-path.ts).
const child = logger.child({}, {
  serializers: {
    req: (req: { method: string; url: string; host: string; ip: string; socket: { remotePort: number } }) => ({
      method: req.method, url: req.url, host: req.host, remoteAddress: req.ip, remotePort: req.socket.remotePort,
    }),
    res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
  },
});
const socket = { remotePort: 51234 };
const headers = { host: '127.0.0.1:8080', authorization: 'Bearer (not a key)' };
const writeLine = createRequestLineWriter(logger);
const ways: Record<string, (i: number) => void> = {
  // What the service did before: the line through pino (redaction paths, then serialization).
  'pino info()': (i) =>
    child.info(
      { reqId: `0b9c2a3e-41d2-4f3a-9c1d-${i.toString(16).padStart(12, '0')}`, req: { method: 'GET', url: '/v1/pets?limit=20', headers, host: '127.0.0.1:8080', ip: '127.0.0.1', socket }, res: { statusCode: 200 }, responseTime: 0.123 },
      'request completed',
    ),
  // What it does now (src/logger.ts createRequestLineWriter): the same bytes in one pass.
  'request line writer': (i) =>
    writeLine({
      reqId: `0b9c2a3e-41d2-4f3a-9c1d-${i.toString(16).padStart(12, '0')}`,
      method: 'GET', url: '/v1/pets?limit=20', version: undefined, host: '127.0.0.1:8080', remoteAddress: '127.0.0.1', remotePort: socket.remotePort,
      statusCode: 200, responseTime: 0.123,
    }),
};
for (let round = 1; round <= 3; round++) {
  for (const [name, write] of Object.entries(ways)) {
    const t0 = process.cpuUsage();
    for (let i = 0; i < lines; i++) {
      write(i);
      // Let asynchronous writes happen, as between a server's event-loop turns.
      if (i % 10 === 9) await turn();
    }
    const cpu = process.cpuUsage(t0);
    process.stdout.write(`round ${round}, ${name}: ${((cpu.user + cpu.system) / lines).toFixed(2)} µs CPU per line\n`);
  }
}
logger.flush();
fs.rmSync(path.dirname(file), { recursive: true, force: true });
