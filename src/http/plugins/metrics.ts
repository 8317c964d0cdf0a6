// Prometheus metrics, one registry per app (so several apps in one process never mix).
import cluster from 'node:cluster';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AggregatorRegistry, Counter, collectDefaultMetrics, Gauge, Histogram, type OpenMetricsContentType, Registry } from 'prom-client';
import type { MetricsConfig } from '../../config.js';
import { UnauthorizedError } from '../../errors.js';
import type { Store } from '../../store/types.js';
import { BoundHistogram, type HistogramSeries } from './histogram.js';
import { serveMetricsApart } from './metrics-listener.js';
import { hooks as tracingHooks, serverSpanOf, type TracingHooks } from '../../tracing/switch.js';

/** petstore_tracing_spans_dropped_total: spans the full export queue refused or a failed export lost. */
function countDroppedSpans(registry: Registry, tracing: TracingHooks): void {
  new Counter({
    name: 'petstore_tracing_spans_dropped_total',
    help: 'Spans dropped: the export queue was full (OTEL_BSP_MAX_QUEUE_SIZE), or the collector did not take them.',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const dropped = tracing.dropped();
      this.inc({ reason: 'queue_full' }, dropped.queueFull);
      this.inc({ reason: 'export_failed' }, dropped.exportFailed);
    },
  });
}

/** True when the scraper prefers OpenMetrics (Prometheus asks for it first when it can read exemplars). */
const wantsOpenMetrics = (accept: string | undefined) => accept !== undefined && accept.includes('application/openmetrics-text');

/**
 * The registry as OpenMetrics text. prom-client renames a counter in place when it prints
 * OpenMetrics, so each metric goes in as a stand-in: the Prometheus text stays as it was.
 */
async function openMetricsText(registry: Registry): Promise<string> {
  const open = new Registry<OpenMetricsContentType>();
  open.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  for (const metric of registry.getMetricsAsArray()) {
    const m = metric as unknown as { name: string; help: string; type: string; get(): Promise<unknown> };
    // OpenMetrics adds `_total` to a counter's samples itself.
    const name = m.type === 'counter' ? m.name.replace(/_total$/, '') : m.name;
    const get = async () => ({ ...(await m.get() as object), name });
    open.registerMetric({ name, help: m.help, type: m.type, get } as never);
  }
  return open.metrics();
}

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'petstore_' });
  // Observed on every request: our BoundHistogram, which costs an array increment.
  const httpDuration = new BoundHistogram({
    name: 'petstore_http_request_duration_seconds',
    help: 'HTTP request latency by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const fastPathAnswered = { count: 0 };
  const deprecatedCallCounts = new Map<string, { labels: { operation: string; account_id: string }; count: number; inc(): void }>();
  return {
    registry,
    httpDuration,
    // Read off the histogram's counts at scrape time instead of counted twice per request.
    httpRequests: new Counter({
      name: 'petstore_http_requests_total',
      help: 'HTTP requests by method, route template and status.',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const series of httpDuration.counts()) this.inc(series.labels, series.count);
      },
    }),
    storeDuration: new BoundHistogram({
      name: 'petstore_store_query_duration_seconds',
      help: 'Store call latency by operation.',
      labelNames: ['operation'] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers: [registry],
    }),
    fastPathAnswered,
    fastPathResponses: new Counter({
      name: 'petstore_fast_path_responses_total',
      help: 'GET /v1/pets and GET /v1/pets/{petId} answered from memory before the framework (src/http/fast-path.ts); also counted in the HTTP histogram.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(fastPathAnswered.count);
      },
    }),
    rateLimited: new Counter({
      name: 'petstore_rate_limit_rejections_total',
      help: 'Requests refused with 429 by the per-key rate limit.',
      registers: [registry],
    }),
    messagesDelivered: new Counter({
      name: 'petstore_messages_delivered_total',
      help: 'Example API messages delivered (moved from queued to delivered) by this process\'s worker.',
      registers: [registry],
    }),
    messagesFailed: new Counter({
      name: 'petstore_messages_failed_total',
      help: 'Example API messages given up on (failed) after their last attempt.',
      registers: [registry],
    }),
    messageRetries: new Counter({
      name: 'petstore_message_delivery_retries_total',
      help: 'Delivery attempts that failed and were scheduled again.',
      registers: [registry],
    }),
    eventsWritten: new Counter({
      name: 'petstore_events_written_total',
      help: 'Events written to the event log by this process, by type.',
      labelNames: ['type'] as const,
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: 'petstore_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: succeeded, retried (failed, due again), failed (for good), gone (410: failed and the endpoint disabled), skipped (the endpoint was disabled).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    webhookAttemptDuration: new Histogram({
      name: 'petstore_webhook_attempt_duration_seconds',
      help: 'Time from sending a webhook delivery to its response (or error).',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    webhookEndpointsDisabled: new Counter({
      name: 'petstore_webhook_endpoints_disabled_total',
      help: 'Webhook endpoints the service disabled because the receiver answered 410 Gone.',
      registers: [registry],
    }),
    rateLimiterErrors: new Counter({
      name: 'petstore_rate_limiter_errors_total',
      help: 'Rate limiter backend (Redis) failures; those requests were allowed (fail open).',
      registers: [registry],
    }),
    deprecatedCalls: new Counter({
      name: 'petstore_deprecated_calls_total',
      help: 'Calls to deprecated operations by account, to warn owners before the sunset.',
      labelNames: ['operation', 'account_id'] as const,
      registers: [registry],
      // Counted in plain numbers on the request path (deprecatedCallsOf); read at scrape time.
      collect() {
        this.reset();
        for (const { labels, count } of deprecatedCallCounts.values()) this.inc(labels, count);
      },
    }),
    /** The call counter of one deprecated operation and account: an increment, no label hashing. */
    deprecatedCallsOf(operation: string, account: string): { inc(): void } {
      const id = `${operation} ${account}`;
      let counter = deprecatedCallCounts.get(id);
      if (!counter) {
        const created = { labels: { operation, account_id: account }, count: 0, inc: () => void created.count++ };
        deprecatedCallCounts.set(id, created);
        counter = created;
      }
      return counter;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** IPC message a cluster worker sends to ask the primary for every worker's metrics, and the reply. */
export const CLUSTER_METRICS_MESSAGE = 'petstore:cluster-metrics';
export interface ClusterMetricsMessage {
  type: typeof CLUSTER_METRICS_MESSAGE;
  id: string;
  text?: string;
  error?: string;
}

export function isClusterMetricsMessage(value: unknown): value is ClusterMetricsMessage {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === CLUSTER_METRICS_MESSAGE;
}

/**
 * In a `--workers` cluster a scrape reaches one worker; it asks the primary, which
 * aggregates every worker's registry (prom-client's AggregatorRegistry), so /metrics
 * always describes the whole process group.
 */
function clusterScrape(registry: Registry): () => Promise<string> {
  new AggregatorRegistry(); // makes this worker answer the primary's collection requests
  AggregatorRegistry.setRegistries([registry]);
  return () =>
    new Promise((resolve, reject) => {
      const id = randomUUID();
      const onMessage = (message: unknown) => {
        if (!isClusterMetricsMessage(message) || message.id !== id) return;
        clearTimeout(timer);
        process.off('message', onMessage);
        if (message.text !== undefined) resolve(message.text);
        else reject(new Error(`cluster metrics failed: ${message.error ?? 'no answer'}`));
      };
      const timer = setTimeout(() => {
        process.off('message', onMessage);
        reject(new Error('the primary did not answer the metrics request within 6 s'));
      }, 6000);
      process.on('message', onMessage);
      process.send!({ type: CLUSTER_METRICS_MESSAGE, id } satisfies ClusterMetricsMessage);
    });
}

/** Records answered requests in the latency histogram (which also yields requests_total). */
export interface ResponseRecorder {
  /** One answered request: method, route template (undefined when unmatched), status, milliseconds. */
  (method: string, route: string | undefined, status: number, ms: number): void;
  /** The same for a path that always answers one (method, route, status): no key built per call; `traceId` (tracing on) is kept as an exemplar. */
  fixed(method: string, route: string, status: number): (ms: number, traceId?: string) => void;
}

/** Registers /metrics and the per-request histogram; returns the recorder the onResponse hook uses. */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, store: Store, { token, listener }: MetricsConfig): ResponseRecorder {
  new Gauge({
    name: 'petstore_store_pool_connections',
    help: 'Database pool connections by state (PostgreSQL; zero for SQLite).',
    labelNames: ['state'] as const,
    registers: [metrics.registry],
    collect() {
      const stats = store.poolStats?.() ?? { total: 0, idle: 0, waiting: 0 };
      this.set({ state: 'total' }, stats.total);
      this.set({ state: 'idle' }, stats.idle);
      this.set({ state: 'waiting' }, stats.waiting);
    },
  });

  // The queue is shared (one database): every worker reports the same figures, so a cluster
  // aggregates them with max, not sum.
  const queue = { depth: 0, oldestAgeSeconds: 0 };
  let queueRead: Promise<void> | undefined;
  const readQueue = () =>
    (queueRead ??= store.messages
      .queueStats()
      .then(
        (stats) => {
          queue.depth = stats.depth;
          queue.oldestAgeSeconds = stats.oldestCreatedAt ? Math.max(0, (Date.now() - Date.parse(stats.oldestCreatedAt)) / 1000) : 0;
        },
        () => undefined, // the database is away: /metrics still answers, with the last figures
      )
      .finally(() => (queueRead = undefined)));
  new Gauge({
    name: 'petstore_message_queue_depth',
    help: 'Example API messages queued and not yet delivered or failed (the whole store).',
    registers: [metrics.registry],
    aggregator: 'max',
    async collect() {
      await readQueue();
      this.set(queue.depth);
    },
  });
  new Gauge({
    name: 'petstore_message_queue_oldest_age_seconds',
    help: 'Age of the oldest queued example API message; 0 when none is queued.',
    registers: [metrics.registry],
    aggregator: 'max',
    async collect() {
      await readQueue();
      this.set(queue.oldestAgeSeconds);
    },
  });

  const webhooks = { pending: 0, oldestAgeSeconds: 0 };
  let webhooksRead: Promise<void> | undefined;
  const readWebhooks = () =>
    (webhooksRead ??= store
      .webhooks.stats()
      .then(
        (stats) => {
          webhooks.pending = stats.pending;
          webhooks.oldestAgeSeconds = stats.oldestCreatedAt ? Math.max(0, (Date.now() - Date.parse(stats.oldestCreatedAt)) / 1000) : 0;
        },
        () => undefined,
      )
      .finally(() => (webhooksRead = undefined)));
  new Gauge({
    name: 'petstore_webhook_deliveries_pending',
    help: 'Webhook deliveries not yet succeeded or failed (the whole store).',
    registers: [metrics.registry],
    aggregator: 'max',
    async collect() {
      await readWebhooks();
      this.set(webhooks.pending);
    },
  });
  new Gauge({
    name: 'petstore_webhook_oldest_pending_age_seconds',
    help: 'Age of the event of the oldest pending webhook delivery; 0 when none is pending.',
    registers: [metrics.registry],
    aggregator: 'max',
    async collect() {
      await readWebhooks();
      this.set(webhooks.oldestAgeSeconds);
    },
  });

  // One bound series per (method, route, status), looked up by a flat string.
  const series = new Map<string, HistogramSeries>();
  const seriesOf = (method: string, matched: string | undefined, status: number): HistogramSeries => {
    // Unmatched URLs share one label so scanners cannot explode the series count.
    const route = matched ?? 'unmatched';
    const id = `${method} ${status} ${route}`;
    let s = series.get(id);
    if (!s) {
      s = metrics.httpDuration.labels({ method, route, status: String(status) });
      series.set(id, s);
    }
    return s;
  };
  const record = ((method, route, status, ms) => seriesOf(method, route, status).observe(ms / 1000)) as ResponseRecorder;
  record.fixed = (method, route, status) => {
    let s: HistogramSeries | undefined;
    // Bound on first use, so the series appears in /metrics only once it has been answered.
    return (ms, traceId) => {
      s ??= seriesOf(method, route, status);
      if (traceId === undefined) s.observe(ms / 1000);
      else s.observeWithExemplar(ms / 1000, traceId);
    };
  };
  const tracing = tracingHooks;
  app.addHook(
    'onResponse',
    tracing
      ? (request, reply, done) => {
          const span = serverSpanOf(request.raw);
          const series = seriesOf(request.method, request.routeOptions.url, reply.statusCode);
          if (span?.sampled) series.observeWithExemplar(reply.elapsedTime / 1000, span.ids.trace_id);
          else series.observe(reply.elapsedTime / 1000);
          done();
        }
      : (request, reply, done) => {
          record(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime);
          done();
        },
  );
  if (tracing) countDroppedSpans(metrics.registry, tracing);

  const scrape = cluster.isWorker && process.send ? clusterScrape(metrics.registry) : () => metrics.registry.metrics();
  // Tracing on: a scrape asking for OpenMetrics gets it, with the latency histogram's trace-id exemplars.
  const openMetrics = tracing && !(cluster.isWorker && process.send) ? () => openMetricsText(metrics.registry) : undefined;
  if (listener) {
    // Not on the public listener at all: its /metrics is an unknown route (404).
    serveMetricsApart(app, listener, async () => ({ contentType: metrics.registry.contentType, body: await scrape() }));
    return record;
  }
  const expected = token ? Buffer.from(`Bearer ${token}`) : undefined;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (expected) {
      const given = Buffer.from(request.headers.authorization ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw new UnauthorizedError('GET /metrics needs `Authorization: Bearer <PETSTORE_METRICS_TOKEN>`.', given.length > 0);
      }
    }
    if (openMetrics && wantsOpenMetrics(request.headers.accept)) return reply.type(Registry.OPENMETRICS_CONTENT_TYPE).send(await openMetrics());
    return reply.type(metrics.registry.contentType).send(await scrape());
  });
  return record;
}
