// Per-API-key token buckets: `capacity` requests at once, refilled at `ratePerSecond`.
// In memory by default; with Redis, one bucket per key is shared by every instance
// (an atomic Lua script on Redis time). If Redis fails, requests are allowed
// (fail open) and the failure is reported, so a cache outage never takes the API down.
import { Redis } from 'ioredis';
import { hooks as tracingHooks } from '../tracing/switch.js';

const REDIS_SPAN = { 'db.system.name': 'redis', 'db.operation.name': 'EVALSHA', 'db.stored_procedure.name': 'petstoreTake' };

export interface RateLimitDecision {
  allowed: boolean;
  /** Whole requests left in the bucket after this one. */
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until the next request would be allowed (0 when allowed). */
  retryAfterSeconds: number;
}

export interface RateLimiter {
  readonly ratePerSecond: number;
  readonly capacity: number;
  take(bucket: string): Promise<RateLimitDecision>;
  /** The same decision synchronously, for limiters that need no I/O (in memory). */
  takeNow?(bucket: string): RateLimitDecision;
  close(): Promise<void>;
}

export interface RateLimitOptions {
  ratePerSecond: number;
  capacity: number;
  now?: () => number;
}

function decide(tokens: number, allowed: boolean, { ratePerSecond, capacity }: RateLimitOptions): RateLimitDecision {
  return {
    allowed,
    remaining: Math.max(0, Math.floor(tokens)),
    resetSeconds: Math.ceil((capacity - tokens) / ratePerSecond),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / ratePerSecond)),
  };
}

export function createMemoryRateLimiter(options: RateLimitOptions): RateLimiter {
  const { ratePerSecond, capacity, now = Date.now } = options;
  const buckets = new Map<string, { tokens: number; at: number }>();
  const fullAfterMs = (capacity / ratePerSecond) * 1000;
  // Full buckets carry no information: drop them so the map stays bounded.
  const sweep = setInterval(() => {
    const t = now();
    for (const [key, b] of buckets) if (t - b.at > fullAfterMs) buckets.delete(key);
  }, Math.max(1000, fullAfterMs));
  sweep.unref();

  function takeNow(key: string): RateLimitDecision {
    const t = now();
    const b = buckets.get(key) ?? { tokens: capacity, at: t };
    // A wall clock stepped back (NTP, a resumed VM) refills nothing, and takes nothing: as in Redis.
    b.tokens = Math.min(capacity, b.tokens + (Math.max(0, t - b.at) * ratePerSecond) / 1000);
    b.at = t;
    const allowed = b.tokens >= 1;
    if (allowed) b.tokens -= 1;
    buckets.set(key, b);
    return decide(b.tokens, allowed, options);
  }

  return {
    ratePerSecond,
    capacity,
    takeNow,
    async take(key) {
      return takeNow(key);
    },
    async close() {
      clearInterval(sweep);
    },
  };
}

const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate / 1000)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
return { allowed, tostring(tokens) }
`;

export function createRedisRateLimiter(
  url: string,
  options: RateLimitOptions & { onError: (err: unknown) => void; timeoutMs?: number },
): RateLimiter {
  const redis = new Redis(url, {
    // Commands may wait for a (re)connection, but never past `timeoutMs` (see take),
    // and are dropped at the first failed reconnect rather than retried.
    enableOfflineQueue: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    lazyConnect: false,
  });
  redis.on('error', () => undefined); // reported per request through onError
  redis.defineCommand('petstoreTake', { numberOfKeys: 1, lua: TAKE_SCRIPT });
  const timeoutMs = options.timeoutMs ?? 200;
  const script = redis as unknown as { petstoreTake(key: string, rate: number, capacity: number): Promise<[number, string]> };
  const tracing = tracingHooks;
  // Tracing on: each call a client span (the key is the API key's id, not the key: still left out).
  const call: typeof script = tracing
    ? { petstoreTake: (...args) => tracing.inSpan('EVALSHA', [], REDIS_SPAN, () => script.petstoreTake(...args), 'client') }
    : script;

  return {
    ratePerSecond: options.ratePerSecond,
    capacity: options.capacity,
    async take(key) {
      let timer: NodeJS.Timeout | undefined;
      try {
        const [allowed, tokens] = await Promise.race([
          call.petstoreTake(`petstore:ratelimit:${key}`, options.ratePerSecond, options.capacity),
          new Promise<never>((_, reject) => {
            // Refused only after the loop has read its sockets once more (setImmediate runs after
            // the poll phase): on a busy machine the timer comes due with the answer already
            // received and unread, and a late loop is not Redis being away.
            timer = setTimeout(() => setImmediate(() => reject(new Error(`Redis did not answer within ${timeoutMs} ms`))), timeoutMs);
          }),
        ]);
        return decide(Number(tokens), allowed === 1, options);
      } catch (err) {
        options.onError(err);
        return decide(options.capacity, true, options);
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      redis.disconnect();
    },
  };
}
