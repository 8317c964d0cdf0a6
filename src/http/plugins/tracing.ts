// Tracing on (src/tracing/switch.ts): @fastify/otel's spans for Fastify's own work (the
// request's hooks and handler, as children of the server span started in instance.ts), and the
// server span told what only Fastify knows: the route template and the account. Not loaded at
// all when tracing is off.
import type { IncomingMessage } from 'node:http';
import type { App } from '../plugin.js';
import { serverSpanOf } from '../../tracing/switch.js';

const pathOf = (url: string) => {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
};

type Hook = (this: unknown, ...args: never[]) => unknown;
type RouteHooks = { handler: Hook; onSend?: Hook | Hook[]; onError?: Hook | Hook[] };
const hookList = (hooks: Hook | Hook[] | undefined): Hook[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]);
/** What @fastify/otel added to a route's hooks, given the hooks before it wired the route. */
const addedTo = (before: Hook | Hook[] | undefined, after: Hook | Hook[] | undefined): Hook | undefined => hookList(after).find((h) => !hookList(before).includes(h));

/** @fastify/otel's own onSend and onError hooks (one function each, the same for every route), taken off the routes. */
interface RequestSpanHooks {
  endRequestSpan?: Hook;
  recordError?: Hook;
}

/**
 * Registers @fastify/otel, which wraps every route's handler and appends an onSend and an onError
 * hook to it. For a dropped request the wrapper only decides to do nothing, but on the way it
 * reads routeOptions (a getter that builds an object) three times and formats two debug messages:
 * ~2 % of a create's instructions, at any ratio (docs/performance.md). So each route keeps both
 * handlers and picks by the request's sampling decision, and the two hooks are returned for
 * registerTracing's own to call for a sampled request only.
 */
async function untracedWhenDropped(app: App, registerInstrumentation: () => PromiseLike<unknown>): Promise<RequestSpanHooks> {
  const hooks: RequestSpanHooks = {};
  const plain = new WeakMap<object, RouteHooks>();
  app.addHook('onRoute', (route) => {
    const r = route as unknown as RouteHooks;
    plain.set(route, { handler: r.handler, onSend: r.onSend, onError: r.onError });
  });
  // Its onRoute hook is added when it loads: ours below must come after it.
  await registerInstrumentation();
  app.addHook('onRoute', (route) => {
    const r = route as unknown as RouteHooks;
    const before = plain.get(route);
    if (!before) return;
    hooks.endRequestSpan ??= addedTo(before.onSend, r.onSend);
    hooks.recordError ??= addedTo(before.onError, r.onError);
    r.onSend = before.onSend;
    r.onError = before.onError;
    if (r.handler === before.handler) return;
    const traced = r.handler;
    const untraced = before.handler;
    r.handler = function (this: unknown, request: { raw: IncomingMessage }, reply: unknown) {
      return (serverSpanOf(request.raw)?.sampled ? traced : untraced).call(this, request as never, reply as never);
    };
  });
  return hooks;
}

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
  // Where a dropped request still meets the instrumentation (its onRequest hook, the not-found
  // handler's wrapper), it stops at isEnabled(), before ignorePaths would: before routeOptions is
  // read twice and two debug messages nobody logs are formatted. Decided by the request's own
  // context, as ignorePaths is (its enable/disable logic reads its flag, not this method).
  const enabled = instrumentation.isEnabled.bind(instrumentation);
  instrumentation.isEnabled = () => activeSampled() === true && enabled();
  const hooks = await untracedWhenDropped(app, () => app.register(instrumentation.plugin()));
  // onSend: the route and the key are known (errors included), and the answer is not written yet.
  app.addHook('onSend', function (request, reply, payload, done) {
    const span = serverSpanOf(request.raw);
    // A dropped request's span records nothing (and routeOptions is a getter that builds an object).
    if (!span?.sampled) return done(null, payload);
    const route = request.routeOptions.url;
    if (route !== undefined) span.setRoute(route);
    // The account, never the key (nor its id: the account is what operators search by).
    if (request.auth) span.setAccount(request.auth.accountId);
    // @fastify/otel's request span ends here (untracedWhenDropped took it off the routes).
    if (hooks.endRequestSpan) return hooks.endRequestSpan.call(this, request as never, reply as never, payload as never, done as never);
    done(null, payload);
  });
  app.addHook('onError', function (request, reply, error, done) {
    if (hooks.recordError && serverSpanOf(request.raw)?.sampled) return hooks.recordError.call(this, request as never, reply as never, error as never, done as never);
    done();
  });
}
