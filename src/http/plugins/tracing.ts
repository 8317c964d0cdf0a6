// Tracing on (src/tracing/switch.ts): @fastify/otel's spans for Fastify's own work (the
// request's hooks and handler, as children of the server span started in instance.ts), and the
// server span told what only Fastify knows: the route template and the account. Not loaded at
// all when tracing is off.
import type { App } from '../plugin.js';
import { serverSpanOf } from '../../tracing/switch.js';

export async function registerTracing(app: App): Promise<void> {
  const { FastifyOtelInstrumentation } = await import('@fastify/otel');
  const instrumentation = new FastifyOtelInstrumentation({ registerOnInitialization: false });
  await app.register(instrumentation.plugin());
  // onSend: the route and the key are known (errors included), and the answer is not written yet.
  app.addHook('onSend', (request, _reply, payload, done) => {
    const span = serverSpanOf(request.raw);
    if (span) {
      const route = request.routeOptions.url;
      if (route !== undefined) span.setRoute(route);
      // The account, never the key (nor its id: the account is what operators search by).
      if (request.auth) span.setAccount(request.auth.accountId);
    }
    done(null, payload);
  });
}
