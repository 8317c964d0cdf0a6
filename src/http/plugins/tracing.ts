// Tracing on (src/tracing/switch.ts): @fastify/otel's spans for Fastify's own work (the
// request's hooks and handler, as children of the server span started in instance.ts), and the
// server span told what only Fastify knows: the route template and the account. Not loaded at
// all when tracing is off.
import type { App } from '../plugin.js';
import { serverSpanOf } from '../../tracing/switch.js';

const pathOf = (url: string) => {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
};

export async function registerTracing(app: App): Promise<void> {
  const [{ FastifyOtelInstrumentation }, { activeSampled }] = await Promise.all([import('@fastify/otel'), import('../../tracing/spans.js')]);
  const instrumentation = new FastifyOtelInstrumentation({
    registerOnInitialization: false,
    // The request and handler spans only, not one per lifecycle hook: a request passes ~15 hooks,
    // and each wrapped one costs every request (sampled or not) the instrumentation's checks.
    instrumentHooks: false,
    // Spans for the hooks and handler only under a sampled server span (instance.ts starts one
    // for every request, and enters its context only when sampled): a dropped request's would be
    // dropped too, after costing a span and a context each. Where the context is lost (after the
    // body is read) the instrumentation uses the request's own, and its spans follow the sampling
    // decision. It is also asked when a route is added (its options carry the handler): never then.
    ignorePaths: (route) => !('handler' in route) && activeSampled() !== true,
    // url.path is the path: a query may carry what does not belong in a trace (a cursor, a mistyped key).
    requestHook: (span, request) => span.setAttribute('url.path', pathOf(request.url)),
  });
  // A dropped request stops at isEnabled(), where ignorePaths would stop it a little later: before
  // the instrumentation reads routeOptions (a getter that builds an object) twice and formats
  // two debug messages nobody logs. Decided by the request's own context, as ignorePaths is (its
  // enable/disable logic reads its flag, not this method).
  const enabled = instrumentation.isEnabled.bind(instrumentation);
  instrumentation.isEnabled = () => activeSampled() === true && enabled();
  await app.register(instrumentation.plugin());
  // onSend: the route and the key are known (errors included), and the answer is not written yet.
  app.addHook('onSend', (request, _reply, payload, done) => {
    const span = serverSpanOf(request.raw);
    // A dropped request's span records nothing (and routeOptions is a getter that builds an object).
    if (span?.sampled) {
      const route = request.routeOptions.url;
      if (route !== undefined) span.setRoute(route);
      // The account, never the key (nor its id: the account is what operators search by).
      if (request.auth) span.setAccount(request.auth.accountId);
    }
    done(null, payload);
  });
}
