// The only module that reads process.env: one schema describes every variable (type, default,
// meaning; the README's configuration table is generated from it by scripts/config-table.ts),
// read once at start into typed slices. Each consumer takes only its slice.
import { isIP } from 'node:net';
import Type, { type StaticDecode } from 'typebox';
import { ConfigError, type Env, readEnv } from './env.js';
import { type AllowedNetworks, parseAllowedNetworks } from './webhooks/address-policy.js';
import { type SecretKey, secretKeyFrom } from './webhooks/secret-box.js';
import type { SecretsConfig } from './webhooks/secret-keys.js';

export { ConfigError } from './env.js';

export type Environment = 'production' | 'staging';

/** Standard Webhooks' schedule, in seconds before each attempt: at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h (about three days). */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400];

const int = (minimum: number, maximum: number, fallback: number, description: string) =>
  Type.Integer({ minimum, maximum, default: fallback, description });
const flag = (fallback: boolean, description: string) => Type.Boolean({ default: fallback, description });
const text = (fallback: string, description: string) => Type.String({ default: fallback, description });
const optional = (docDefault: string, description: string) => Type.Optional(Type.String({ docDefault, description }));

/** An absolute URL whose path ends in `suffix` (the version segment), kept without a trailing slash. */
const serverUrl = (suffix: string, fallback: string, description: string) =>
  Type.Codec(Type.String({ default: fallback, description }))
    .Decode((raw: string) => {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        throw new ConfigError(`must be an absolute URL ending in ${suffix}, got "${raw}"`);
      }
      if (!url.pathname.replace(/\/$/, '').endsWith(suffix)) throw new ConfigError(`must end in ${suffix} (the version segment), got "${raw}"`);
      return raw.replace(/\/$/, '');
    })
    .Encode((url: string) => url);

/** A sealing key: 32 bytes in base64. The value is never repeated in an error (it is a secret). */
const secretKey = (description: string) =>
  Type.Optional(
    Type.Codec(Type.String({ docDefault: '(none)', description }))
      .Decode((raw: string): SecretKey => {
        const key = secretKeyFrom(raw);
        if (!key) throw new ConfigError('must be 32 bytes in base64 (make one with `openssl rand -base64 32`); the value given is not');
        return key;
      })
      .Encode((key: SecretKey) => key.key.toString('base64')),
  );

/** `10.0.0.5,10.0.0.0/8,::1`: addresses and CIDRs, checked here so a typo stops the start, not every request. */
function parseTrustedProxies(raw: string): readonly string[] {
  const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^[0-9]{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || extra !== undefined) throw new ConfigError(`must list IP addresses or CIDRs (10.0.0.5, 10.0.0.0/8, ::1), got "${entry}"`);
  }
  return entries;
}

/** Every variable, in the order of the README's table. */
export const ConfigSchema = Type.Object({
  PORT: int(0, 65535, 8080, 'Listen port'),
  HOST: text('127.0.0.1', 'Listen address (`0.0.0.0` to accept remote connections)'),
  PETSTORE_DATABASE_URL: text('./data/petstore.db', 'A file path or `file:` URL selects SQLite (folder created on demand); `postgres://…` selects PostgreSQL'),
  PETSTORE_ENV: Type.Enum(['production', 'staging'], { default: 'production', description: '`production` or `staging`: which keys (`psk_live_` / `psk_test_`) this instance accepts' }),
  PETSTORE_LOG_LEVEL: text('info', 'pino level (`silent` … `trace`)'),
  PETSTORE_PRODUCTION_URL: serverUrl('/v1', 'http://localhost:8080/v1', 'Production server URL published in the OpenAPI document (must end in `/v1`)'),
  PETSTORE_STAGING_URL: serverUrl('/v1', 'https://staging.petstore.example/v1', 'Staging server URL published in the OpenAPI document'),
  PETSTORE_BODY_LIMIT: int(1024, 16 * 1024 * 1024, 64 * 1024, 'Maximum request body, bytes (413 above)'),
  PETSTORE_MIGRATE_ON_START: flag(true, '`serve` applies pending migrations at start; when `false` it refuses to start with pending ones'),
  PETSTORE_DATABASE_WAIT_MS: int(0, 3_600_000, 30_000, '`serve`, `worker` and `migrate` at start: how long to wait for a database that takes no connection yet (PostgreSQL starting, unreachable), retrying with backoff and logging each retry; then exit 1. `0`: fail at once'),
  PETSTORE_PG_POOL_MAX: int(1, 1000, 10, 'PostgreSQL connections per process for writes and transactions'),
  PETSTORE_PG_CONNECT_TIMEOUT_MS: int(100, 120_000, 2000, 'PostgreSQL: how long opening a connection, or waiting for a free one in the pool, may take before the request answers 503 (short: fail fast in an outage rather than queue)'),
  PETSTORE_PG_PIPELINE_CONNECTIONS: int(0, 64, 1, 'PostgreSQL connections per process in pipeline mode for the hot reads (key lookup, `getPet`, `listPets`; see Performance), besides the pool; `0` sends them through the pool. Each process also holds one connection that LISTENs for key revocations'),
  PETSTORE_READ_CACHE: flag(true, 'SQLite only: keep pages and pets in memory, dropped exactly when anything commits (see Performance); `false` reads the file on every request'),
  PETSTORE_FAST_PATH: flag(true, 'Answer `GET /v1/pets` and `GET /v1/pets/{petId}` for a cached key and a cached page or pet before the framework, with identical responses (see Performance); on PostgreSQL, canonical `GET /v1/pets` pages are read from the store there (one pipelined query) and answered the same way. `false` sends every request through Fastify. Needs the in-memory rate limiter (no Redis)'),
  PETSTORE_EXAMPLE_API_URL: serverUrl('/example/v1', 'http://localhost:8080/example/v1', "The quickstart's example API address (`{api_url}`) published in its OpenAPI document (must end in `/example/v1`)"),
  PETSTORE_MESSAGE_WORKER: flag(true, "Run the example API's message delivery worker in this process (`serve` or `worker`); `false` leaves delivery to other processes or instances sharing the database"),
  PETSTORE_REDIS_URL: optional('(none: in memory)', '`redis://…`: share rate-limit buckets across instances'),
  PETSTORE_RATE_LIMIT_PER_SECOND: int(1, 1_000_000, 100, 'Per API key: sustained requests per second'),
  PETSTORE_RATE_LIMIT_BURST: int(1, 1_000_000, 200, 'Per API key: bucket size, the largest burst'),
  PETSTORE_AUTH_FAILURE_LIMIT_PER_SECOND: Type.Number({
    minimum: 0.001,
    maximum: 1_000_000,
    default: 50,
    description: 'Per client address: sustained failed authentications (401) per second, fractions allowed; beyond, 429 `rate_limited` until the bucket refills. Keys that authenticated lately are never slowed by it (see [docs/operations.md](docs/operations.md#failed-authentications))',
  }),
  PETSTORE_AUTH_FAILURE_LIMIT_BURST: int(1, 1_000_000, 500, 'Per client address: failed authentications allowed at once (the bucket size)'),
  PETSTORE_TRUSTED_PROXIES: Type.Codec(
    Type.String({
      default: '',
      docDefault: '(none)',
      description:
        'Comma-separated addresses or CIDRs of load balancers whose `X-Forwarded-For` names the client (for the failed-authentication limit, logs and the audit log); unset: the connecting address is the client',
    }),
  )
    .Decode((raw: string): readonly string[] => parseTrustedProxies(raw))
    .Encode((entries: readonly string[]) => entries.join(',')),
  PETSTORE_METRICS_TOKEN: optional('(none: open)', 'When set, `GET /metrics` needs `Authorization: Bearer <token>`'),
  PETSTORE_METRICS_HOST: text('127.0.0.1', 'Where `serve` answers `/metrics` when `HOST` is not a loopback address and `PETSTORE_METRICS_TOKEN` is unset (the public `/metrics` then answers 404)'),
  PETSTORE_METRICS_PORT: int(0, 65535, 9464, 'The port of that metrics listener (9464: where Prometheus exporters conventionally listen)'),
  PETSTORE_REQUEST_TIMEOUT_MS: int(100, 600_000, 10_000, 'A client must send its whole request within this time (slow clients get 408)'),
  PETSTORE_SHUTDOWN_TIMEOUT_MS: int(0, 600_000, 10_000, 'On SIGTERM/SIGINT: time allowed for requests in flight before exit'),
  PETSTORE_SHUTDOWN_DELAY_MS: int(0, 600_000, 0, 'On SIGTERM/SIGINT: first keep serving with `/readyz` answering 503 for this long, so a load balancer takes the instance out (see [docs/scaling.md](docs/scaling.md))'),
  PETSTORE_EVENTS: flag(true, 'Write the event log (and webhook deliveries) with every change; `false` writes neither'),
  PETSTORE_EVENT_RETENTION_DAYS: int(1, 3650, 30, 'Days events are kept (`GET /v1/events`), 1 to 3650; more than the retry schedule\'s last attempt (with its jitter), whose deliveries go with their events'),
  PETSTORE_EVENT_STREAM_HEARTBEAT_MS: int(100, 600_000, 15_000, 'An open `GET /v1/events/stream` gets a comment line when it has been sent nothing for this long (keeps proxies from cutting it)'),
  PETSTORE_EVENT_STREAM_BUFFER_BYTES: int(1024, 64 * 1024 * 1024, 1024 * 1024, 'A stream whose unsent bytes reach this and do not drain within 5 s is disconnected (a consumer that stopped reading; it resumes by id)'),
  PETSTORE_WEBHOOK_WORKER: flag(true, 'Run the webhook delivery worker in this process (`serve` or `worker`); `false` leaves deliveries to other processes sharing the database'),
  PETSTORE_WEBHOOK_TIMEOUT_MS: int(100, 120_000, 15_000, 'Time a receiver has to answer one delivery attempt'),
  PETSTORE_WEBHOOK_RETRY_SCHEDULE: Type.Array(Type.Number({ minimum: 0, maximum: 7 * 86_400, description: 'delays in seconds' }), {
    minItems: 1,
    maxItems: 50,
    default: DEFAULT_WEBHOOK_RETRY_SCHEDULE,
    description: 'Seconds before each attempt (±20 % jitter); its length is the number of attempts',
  }),
  PETSTORE_WEBHOOK_SECRET_OVERLAP_SECONDS: int(0, 30 * 86_400, 86_400, 'After a secret rotation, how long deliveries are also signed with the previous secret'),
  PETSTORE_WEBHOOK_ALLOW_HTTP: flag(false, 'Also accept `http://` webhook URLs. Development only'),
  PETSTORE_WEBHOOK_ALLOWED_NETWORKS: Type.Codec(
    Type.String({
      default: '',
      docDefault: '(none)',
      description: 'Comma-separated CIDRs deliveries may reach although internal (loopback, private): `127.0.0.1/32,::1/128` for localhost. Development only',
    }),
  )
    .Decode((raw: string): AllowedNetworks => parseAllowedNetworks(raw))
    .Encode((networks: AllowedNetworks) => networks.entries.join(',')),
  PETSTORE_WEBHOOK_CONCURRENCY: int(1, 1024, 64, 'Delivery attempts in flight per process'),
  PETSTORE_WEBHOOK_ENDPOINT_CONCURRENCY: int(1, 1024, 16, 'Delivery attempts in flight per endpoint and process'),
  PETSTORE_WEBHOOK_ACCOUNT_CONCURRENCY: int(1, 1024, 16, "Delivery attempts in flight per account and process: one account's slow receivers never hold more of the process's attempts"),
  PETSTORE_SECRET_KEY: secretKey(
    'Seals webhook signing secrets at rest (AES-256-GCM): 32 bytes, base64. Unset on SQLite: a key file beside the database file (`<file>.secret-key`, mode 0600) made on first start; unset on PostgreSQL: secrets stay plain text (a warning at start and on `/readyz`). See [docs/operations.md](docs/operations.md#sealed-webhook-secrets)',
  ),
  PETSTORE_SECRET_KEY_PREVIOUS: secretKey('During a key rotation: the key being replaced. It only opens secrets sealed under it; `petstore secrets rotate-key` re-seals them under `PETSTORE_SECRET_KEY`'),
  PETSTORE_DOCS: flag(true, 'Serve the [developer portal](#developer-portal) (`/`, `/docs…`); `false` turns it off, keeping `/v1/openapi.json` and `/docs/deprecations`'),
  PETSTORE_WORKER_PORT: int(0, 65535, 9465, '`petstore worker` (the background workers without the API) serves `/metrics`, `/healthz` and `/readyz` on this port, on `HOST`'),
});

export type EnvValues = StaticDecode<typeof ConfigSchema>;

export interface HttpConfig {
  host: string;
  /** Addresses and CIDRs whose X-Forwarded-For is believed (Fastify's trustProxy); empty: none. */
  trustedProxies: readonly string[];
  port: number;
  /** Maximum request body in bytes. */
  bodyLimit: number;
  /** A client must send its whole request (headers and body) within this many ms. */
  requestTimeoutMs: number;
  /** Answer cached GET /v1/pets and GET /v1/pets/{petId} before Fastify (src/http/fast-path.ts). */
  fastPath: boolean;
}

export interface DatabaseConfig {
  /** SQLite file path or postgres:// URL. */
  url: string;
  /** Apply pending migrations at start (`serve`, `worker`); otherwise refuse to start with pending ones. */
  migrateOnStart: boolean;
  /** `serve`, `worker`, `migrate`: how long to wait at start for the database to take connections, in ms. */
  waitMs: number;
  /** PostgreSQL pool size per process. */
  pgPoolMax: number;
  /** PostgreSQL: the longest wait for a new or a free pooled connection, in ms. */
  pgConnectTimeoutMs: number;
  /** PostgreSQL connections in pipeline mode for the hot reads; 0 sends them through the pool. */
  pgPipelineConnections: number;
  /** SQLite only: cache pages and pets in memory, invalidated on every commit. */
  readCache: boolean;
}

export interface EventsConfig {
  /** Write the event log (and webhook deliveries) with every change. */
  enabled: boolean;
  /** Events older than this many days are pruned in the background. */
  retentionDays: number;
  /** GET /v1/events/stream: a comment after this long without a write. */
  streamHeartbeatMs: number;
  /** GET /v1/events/stream: unsent bytes that, not drained within the grace, cut the stream. */
  streamBufferBytes: number;
}

export interface DocsConfig {
  /** Serve the developer portal (/, /docs…); the OpenAPI documents are served either way. */
  portal: boolean;
  /** Server URLs published in the OpenAPI document; both end in /v1. */
  productionUrl: string;
  stagingUrl: string;
  /** The example API's published address ({api_url}); ends in /example/v1. */
  exampleApiUrl: string;
}

export interface RateLimitsConfig {
  /** Per API key: sustained requests per second, and the bucket size (largest burst). */
  perSecond: number;
  burst: number;
  /** Redis URL for shared rate limits; undefined means in memory. */
  redisUrl: string | undefined;
  /** Per client address: failed authentications per second, and the bucket size. */
  authFailuresPerSecond: number;
  authFailuresBurst: number;
}

export interface ShutdownConfig {
  /** How long to wait for in-flight requests on SIGTERM, in ms. */
  timeoutMs: number;
  /** On SIGTERM, how long to keep serving with /readyz answering 503 before closing, in ms. */
  delayMs: number;
}

export interface WebhooksConfig {
  /** A delivery attempt without a response within this many ms fails (and is retried). */
  timeoutMs: number;
  /** Seconds to wait before each attempt: the first entry before the first attempt, and so on. */
  retrySchedule: readonly number[];
  /** After a rotation, the previous secret keeps signing for this many seconds. */
  secretOverlapSeconds: number;
  /** Networks deliveries may connect to although the address policy refuses them (development, tests). */
  allowedNetworks: AllowedNetworks;
  /** Allow http:// endpoint URLs (development, tests). */
  allowHttp: boolean;
  /** Most deliveries in flight at once in one process, and to one endpoint. */
  concurrency: number;
  endpointConcurrency: number;
  /** Most deliveries in flight at once for one account, in one process (its share). */
  accountConcurrency: number;
}

export interface MetricsConfig {
  token: string | undefined;
  /** Where `serve` answers /metrics instead of its public listener; undefined: on the public listener. */
  listener: { host: string; port: number } | undefined;
}

/** 127.0.0.0/8, ::1 and localhost: only this machine can connect. */
export const isLoopbackHost = (host: string): boolean =>
  host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);

export interface WorkersConfig {
  /** Run the message delivery worker in this process. */
  messages: boolean;
  /** Run the webhook delivery worker in this process. */
  webhooks: boolean;
  /** `petstore worker`'s port for /metrics, /healthz and /readyz. */
  port: number;
}

export interface Config {
  environment: Environment;
  http: HttpConfig;
  database: DatabaseConfig;
  events: EventsConfig;
  logging: { level: string };
  docs: DocsConfig;
  rateLimits: RateLimitsConfig;
  metrics: MetricsConfig;
  shutdown: ShutdownConfig;
  webhooks: WebhooksConfig;
  workers: WorkersConfig;
  secrets: SecretsConfig;
}

/** The published URLs default to this host's port (PORT), 8080 when it is 0 or unset. */
function withDerivedDefaults(env: Env): Env {
  const port = Number(env.PORT) || 8080;
  const given = (name: string) => (env[name]?.trim() ? env[name] : undefined);
  return {
    ...env,
    PETSTORE_PRODUCTION_URL: given('PETSTORE_PRODUCTION_URL') ?? `http://localhost:${port}/v1`,
    PETSTORE_EXAMPLE_API_URL: given('PETSTORE_EXAMPLE_API_URL') ?? `http://localhost:${port}/example/v1`,
  };
}

/**
 * Pruning takes an event's deliveries with it, pending or not: events must outlive the last
 * attempt of the retry schedule (its delays summed, with their +20 % jitter).
 */
function checkRetentionCoversRetries(retentionDays: number, schedule: readonly number[]): void {
  const lastAttemptDays = (1.2 * schedule.reduce((sum, delay) => sum + delay, 0)) / 86_400;
  if (retentionDays > lastAttemptDays) return;
  throw new ConfigError(
    `PETSTORE_EVENT_RETENTION_DAYS=${retentionDays} is too short for PETSTORE_WEBHOOK_RETRY_SCHEDULE, whose last attempt may come ` +
      `${lastAttemptDays.toFixed(1)} days after its event: a delivery still being retried would be pruned with it. ` +
      `Keep events at least ${Math.floor(lastAttemptDays) + 1} days, or shorten the schedule.`,
  );
}

export function loadConfig(env: Env = process.env): Config {
  const v = readEnv(ConfigSchema, withDerivedDefaults(env));
  checkRetentionCoversRetries(v.PETSTORE_EVENT_RETENTION_DAYS, v.PETSTORE_WEBHOOK_RETRY_SCHEDULE);
  return {
    environment: v.PETSTORE_ENV,
    http: {
      host: v.HOST,
      trustedProxies: v.PETSTORE_TRUSTED_PROXIES,
      port: v.PORT,
      bodyLimit: v.PETSTORE_BODY_LIMIT,
      requestTimeoutMs: v.PETSTORE_REQUEST_TIMEOUT_MS,
      fastPath: v.PETSTORE_FAST_PATH,
    },
    database: {
      url: v.PETSTORE_DATABASE_URL,
      migrateOnStart: v.PETSTORE_MIGRATE_ON_START,
      waitMs: v.PETSTORE_DATABASE_WAIT_MS,
      pgPoolMax: v.PETSTORE_PG_POOL_MAX,
      pgConnectTimeoutMs: v.PETSTORE_PG_CONNECT_TIMEOUT_MS,
      pgPipelineConnections: v.PETSTORE_PG_PIPELINE_CONNECTIONS,
      readCache: v.PETSTORE_READ_CACHE,
    },
    events: {
      enabled: v.PETSTORE_EVENTS,
      retentionDays: v.PETSTORE_EVENT_RETENTION_DAYS,
      streamHeartbeatMs: v.PETSTORE_EVENT_STREAM_HEARTBEAT_MS,
      streamBufferBytes: v.PETSTORE_EVENT_STREAM_BUFFER_BYTES,
    },
    logging: { level: v.PETSTORE_LOG_LEVEL },
    docs: {
      portal: v.PETSTORE_DOCS,
      productionUrl: v.PETSTORE_PRODUCTION_URL,
      stagingUrl: v.PETSTORE_STAGING_URL,
      exampleApiUrl: v.PETSTORE_EXAMPLE_API_URL,
    },
    rateLimits: { perSecond: v.PETSTORE_RATE_LIMIT_PER_SECOND, burst: v.PETSTORE_RATE_LIMIT_BURST, redisUrl: v.PETSTORE_REDIS_URL,
      authFailuresPerSecond: v.PETSTORE_AUTH_FAILURE_LIMIT_PER_SECOND,
      authFailuresBurst: v.PETSTORE_AUTH_FAILURE_LIMIT_BURST,
    },
    metrics: {
      token: v.PETSTORE_METRICS_TOKEN,
      // Metrics label account ids: open on a public listener only by the operator's choice (a token).
      listener: isLoopbackHost(v.HOST) || v.PETSTORE_METRICS_TOKEN !== undefined ? undefined : { host: v.PETSTORE_METRICS_HOST, port: v.PETSTORE_METRICS_PORT },
    },
    shutdown: { timeoutMs: v.PETSTORE_SHUTDOWN_TIMEOUT_MS, delayMs: v.PETSTORE_SHUTDOWN_DELAY_MS },
    webhooks: {
      timeoutMs: v.PETSTORE_WEBHOOK_TIMEOUT_MS,
      retrySchedule: v.PETSTORE_WEBHOOK_RETRY_SCHEDULE,
      secretOverlapSeconds: v.PETSTORE_WEBHOOK_SECRET_OVERLAP_SECONDS,
      allowedNetworks: v.PETSTORE_WEBHOOK_ALLOWED_NETWORKS,
      allowHttp: v.PETSTORE_WEBHOOK_ALLOW_HTTP,
      concurrency: v.PETSTORE_WEBHOOK_CONCURRENCY,
      endpointConcurrency: v.PETSTORE_WEBHOOK_ENDPOINT_CONCURRENCY,
      accountConcurrency: v.PETSTORE_WEBHOOK_ACCOUNT_CONCURRENCY,
    },
    workers: { messages: v.PETSTORE_MESSAGE_WORKER, webhooks: v.PETSTORE_WEBHOOK_WORKER, port: v.PETSTORE_WORKER_PORT },
    secrets: { key: v.PETSTORE_SECRET_KEY, previousKey: v.PETSTORE_SECRET_KEY_PREVIOUS },
  };
}
