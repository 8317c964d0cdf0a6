// The Fastify instance: its Node server (timeouts, CONNECT, Expect), request ids, logging, and the
// slot through which the fast path (src/http/fast-path.ts) sees requests before Fastify does.
import proxyAddr from '@fastify/proxy-addr';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, LogController } from 'fastify';
import type { HttpConfig } from '../config.js';
import { lazyChildLoggerFactory } from '../logger.js';
import type { App } from './plugin.js';
import { hooks as tracingHooks, traceRequest } from '../tracing/switch.js';
import { clientErrorHandler, frameworkErrorHandler, rawErrorReply } from './plugins/errors.js';
import { serializersCompiledOnce } from './compile-once.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const KEY_SHAPED = /psk_(live|test)_/i;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
/** Takes a request before Fastify (true: it answers, or hands it to `fallback` itself), or leaves it (false). */
export type Interceptor = (req: IncomingMessage, res: ServerResponse, fallback: Handler) => boolean;

export interface Instance {
  app: App;
  /** The request id for a client's X-Request-Id (or its absence). */
  requestId: (given: string | string[] | undefined) => string;
  /** Sets the interceptor; until then every request goes to Fastify. */
  intercept: (interceptor: Interceptor) => void;
}

/**
 * The client's address as Fastify's request.ip gives it (trustProxy with the same list), for
 * what answers outside Fastify (the fast path's log line).
 */
export function clientAddressOf(trustedProxies: readonly string[]): (req: IncomingMessage) => string | undefined {
  if (trustedProxies.length === 0) return (req) => req.socket.remoteAddress;
  const trust = proxyAddr.compile([...trustedProxies]);
  return (req) => proxyAddr(req, trust);
}

/**
 * Makes the server's closeIdleConnections() (which close() and Fastify's shutdown call) also close
 * connections on which the client never sent a byte. Node counts those neither idle nor late, so
 * one held a shutdown until its client dropped it: undici (Node's fetch) opens such a connection
 * whenever a fetch is aborted mid-body (an event stream stopped; nodejs/undici#5845) and keeps it
 * for the keep-alive time we announce (72 s); browsers preconnect the same way.
 */
function closeUnusedConnectionsWhenIdleOnesClose(server: Server): void {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  const closeIdle = server.closeIdleConnections.bind(server);
  server.closeIdleConnections = () => {
    closeIdle();
    for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
  };
}

/**
 * How long an idle connection stays open (announced as Keep-Alive: timeout=72). Longer than common
 * load-balancer idle timeouts (60 s), so the balancer closes idle connections first and never
 * sends on one we are closing.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

export function createInstance(http: Pick<HttpConfig, 'bodyLimit' | 'requestTimeoutMs'> & Partial<Pick<HttpConfig, 'trustedProxies'>>, logger: FastifyBaseLogger): Instance {
  const requestId = (given: string | string[] | undefined): string =>
    // A key pasted here by mistake would be echoed and logged on every line: never accept one.
    // Else a random (version 4) UUID: a counter would let one account read from the gap between
    // two of its own ids how many requests everyone else made (~0.2 µs more than a counter).
    typeof given === 'string' && REQUEST_ID.test(given) && !KEY_SHAPED.test(given) ? given : randomUUID();
  let interceptor: Interceptor = () => false;
  // Tracing on: every request (the fast path's too) gets its server span here, where all enter.
  const tracing = tracingHooks;
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: http.bodyLimit,
    // request.ip is X-Forwarded-For's client only behind a listed proxy: anyone else could name any address.
    trustProxy: http.trustedProxies && http.trustedProxies.length > 0 ? [...http.trustedProxies] : false,
    requestIdHeader: false,
    genReqId: (req: IncomingMessage) => requestId(req.headers['x-request-id']),
    childLoggerFactory: lazyChildLoggerFactory,
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    schemaController: { compilersFactory: { buildSerializer: serializersCompiledOnce() } },
    // Slow clients (trickled headers or body) are cut off after requestTimeoutMs; Node checks
    // at connectionsCheckingInterval, which defaults to 30 s, so we bring it in line.
    serverFactory: (handler) => {
      const server = createServer(
        {
          requestTimeout: http.requestTimeoutMs,
          headersTimeout: http.requestTimeoutMs,
          connectionsCheckingInterval: Math.min(1000, http.requestTimeoutMs),
          // HTTP/1.0 clients may omit Host; we route on the path only.
          requireHostHeader: false,
          keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
        },
        tracing
          ? (req, res) => {
              const inSpan = traceRequest(tracing, req, res, handler);
              if (!interceptor(req, res, inSpan)) inSpan(req, res);
            }
          : (req, res) => {
              // Requests the interceptor takes, it answers or hands back to `handler` itself.
              if (!interceptor(req, res, handler)) handler(req, res);
            },
      );
      closeUnusedConnectionsWhenIdleOnesClose(server);
      // Unknown Expect values: RFC 9110 lets us ignore them and answer the request normally.
      server.on('checkExpectation', handler);
      server.on('connect', (_req: IncomingMessage, socket: Duplex) =>
        rawErrorReply(socket, 'method_not_allowed', 'CONNECT is not supported: this is not a proxy.'),
      );
      return server;
    },
    // One log line per request (the core plugin's onResponse hook) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Requests arriving during shutdown are refused by registerShutdown, with our Error body.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
  }).withTypeProvider<TypeBoxTypeProvider>();
  return { app, requestId, intercept: (next) => (interceptor = next) };
}
