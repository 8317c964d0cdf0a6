// The quickstart's example API ({api_url} = /example/v1, spec 4.4): its own plugin, its own
// OpenAPI document at /example/v1/openapi.json, the same accounts, keys, rate-limit buckets,
// errors and headers as /v1 (the same hooks, the same error handler).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { DocsConfig } from '../../config.js';
import { sharedSchemas } from '../../schemas/index.js';
import { messageSchemas } from '../../schemas/messages.js';
import type { Services } from '../../services/index.js';
import type { RateLimiter } from '../../services/rate-limit.js';
import { type AuthFailureLimit, createAuthHook } from '../plugins/auth.js';
import type { Metrics } from '../plugins/metrics.js';
import { registerOpenApiDocument } from '../plugins/openapi.js';
import { createRateLimitHook } from '../plugins/rate-limit.js';
import { EXAMPLE_BASE_PATH, messageRoutes } from '../routes/messages.js';
import { createValidatorCompiler, refuseUndeclaredQuery } from '../validation.js';

export const EXAMPLE_OPENAPI_PATH = `${EXAMPLE_BASE_PATH}/openapi.json`;

const DESCRIPTION = `The example API of the Petstore quickstart: send a message, then poll it until it is delivered.

It is not part of the Petstore API: it shows the accept-now, finish-later pattern. \`POST /messages\` answers
**202 Accepted** with the message \`queued\` and a \`Location\`; \`GET /messages/{id}\` tells where it is now
(\`queued\`, then \`delivered\` or \`failed\`).

**Authentication, errors, rate limits**: exactly as in the Petstore API (the same keys, \`{code, message, status}\`
errors, \`RateLimit\` headers and buckets).`;

export interface ExampleApiOptions {
  config: Pick<DocsConfig, 'exampleApiUrl'>;
  services: Services;
  rateLimiter: RateLimiter;
  authFailureLimit: AuthFailureLimit;
  metrics: Metrics;
  /** Receives the served document (for the developer portal's generated pages). */
  onDocument?: (document: () => Record<string, unknown>) => void;
}

export const exampleApi: FastifyPluginAsyncTypebox<ExampleApiOptions> = async (app, { config, services, rateLimiter, authFailureLimit, metrics, onDocument }) => {
  for (const schema of messageSchemas) app.addSchema(schema);
  app.setValidatorCompiler(createValidatorCompiler([...sharedSchemas, ...messageSchemas]));
  const document = await registerOpenApiDocument(app, {
    path: EXAMPLE_OPENAPI_PATH,
    basePath: EXAMPLE_BASE_PATH,
    decorator: 'exampleSwagger',
    info: { title: 'Example API', version: '1.0.0', description: DESCRIPTION },
    servers: [{ url: config.exampleApiUrl, description: 'This server' }],
    tags: [{ name: 'messages', description: 'Messages sent with the quickstart example.' }],
  });
  onDocument?.(document);
  await app.register(async (api) => {
    api.addHook('onRequest', createAuthHook(services.apiKeys, authFailureLimit));
    api.addHook('onRequest', createRateLimitHook(rateLimiter, metrics));
    api.addHook('onRoute', refuseUndeclaredQuery);
    await api.register(messageRoutes, { services });
  });
};
