// The plugins that serve: the OpenAPI documents, health, the developer portal, the API under /v1,
// the example API, and the fast path in front of GET /v1/pets and GET /v1/pets/{petId}.
import type { Clock } from '../../clock.js';
import type { DocsConfig, EventsConfig } from '../../config.js';
import { startEventWakeups } from '../../runtime/event-wakeups.js';
import type { Wakeups } from '../../runtime/wakeups.js';
import { exampleApi } from '../example/index.js';
import { createFastPath } from '../fast-path.js';
import { clientAddressOf, type Instance } from '../instance.js';
import { definePlugin, PLUGIN } from '../plugin.js';
import { portal } from '../portal/plugin.js';
import { healthRoutes } from '../routes/health.js';
import { createPetWire, type PetWire } from '../routes/pets.js';
import { v1Routes } from '../routes/v1.js';
import { mcpRoutes } from '../routes/mcp.js';
import { registerOpenApi } from './openapi.js';

type Document = () => Record<string, unknown>;

declare module 'fastify' {
  interface FastifyInstance {
    /** The served OpenAPI documents (the Petstore's, then the example API's), built once the app is ready. */
    openApiDocuments: Document[];
    /** The cached JSON of pets and pages, shared by the pet routes and the fast path. */
    petWire: PetWire;
  }
}

export const openApiPlugin = definePlugin<Pick<DocsConfig, 'productionUrl' | 'stagingUrl'>>(PLUGIN.openApi, [PLUGIN.core], async (app, urls) => {
  app.decorate('openApiDocuments', [await registerOpenApi(app, urls)]);
});

export const healthPlugin = definePlugin<Record<never, never>>(PLUGIN.health, [PLUGIN.store], async (app) => {
  // The raw store: a readiness probe is not a query worth timing.
  await app.register(healthRoutes, { store: app.stores.raw });
});

export const portalPlugin = definePlugin<{ enabled: boolean }>(PLUGIN.portal, [PLUGIN.openApi], async (app, { enabled }) => {
  const documents = app.openApiDocuments;
  await app.register(portal, { enabled, openApiDocuments: () => documents.map((document) => document()) });
});

export const apiPlugin = definePlugin<{ clock: Clock; events: EventsConfig; wakeups: Wakeups }>(
  PLUGIN.api,
  [PLUGIN.openApi, PLUGIN.services, PLUGIN.rateLimit, PLUGIN.metrics],
  async (app, { clock, events, wakeups }) => {
    const wire = createPetWire(app.metrics);
    app.decorate('petWire', wire);
    const { services, rateLimiter, authFailureLimit, metrics } = app;
    // Event streams read the log when anyone commits events (this process or another).
    const eventWakeups = startEventWakeups(services.eventStreams, app.stores.raw, wakeups);
    app.addHook('onClose', () => eventWakeups.stop());
    await app.register(v1Routes, { services, clock, rateLimiter, authFailureLimit, metrics, wire, events });
    const documents = app.openApiDocuments;
    mcpRoutes(app, { apiKeys: services.apiKeys, authFailureLimit, documents: () => documents.map((document) => document()) });
  },
);

export const exampleApiPlugin = definePlugin<Pick<DocsConfig, 'exampleApiUrl'>>(
  PLUGIN.exampleApi,
  [PLUGIN.openApi, PLUGIN.services, PLUGIN.rateLimit, PLUGIN.metrics],
  async (app, config) => {
    const documents = app.openApiDocuments;
    await app.register(exampleApi, {
      config,
      services: app.services,
      rateLimiter: app.rateLimiter,
      authFailureLimit: app.authFailureLimit,
      metrics: app.metrics,
      onDocument: (document) => void documents.push(document),
    });
  },
);

export const fastPathPlugin = definePlugin<{ clock: Clock; trustedProxies: readonly string[] } & Pick<Instance, 'requestId' | 'intercept'>>(
  PLUGIN.fastPath,
  [PLUGIN.core, PLUGIN.api, PLUGIN.metricsEndpoint, PLUGIN.rateLimit],
  async (app, { clock, requestId, intercept, trustedProxies }) => {
    intercept(
      createFastPath({
        readFromStore: app.stores.raw.kind === 'postgres',
        services: app.services,
        rateLimiter: app.rateLimiter,
        clientAddress: clientAddressOf(trustedProxies),
        clock,
        wire: app.petWire,
        record: app.recordResponse,
        answered: app.metrics.fastPathAnswered,
        requestId,
        closing: app.isClosing,
        log: app.log,
      }),
    );
  },
);
