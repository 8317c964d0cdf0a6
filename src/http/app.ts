// The one wiring point: builds the HTTP app from config, store and logger.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type HTTPMethods, LogController } from 'fastify';
import secureJson from 'secure-json-parse';
import { type Clock, systemClock } from '../clock.js';
import type { Config } from '../config.js';
import { InvalidJsonError, InvalidRequestError, MethodNotAllowedError } from '../errors.js';
import { sharedSchemas } from '../schemas/index.js';
import { createServices, type Services } from '../services/index.js';
import type { Store } from '../store/types.js';
import { createRequestLineWriter, lazyChildLoggerFactory, writesAt } from '../logger.js';
import { createFastPath } from './fast-path.js';
import { clientErrorHandler, frameworkErrorHandler, rawErrorReply, registerErrorHandling } from './plugins/errors.js';
import { createMetrics, registerMetrics } from './plugins/metrics.js';
import { registerOpenApi } from './plugins/openapi.js';
import { registerShutdown } from './plugins/shutdown.js';
import { portal } from './portal/plugin.js';
import { createMemoryRateLimiter, createRedisRateLimiter, type RateLimiter } from '../services/rate-limit.js';
import { instrumentStore } from '../store/instrumented.js';
import { healthRoutes } from './routes/health.js';
import { createPetWire } from './routes/pets.js';
import { v1Routes } from './routes/v1.js';
import { exampleApi } from './example/index.js';
import { createMessageWorker, type Deliver } from '../services/message-worker.js';
import { createWebhookWorker, type Send } from '../services/webhook-worker.js';
import { eventSchemas } from '../schemas/events.js';
import { observeEvents } from '../store/instrumented.js';
import { checkWebhookUrl, parseAllowedNetworks } from '../webhooks/address-policy.js';
import { createWebhookSender, type WebhookResolver } from '../webhooks/sender.js';
import { createValidatorCompiler } from './validation.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The services this app runs on (tests and tools act through the same caches). */
    services: Services;
  }
}

export interface AppDeps {
  config: Config;
  store: Store;
  logger: FastifyBaseLogger;
  clock?: Clock;
  /** What delivering a message means (default: nothing more than recording it; tests make it fail). */
  deliver?: Deliver;
  /** Resolves webhook host names (default: the system resolver; tests inject names). */
  webhookResolver?: WebhookResolver;
  /** Sends a webhook delivery (default: the policy-checked HTTP sender). */
  webhookSend?: Send;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * UUID-shaped request ids: 74 random bits per process, then a counter. Unique across
 * processes and restarts, and cheaper than a fresh randomUUID() per request; they
 * identify requests, they are not secrets.
 */
function requestIdGenerator(): () => string {
  const r = randomBytes(10).toString('hex');
  const prefix = `${r.slice(0, 8)}-${r.slice(8, 12)}-4${r.slice(12, 15)}-${'89ab'[Number.parseInt(r[15]!, 16) & 3]}${r.slice(16, 19)}-`;
  let counter = 0;
  return () => prefix + (counter++ % 0x1000000000000).toString(16).padStart(12, '0');
}
const KEY_SHAPED = /psk_(live|test)_/i;
const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseJson(body: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new InvalidJsonError('The request body is not valid UTF-8. Send JSON encoded as UTF-8.');
  }
  if (text.trim() === '') throw new InvalidRequestError('The request body is empty. Send a JSON object.');
  try {
    return secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const reason = err instanceof SyntaxError && /forbidden prototype/i.test(err.message)
      ? 'it contains a forbidden "__proto__" or "constructor.prototype" key'
      : err instanceof RangeError ? 'it is nested too deeply' : `${(err as Error).message}`;
    throw new InvalidJsonError(`The request body is not valid JSON: ${reason}.`);
  }
}

function createRateLimiter(config: Config, log: FastifyBaseLogger, countError: () => void): RateLimiter {
  const options = { ratePerSecond: config.rateLimitPerSecond, capacity: config.rateLimitBurst };
  if (!config.redisUrl) return createMemoryRateLimiter(options);
  let lastLogged = 0;
  return createRedisRateLimiter(config.redisUrl, {
    ...options,
    onError: (err) => {
      countError();
      // Fail open, but say so: at most one log line per 10 s while Redis is away.
      if (Date.now() - lastLogged > 10_000) {
        lastLogged = Date.now();
        log.warn({ err }, 'rate limiter unavailable: allowing requests without a shared limit');
      }
    },
  });
}

const ALL_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export async function buildApp({ config, store, logger, clock = systemClock, deliver, webhookResolver, webhookSend }: AppDeps): Promise<FastifyInstance> {
  const newRequestId = requestIdGenerator();
  const requestId = (given: string | string[] | undefined): string =>
    // A key pasted here by mistake would be echoed and logged on every line: never accept one.
    typeof given === 'string' && REQUEST_ID.test(given) && !KEY_SHAPED.test(given) ? given : newRequestId();
  // Set once the routes exist; until then every request goes to Fastify.
  type Handler = (req: IncomingMessage, res: ServerResponse) => void;
  let fastPath: (req: IncomingMessage, res: ServerResponse, fallback: Handler) => boolean = () => false;
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: config.bodyLimit,
    requestIdHeader: false,
    genReqId: (req: IncomingMessage) => requestId(req.headers['x-request-id']),
    childLoggerFactory: lazyChildLoggerFactory,
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    // Slow clients (trickled headers or body) are cut off after requestTimeoutMs; Node checks
    // at connectionsCheckingInterval, which defaults to 30 s, so we bring it in line.
    serverFactory: (handler) => {
      const server = createServer(
        {
          requestTimeout: config.requestTimeoutMs,
          headersTimeout: config.requestTimeoutMs,
          connectionsCheckingInterval: Math.min(1000, config.requestTimeoutMs),
          // HTTP/1.0 clients may omit Host; we route on the path only.
          requireHostHeader: false,
          // Longer than common load-balancer idle timeouts (60 s), so the balancer closes
          // idle connections first and never sends on one we are closing.
          keepAliveTimeout: 72_000,
        },
        (req, res) => {
          // Requests the fast path takes, it answers or hands back to `handler` itself.
          if (!fastPath(req, res, handler)) handler(req, res);
        },
      );
      // Unknown Expect values: RFC 9110 lets us ignore them and answer the request normally.
      server.on('checkExpectation', handler);
      server.on('connect', (_req: IncomingMessage, socket: Duplex) =>
        rawErrorReply(socket, 'method_not_allowed', 'CONNECT is not supported: this is not a proxy.'),
      );
      return server;
    },
    // One log line per request (in onResponse below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Requests arriving during shutdown are refused by registerShutdown, with our Error body.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const metrics = createMetrics();
  const timedStore = instrumentStore(store, (operation) => {
    const child = metrics.storeDuration.labels({ operation });
    return (seconds) => child.observe(seconds);
  });
  let wakeWorker = () => {};
  let wakeWebhooks = () => {};
  // Every change that wrote events is counted, and wakes the webhook worker (a delivery may be due).
  const observedStore = config.events
    ? observeEvents(timedStore, (types) => {
        for (const type of types) metrics.eventsWritten.labels({ type }).inc();
        wakeWebhooks();
      })
    : timedStore;
  const allowedNetworks = parseAllowedNetworks(config.webhookAllowedNetworks);
  const urlPolicy = { allowHttp: config.webhookAllowHttp, allowed: allowedNetworks };
  const services = await createServices({
    store: observedStore,
    clock,
    environment: config.environment,
    onMessageQueued: () => wakeWorker(),
    checkWebhookUrl: (url) => {
      const checked = checkWebhookUrl(url, urlPolicy);
      return checked.ok ? undefined : checked.reason;
    },
    webhookSecretOverlapSeconds: config.webhookSecretOverlapSeconds,
    onDeliveryDue: () => wakeWebhooks(),
  });
  app.decorate('services', services);
  if (config.messageWorker) {
    const worker = createMessageWorker({
      store: timedStore,
      clock,
      log: app.log,
      counters: {
        delivered: () => metrics.messagesDelivered.inc(),
        failed: () => metrics.messagesFailed.inc(),
        retried: () => metrics.messageRetries.inc(),
      },
      ...(deliver ? { deliver } : {}),
    });
    wakeWorker = worker.wake;
    app.addHook('onReady', async () => worker.start());
    // After the last request: what the worker holds is finished before the store closes.
    app.addHook('onClose', async () => worker.stop());
  }
  if (config.webhookWorker) {
    const sender = webhookSend
      ? undefined
      : createWebhookSender({ ...urlPolicy, timeoutMs: config.webhookTimeoutMs, maxSockets: config.webhookEndpointConcurrency, ...(webhookResolver ? { resolve: webhookResolver } : {}) });
    const worker = createWebhookWorker({
      webhooks: timedStore.webhooks,
      clock,
      log: app.log,
      send: webhookSend ?? ((url, headers, body) => sender!.send(url, headers, body)),
      counters: {
        attempt: (outcome, seconds) => {
          metrics.webhookDeliveries.labels({ outcome }).inc();
          if (seconds !== undefined) metrics.webhookAttemptDuration.observe(seconds);
        },
        endpointDisabled: () => metrics.webhookEndpointsDisabled.inc(),
      },
      options: {
        schedule: config.webhookRetrySchedule,
        timeoutMs: config.webhookTimeoutMs,
        concurrency: config.webhookConcurrency,
        endpointConcurrency: config.webhookEndpointConcurrency,
      },
    });
    wakeWebhooks = worker.wake;
    app.addHook('onReady', async () => worker.start());
    // After the last request: the attempts in hand finish and are recorded before the store closes.
    app.addHook('onClose', async () => {
      await worker.stop();
      sender?.close();
    });
  }
  const rateLimiter = createRateLimiter(config, app.log, () => metrics.rateLimiterErrors.inc());
  app.addHook('onClose', async () => rateLimiter.close());
  const purge = setInterval(() => {
    services.pets.purgeExpiredIdempotencyKeys().catch((err: unknown) => app.log.warn({ err }, 'idempotency key purge failed'));
  }, 60 * 60 * 1000);
  purge.unref();
  app.addHook('onClose', async () => clearInterval(purge));
  // Events older than the retention are pruned hourly (and once soon after start).
  const pruneEvents = () =>
    services.events.prune(clock.now(), config.eventRetentionDays).catch((err: unknown) => app.log.warn({ err }, 'event pruning failed'));
  const prune = setInterval(pruneEvents, 60 * 60 * 1000);
  prune.unref();
  const firstPrune = setTimeout(pruneEvents, 60_000);
  firstPrune.unref();
  app.addHook('onClose', async () => {
    clearInterval(prune);
    clearTimeout(firstPrune);
  });

  for (const schema of [...sharedSchemas, ...eventSchemas]) app.addSchema(schema);
  app.setValidatorCompiler(createValidatorCompiler([...sharedSchemas, ...eventSchemas]));
  registerErrorHandling(app, config.bodyLimit);

  app.decorateRequest('auth', null);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, parseJson(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  // Hooks on the request path are callback style: an async hook costs a promise and a
  // microtask per request even when it has nothing to wait for.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    done();
  });
  // After the headers hook, so refusals during shutdown carry them too.
  const closing = registerShutdown(app);
  const writeRequestLine = createRequestLineWriter(app.log);
  app.addHook('onResponse', (request, reply, done) => {
    // At warn and above nothing is read: the getters below cost something each.
    if (!writesAt(app.log, 'info')) {
      done();
      return;
    }
    // What Fastify's serializers would take for req and res.
    writeRequestLine({
      reqId: request.id,
      method: request.method,
      url: request.url,
      version: request.headers['accept-version'],
      host: request.host,
      remoteAddress: request.ip,
      remotePort: request.socket?.remotePort,
      statusCode: reply.statusCode,
      responseTime: reply.elapsedTime,
    });
    done();
  });

  // Remember each path's methods, so other methods answer 405 with Allow instead of 404.
  const methodsByUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if (route.config && (route.config as { methodNotAllowed?: boolean }).methodNotAllowed) return;
    const methods = methodsByUrl.get(route.url) ?? new Set<string>();
    for (const m of ([] as string[]).concat(route.method)) methods.add(m);
    methodsByUrl.set(route.url, methods);
  });

  const record = registerMetrics(app, metrics, store, config.metricsToken);
  const openApiDocument = await registerOpenApi(app, config);
  // Set when the example API registers its document (below); both are built once the app is ready.
  let exampleDocument: () => Record<string, unknown> = () => ({});
  await app.register(healthRoutes, { store });
  await app.register(portal, { enabled: config.docs, openApiDocuments: () => [openApiDocument(), exampleDocument()] });
  const wire = createPetWire(metrics);
  await app.register(v1Routes, { services, clock, rateLimiter, metrics, wire });
  await app.register(exampleApi, { config, services, rateLimiter, metrics, onDocument: (document) => (exampleDocument = document) });
  if (config.fastPath) {
    fastPath = createFastPath({
      readFromStore: store.kind === 'postgres',
      services,
      rateLimiter,
      clock,
      wire,
      record,
      answered: metrics.fastPathAnswered,
      requestId,
      closing,
      log: app.log,
    });
  }

  for (const [url, allowed] of methodsByUrl) {
    const other = ALL_METHODS.filter((m) => !allowed.has(m));
    if (other.length === 0) continue;
    const allow = ALL_METHODS.filter((m) => allowed.has(m));
    app.route({
      method: other,
      url,
      config: { methodNotAllowed: true },
      schema: { hide: true },
      handler: async (request) => {
        throw new MethodNotAllowedError(request.method, request.url.split('?')[0] ?? url, allow);
      },
    });
  }

  return app;
}
