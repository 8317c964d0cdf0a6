// Graceful shutdown at the HTTP layer. First, optionally, draining (app.drain(), for
// PETSTORE_SHUTDOWN_DELAY_MS): every request is served as usual except /readyz, which answers
// 503 so that load balancers take the instance out. Then close (preClose):
// - Requests that arrive from then on are refused with 503 and Retry-After.
// - Requests already in flight answer with `Connection: close`, so their keep-alive connections
//   end with the response instead of holding the process open until the keep-alive timeout.
//   Not while another request is pipelined behind on the same connection: Node would close it
//   after this response and discard that one's, committed or not. The connection is ended
//   instead once its last response is out.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ServiceUnavailableError } from '../../errors.js';

/** Returns whether close has begun, for request paths that answer outside Fastify's hooks. */
declare module 'fastify' {
  interface FastifyInstance {
    /** Starts draining: /readyz answers 503 from now on; everything else is served as usual. */
    drain(): void;
  }
}

export function registerShutdown(app: FastifyInstance): () => boolean {
  let closing = false;
  let draining = false;
  app.decorate('drain', () => {
    draining = true;
  });
  const unanswered = new WeakMap<Socket, number>();

  // One shared listener, not a closure per request: res.req.socket outlives the response.
  function answered(this: ServerResponse): void {
    const socket = this.req.socket;
    const left = (unanswered.get(socket) ?? 1) - 1;
    unanswered.set(socket, left);
    if (closing && left === 0) socket.destroySoon();
  }
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    unanswered.set(req.socket, (unanswered.get(req.socket) ?? 0) + 1);
    res.on('finish', answered);
  });
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Callback style: these run on every request, and are no-ops until shutdown.
  app.addHook('onRequest', (request, _reply, done) => {
    if (closing) done(new ServiceUnavailableError('This instance is shutting down. Retry the request; another instance will answer.', 1));
    else if (draining && (request.url === '/readyz' || request.url.startsWith('/readyz?'))) {
      done(new ServiceUnavailableError('This instance is shutting down.', 1));
    } else done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (closing && unanswered.get(request.raw.socket) === 1) reply.header('connection', 'close');
    done(null, payload);
  });
  return () => closing;
}
