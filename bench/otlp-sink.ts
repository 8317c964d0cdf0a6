// The bench's local OTLP/HTTP receiver: takes every export (either encoding), reads it in full
// and answers 200 with an empty response, counting spans' bytes only. Run as its own process on
// the bench's CPU, so the service pays for exporting and the sink for nothing on its core.
import http from 'node:http';

let requests = 0;
let bytes = 0;
const server = http.createServer((req, res) => {
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    requests++;
    const json = (req.headers['content-type'] ?? '').startsWith('application/json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : undefined);
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write(`otlp sink listening\n`));
process.on('SIGTERM', () => {
  process.stdout.write(`otlp sink: ${requests} exports, ${(bytes / 1e6).toFixed(1)} MB\n`);
  server.close(() => process.exit(0));
});
