// The app is assembled from plugins that declare what they need. Fastify itself checks the
// declarations (its plugin-meta: name, dependencies, decorators) when a plugin registers, so a
// plugin registered before what it depends on fails at start, naming both. This is what the
// fastify-plugin package sets; it is not a dependency of ours, and these few symbols are
// Fastify's documented contract.
//
// Every plugin here skips encapsulation (skip-override): what it decorates (store views,
// services, metrics…) and the hooks it adds belong to the whole app. The route plugins it
// registers (v1, the example API, the portal) stay encapsulated, with their own hooks.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync, FastifyPluginOptions } from 'fastify';

/** The app as its plugins see it: TypeBox schemas give route handlers their types. */
export type App = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

/** The plugin names other plugins declare as dependencies. */
export const PLUGIN = {
  core: 'petstore-core',
  metrics: 'petstore-metrics',
  store: 'petstore-store',
  metricsEndpoint: 'petstore-metrics-endpoint',
  services: 'petstore-services',
  rateLimit: 'petstore-rate-limit',
  openApi: 'petstore-openapi',
  health: 'petstore-health',
  portal: 'petstore-portal',
  api: 'petstore-api',
  exampleApi: 'petstore-example-api',
  fastPath: 'petstore-fast-path',
} as const;

type PluginName = (typeof PLUGIN)[keyof typeof PLUGIN];

export function definePlugin<Options extends FastifyPluginOptions>(
  name: PluginName,
  dependencies: readonly PluginName[],
  register: (app: App, options: Options) => Promise<void>,
): FastifyPluginAsync<Options, Server, TypeBoxTypeProvider> {
  const plugin = Object.assign(register, {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: name,
    [Symbol.for('plugin-meta')]: { name, dependencies: [...dependencies], fastify: '5.x' },
  });
  return plugin as unknown as FastifyPluginAsync<Options, Server, TypeBoxTypeProvider>;
}
