// Per-key rate limit, after authentication. Headers follow
// draft-ietf-httpapi-ratelimit-headers-09: RateLimit-Policy and RateLimit on every
// authenticated response; 429 with Retry-After when the bucket is empty.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RateLimitedError } from '../../errors.js';
import type { RateLimiter } from '../../services/rate-limit.js';
import type { Metrics } from './metrics.js';

export function createRateLimitHook(limiter: RateLimiter, metrics: Metrics) {
  const windowSeconds = Math.max(1, Math.ceil(limiter.capacity / limiter.ratePerSecond));
  const policy = `"default";q=${limiter.capacity};w=${windowSeconds}`;
  return async function rateLimit(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!request.auth) return;
    const decision = await limiter.take(request.auth.keyId);
    const headers = {
      'ratelimit-policy': policy,
      ratelimit: `"default";r=${decision.remaining};t=${decision.resetSeconds}`,
    };
    if (!decision.allowed) {
      metrics.rateLimited.inc();
      throw new RateLimitedError(decision.retryAfterSeconds, headers);
    }
    reply.headers(headers);
  };
}
