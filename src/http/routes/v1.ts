// The authenticated API under /v1: who is calling, then whether they may call now (hooks for
// every route registered inside), then each resource's routes, each refusing query parameters
// it does not declare.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Clock } from '../../clock.js';
import type { EventsConfig } from '../../config.js';
import type { Services } from '../../services/index.js';
import type { RateLimiter } from '../../services/rate-limit.js';
import { type AuthFailureLimit, createAuthHook } from '../plugins/auth.js';
import type { Metrics } from '../plugins/metrics.js';
import { createRateLimitHook } from '../plugins/rate-limit.js';
import { refuseUndeclaredQuery } from '../validation.js';
import { orderRoutes } from './orders.js';
import { eventRoutes } from './events.js';
import { eventStreamRoutes } from './event-stream.js';
import { webhookRoutes } from './webhooks.js';
import { type PetWire, petRoutes } from './pets.js';
import { petChangeRoutes } from './pet-changes.js';
import { categoryRoutes } from './categories.js';
import { apiKeyRoutes } from './api-keys.js';
import { auditLogRoutes } from './audit-log.js';

export interface V1Options {
  services: Services;
  clock: Clock;
  rateLimiter: RateLimiter;
  authFailureLimit: AuthFailureLimit;
  metrics: Metrics;
  wire: PetWire;
  events: Pick<EventsConfig, 'streamHeartbeatMs' | 'streamBufferBytes'>;
}

export const v1Routes: FastifyPluginAsyncTypebox<V1Options> = async (app, { services, clock, rateLimiter, authFailureLimit, metrics, wire, events }) => {
  app.addHook('onRequest', createAuthHook(services.apiKeys, authFailureLimit));
  app.addHook('onRequest', createRateLimitHook(rateLimiter, metrics));
  app.addHook('onRoute', refuseUndeclaredQuery);
  await app.register(petRoutes, { services, clock, wire });
  await app.register(petChangeRoutes, { services });
  await app.register(categoryRoutes, { services });
  await app.register(orderRoutes, { services });
  await app.register(eventStreamRoutes, { streams: services.eventStreams, heartbeatMs: events.streamHeartbeatMs, bufferBytes: events.streamBufferBytes });
  await app.register(eventRoutes, { services });
  await app.register(webhookRoutes, { services });
  await app.register(apiKeyRoutes, { services });
  await app.register(auditLogRoutes, { services });
};
