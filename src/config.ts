// The only module that reads process.env. Everything else receives a Config.
import path from 'node:path';

export type Environment = 'production' | 'staging';

export interface Config {
  host: string;
  port: number;
  /** SQLite file path or postgres:// URL. */
  databaseUrl: string;
  environment: Environment;
  logLevel: string;
  /** Server URLs published in the OpenAPI document; both end in /v1. */
  productionUrl: string;
  stagingUrl: string;
  /** Maximum request body in bytes. */
  bodyLimit: number;
  /** Apply pending migrations when `serve` starts. */
  migrateOnStart: boolean;
  /** PostgreSQL pool size per process. */
  pgPoolMax: number;
  /** PostgreSQL connections in pipeline mode for the hot reads; 0 sends them through the pool. */
  pgPipelineConnections: number;
  /** SQLite only: cache pages and pets in memory, invalidated on every commit (PostgreSQL never caches). */
  readCache: boolean;
  /** Answer cached GET /v1/pets and GET /v1/pets/{petId} before Fastify (src/http/fast-path.ts). */
  fastPath: boolean;
  /** The example API's published address ({api_url}), in its own OpenAPI document; ends in /example/v1. */
  exampleApiUrl: string;
  /** Run the message delivery worker in this process (every server process does by default). */
  messageWorker: boolean;
  /** Redis URL for shared rate limits; undefined means in-memory. */
  redisUrl: string | undefined;
  /** Per API key: sustained requests per second, and the bucket size (largest burst). */
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  /** When set, GET /metrics requires `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  /** A client must send its whole request (headers and body) within this many ms. */
  requestTimeoutMs: number;
  /** How long to wait for in-flight requests on SIGTERM, in ms. */
  shutdownTimeoutMs: number;
  /**
   * On SIGTERM, how long to keep serving with /readyz answering 503 before closing, in ms, so
   * the load balancer's health check takes the instance out before it refuses anything.
   */
  shutdownDelayMs: number;
  /** Serve the developer portal (/, /docs…); the OpenAPI documents are served either way. */
  docs: boolean;
  /** Write the event log (and webhook deliveries) with every change. */
  events: boolean;
  /** Events older than this many days are pruned in the background. */
  eventRetentionDays: number;
  /** Run the webhook delivery worker in this process (every server process does by default). */
  webhookWorker: boolean;
  /** A delivery attempt without a response within this many ms fails (and is retried). */
  webhookTimeoutMs: number;
  /** Seconds to wait before each attempt: the first entry before the first attempt, and so on. */
  webhookRetrySchedule: number[];
  /** After a rotation, the previous secret keeps signing for this many seconds. */
  webhookSecretOverlapSeconds: number;
  /** IPs or CIDRs webhook deliveries may connect to although the address policy refuses them (development, tests). */
  webhookAllowedNetworks: string | undefined;
  /** Allow http:// endpoint URLs (development, tests). */
  webhookAllowHttp: boolean;
  /** Most deliveries in flight at once in one process, and to one endpoint. */
  webhookConcurrency: number;
  webhookEndpointConcurrency: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function serverUrl(env: Env, name: string, fallback: string, suffix = '/v1'): string {
  const raw = env[name] || fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL ending in ${suffix}, got "${raw}"`);
  }
  if (!url.pathname.replace(/\/$/, '').endsWith(suffix)) {
    throw new ConfigError(`${name} must end in ${suffix} (the version segment), got "${raw}"`);
  }
  return raw.replace(/\/$/, '');
}

/** Standard Webhooks' schedule, in seconds before each attempt: at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h (about three days). */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400];

function schedule(env: Env, name: string, fallback: number[]): number[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const values = raw.split(',').map((part) => Number(part.trim()));
  if (values.length > 50 || values.some((v) => !Number.isFinite(v) || v < 0 || v > 7 * 86400) || raw.split(',').some((p) => p.trim() === '')) {
    throw new ConfigError(`${name} must be a comma-separated list of 1 to 50 delays in seconds (0 to 604800 each), got "${raw}"`);
  }
  return values;
}

export const DEFAULT_DATABASE_URL = path.join('data', 'petstore.db');

export function loadConfig(env: Env = process.env): Config {
  const environment = env.PETSTORE_ENV || 'production';
  if (environment !== 'production' && environment !== 'staging') {
    throw new ConfigError(`PETSTORE_ENV must be "production" or "staging", got "${environment}"`);
  }
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  return {
    host,
    port,
    databaseUrl: env.PETSTORE_DATABASE_URL || DEFAULT_DATABASE_URL,
    environment,
    logLevel: env.PETSTORE_LOG_LEVEL || 'info',
    productionUrl: serverUrl(env, 'PETSTORE_PRODUCTION_URL', `http://localhost:${port || 8080}/v1`),
    stagingUrl: serverUrl(env, 'PETSTORE_STAGING_URL', 'https://staging.petstore.example/v1'),
    bodyLimit: integer(env, 'PETSTORE_BODY_LIMIT', 64 * 1024, 1024, 16 * 1024 * 1024),
    migrateOnStart: boolean(env, 'PETSTORE_MIGRATE_ON_START', true),
    pgPoolMax: integer(env, 'PETSTORE_PG_POOL_MAX', 10, 1, 1000),
    pgPipelineConnections: integer(env, 'PETSTORE_PG_PIPELINE_CONNECTIONS', 1, 0, 64),
    readCache: boolean(env, 'PETSTORE_READ_CACHE', true),
    fastPath: boolean(env, 'PETSTORE_FAST_PATH', true),
    exampleApiUrl: serverUrl(env, 'PETSTORE_EXAMPLE_API_URL', `http://localhost:${port || 8080}/example/v1`, '/example/v1'),
    messageWorker: boolean(env, 'PETSTORE_MESSAGE_WORKER', true),
    redisUrl: env.PETSTORE_REDIS_URL || undefined,
    rateLimitPerSecond: integer(env, 'PETSTORE_RATE_LIMIT_PER_SECOND', 100, 1, 1_000_000),
    rateLimitBurst: integer(env, 'PETSTORE_RATE_LIMIT_BURST', 200, 1, 1_000_000),
    metricsToken: env.PETSTORE_METRICS_TOKEN || undefined,
    requestTimeoutMs: integer(env, 'PETSTORE_REQUEST_TIMEOUT_MS', 10_000, 100, 600_000),
    shutdownTimeoutMs: integer(env, 'PETSTORE_SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    shutdownDelayMs: integer(env, 'PETSTORE_SHUTDOWN_DELAY_MS', 0, 0, 600_000),
    docs: boolean(env, 'PETSTORE_DOCS', true),
    events: boolean(env, 'PETSTORE_EVENTS', true),
    eventRetentionDays: integer(env, 'PETSTORE_EVENT_RETENTION_DAYS', 30, 1, 3650),
    webhookWorker: boolean(env, 'PETSTORE_WEBHOOK_WORKER', true),
    webhookTimeoutMs: integer(env, 'PETSTORE_WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
    webhookRetrySchedule: schedule(env, 'PETSTORE_WEBHOOK_RETRY_SCHEDULE', DEFAULT_WEBHOOK_RETRY_SCHEDULE),
    webhookSecretOverlapSeconds: integer(env, 'PETSTORE_WEBHOOK_SECRET_OVERLAP_SECONDS', 86_400, 0, 30 * 86_400),
    webhookAllowedNetworks: env.PETSTORE_WEBHOOK_ALLOWED_NETWORKS || undefined,
    webhookAllowHttp: boolean(env, 'PETSTORE_WEBHOOK_ALLOW_HTTP', false),
    webhookConcurrency: integer(env, 'PETSTORE_WEBHOOK_CONCURRENCY', 64, 1, 1024),
    webhookEndpointConcurrency: integer(env, 'PETSTORE_WEBHOOK_ENDPOINT_CONCURRENCY', 16, 1, 1024),
  };
}
