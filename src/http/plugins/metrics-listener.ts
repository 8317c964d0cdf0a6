// /metrics on a listener of its own (PETSTORE_METRICS_HOST:PORT), for a `serve` whose public
// listener is not loopback and has no PETSTORE_METRICS_TOKEN: metrics label account ids, so they
// are never public by accident. It listens when the app is ready (a port in use fails the start)
// and closes with the app. Under `--workers` every worker listens on the same address (the
// cluster shares it) and each scrape answers for the whole cluster, as the public one does.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

export type Scrape = () => Promise<{ contentType: string; body: string }>;

export function serveMetricsApart(app: FastifyInstance, where: { host: string; port: number }, scrape: Scrape): void {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: this listener serves GET /metrics only.\n');
      return;
    }
    scrape().then(
      ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(request.method === 'HEAD' ? undefined : body),
      (err: unknown) => {
        app.log.warn({ err }, 'metrics listener: scrape failed');
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Scrape failed; see the server log.\n');
      },
    );
  });
  server.keepAliveTimeout = 5_000;
  app.addHook('onReady', async () => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(where.port, where.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { address, port } = server.address() as AddressInfo;
    app.log.info({ address, port }, 'metrics listening apart from the API (HOST is not loopback and PETSTORE_METRICS_TOKEN is unset)');
  });
  app.addHook('onClose', async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
}
