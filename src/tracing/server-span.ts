// The server span of one HTTP request, started where every request enters (the Node server's
// handler, src/http/instance.ts), so the fast path's answers are traced like Fastify's.
// Attributes per the stable HTTP semantic conventions; an incoming traceparent is continued.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { RPCType, setRPCMetadata } from '@opentelemetry/core';
import type { ServerSpan } from './switch.js';
import type { RootSampling } from './sampler.js';
import { isSampled } from './spans.js';

const headerGetter = {
  keys: (carrier: IncomingMessage['headers']) => Object.keys(carrier),
  get: (carrier: IncomingMessage['headers'], key: string) => carrier[key],
};

/** The path without the query (url.path: the query may carry a cursor, and is url.query's). */
const pathOf = (url: string | undefined) => {
  if (url === undefined) return '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
};

/**
 * A request the sampler dropped: nothing to record, and no context to enter either (entering one
 * costs more than the rest of the span). Nothing under it starts a trace of its own: sdk.ts,
 * sql.ts and the Fastify instrumentation's ignorePaths add spans only under a sampled one. Its
 * log line still names its ids (core.ts reads them from here; the span id is drawn only then).
 */
class DroppedSpan implements ServerSpan {
  readonly sampled = false;
  private named: { trace_id: string; span_id: string } | undefined;
  constructor(
    private readonly trace: { readonly traceId: string },
    private readonly spanId: () => string,
  ) {}
  get ids() {
    return (this.named ??= { trace_id: this.trace.traceId, span_id: this.spanId() });
  }
  run<T>(fn: () => T): T {
    return fn();
  }
  setRoute() {}
  setAccount() {}
  end() {}
}

export function serverSpanOf(tracer: Tracer, root: RootSampling, req: IncomingMessage, res: ServerResponse): ServerSpan {
  const method = req.method ?? 'GET';
  let span: Span;
  let parent = ROOT_CONTEXT;
  if (req.headers.traceparent === undefined) {
    // A new trace: decided here, before the SDK builds anything (most requests are dropped at a low ratio).
    const drawn = root.draw();
    if (!drawn.sampled) return new DroppedSpan(drawn, root.spanId);
    span = root.withTraceId(drawn.traceId, () => tracer.startSpan(method, { kind: SpanKind.SERVER }, ROOT_CONTEXT));
  } else {
    parent = propagation.extract(ROOT_CONTEXT, req.headers, headerGetter);
    span = tracer.startSpan(method, { kind: SpanKind.SERVER }, parent);
  }
  if (!isSampled(span)) return new DroppedSpan(span.spanContext(), () => span.spanContext().spanId);
  const ids = { trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId };
  span.setAttributes(requestAttributes(req, method));
  // The RPC metadata says an HTTP server span exists: @fastify/otel's request span is then internal (one server span per request).
  const active = setRPCMetadata(trace.setSpan(parent, span), { type: RPCType.HTTP, span });
  let route: string | undefined;
  let ended = false;
  const end = (status: number) => {
    if (ended) return;
    ended = true;
    span.setAttribute('http.response.status_code', status);
    if (status >= 500) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', String(status));
    }
    span.end();
  };
  res.once('finish', () => end(res.statusCode));
  // A client that went away before the answer: the span still ends (status as far as it got).
  res.once('close', () => end(res.statusCode));
  return {
    run: (fn) => context.with(active, fn),
    setRoute(template) {
      if (route !== undefined) return;
      route = template;
      span.setAttribute('http.route', template);
      span.updateName(`${method} ${template}`);
    },
    setAccount: (accountId) => span.setAttribute('petstore.account_id', accountId),
    end,
    ids,
    sampled: true,
  };
}

/** The request's attributes per the stable HTTP semantic conventions (the built-in samplers read none of them). */
function requestAttributes(req: IncomingMessage, method: string): Record<string, string | number> {
  const host = req.headers.host ?? '';
  const colon = host.lastIndexOf(':');
  const attributes: Record<string, string | number> = {
    'http.request.method': method,
    'url.path': pathOf(req.url),
    'url.scheme': 'http',
    'server.address': colon > 0 && !host.endsWith(']') ? host.slice(0, colon) : host,
    'network.protocol.version': req.httpVersion,
  };
  if (colon > 0) attributes['server.port'] = Number(host.slice(colon + 1));
  const agent = req.headers['user-agent'];
  if (agent !== undefined) attributes['user_agent.original'] = agent;
  if (req.socket.remoteAddress !== undefined) attributes['client.address'] = req.socket.remoteAddress;
  return attributes;
}
