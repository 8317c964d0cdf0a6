// The ceiling: the fastest a node:http process can answer on this machine with the same
// body bytes and content-type as the service's 20-pet page. No routing, auth, validation
// or database: the service's ratio to it is what the framework and the app cost.
// Usage: PORT=<port> CONTENT_TYPE=<type> node --import tsx bench/ceiling-server.ts <body-file>
import fs from 'node:fs';
import http from 'node:http';

const bodyFile = process.argv[2];
if (!bodyFile) throw new Error('usage: ceiling-server.ts <body-file>');
const body = fs.readFileSync(bodyFile);
const headers = {
  'content-type': process.env.CONTENT_TYPE ?? 'application/json; charset=utf-8',
  'content-length': String(body.length),
};

const server = http.createServer((req, res) => {
  // Drain the request (GETs have no body, but be correct for any method).
  req.resume();
  res.writeHead(200, headers);
  res.end(body);
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
