// Per-key rate limit, after authentication. Headers follow
// draft-ietf-httpapi-ratelimit-headers-09: RateLimit-Policy and RateLimit on every
// authenticated response; 429 with Retry-After when the bucket is empty.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { RateLimitedError } from '../../errors.js';
import type { RateLimitDecision, RateLimiter } from '../../services/rate-limit.js';
import type { Metrics } from './metrics.js';

/** The RateLimit-Policy value of a limiter, and the RateLimit value of one decision. */
export function rateLimitHeaderValues(limiter: RateLimiter) {
  const windowSeconds = Math.max(1, Math.ceil(limiter.capacity / limiter.ratePerSecond));
  return {
    policy: `"default";q=${limiter.capacity};w=${windowSeconds}`,
    of: (decision: RateLimitDecision) => `"default";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

export function createRateLimitHook(limiter: RateLimiter, metrics: Metrics) {
  const values = rateLimitHeaderValues(limiter);

  function apply(decision: RateLimitDecision, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const headers = { 'ratelimit-policy': values.policy, ratelimit: values.of(decision) };
    if (!decision.allowed) {
      metrics.rateLimited.inc();
      done(new RateLimitedError(decision.retryAfterSeconds, headers));
      return;
    }
    reply.headers(headers);
    done();
  }

  // Callback style: the in-memory limiter decides synchronously, with no promise per request.
  return function rateLimit(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    if (!request.auth) {
      done();
      return;
    }
    const key = request.auth.keyId;
    if (limiter.takeNow) {
      apply(limiter.takeNow(key), reply, done);
      return;
    }
    limiter.take(key).then((decision) => apply(decision, reply, done), done);
  };
}
