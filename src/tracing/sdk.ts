// Tracing on: the OpenTelemetry SDK set up from the standard OTEL_* environment (service name,
// resource attributes, sampler, OTLP endpoint and protocol, batch queue limits), and the hooks
// the instrumented places use. Loaded only when switch.ts finds tracing requested.
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Link, type SpanContext, type Context } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { ExportResultCode } from '@opentelemetry/core';
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { rootSampling, samplerFromEnv } from './sampler.js';
import { idleContext, storageUsesHooks } from './context.js';
import { serverSpanOf } from './server-span.js';
import { activeSampled, isSampled, within } from './spans.js';
import { tracedDatabase, tracedSql } from './sql.js';
import type { StoredTrace, TracingHooks } from './switch.js';

/** The exporter for OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (or OTEL_EXPORTER_OTLP_PROTOCOL); http/protobuf by default. */
function exporterFor(env: NodeJS.ProcessEnv): SpanExporter {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (protocol === 'http/protobuf') return new ProtobufExporter();
  if (protocol === 'http/json') return new JsonExporter();
  throw new Error(`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL "${protocol}" is not supported: use http/protobuf or http/json (OTLP over HTTP; a collector listens on port 4318 for both).`);
}

/** The span context a stored traceparent names, for a link; undefined when absent or malformed. */
function storedContext(stored: StoredTrace): SpanContext | undefined {
  if (!stored) return undefined;
  const span = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent: stored }));
  return span && trace.isSpanContextValid(span) ? span : undefined;
}

/**
 * The parent of work a request caused later (a delivery): the request's own trace, so the
 * receiver's traceparent and the request share one trace id; it is also linked explicitly.
 * The request's sampling decision carries over (parent-based samplers follow it).
 */
const causedBy = (link: SpanContext | undefined): Context => (link ? trace.setSpanContext(ROOT_CONTEXT, link) : context.active());

/** Counts what is dropped: spans a full queue refuses, spans an export (a collector away) loses. */
interface Dropped {
  queueFull: number;
  exportFailed: number;
}

function countingExporter(exporter: SpanExporter, dropped: Dropped): SpanExporter {
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) dropped.exportFailed += spans.length;
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * The batch processor, bounded (OTEL_BSP_MAX_QUEUE_SIZE, 2048 by default: a span beyond it is
 * dropped, never queued). The SDK only logs its drops, so they are counted here, by the queue
 * length it keeps (its own fields; 0 if a later SDK renames them).
 */
function countingProcessor(batch: BatchSpanProcessor, dropped: Dropped): SpanProcessor {
  const queue = batch as unknown as { _finishedSpans?: unknown[]; _maxQueueSize?: number };
  return {
    onStart: (span, parent) => batch.onStart(span, parent),
    onEnd(span: ReadableSpan) {
      if (isSampled(span) && queue._finishedSpans && queue._maxQueueSize !== undefined && queue._finishedSpans.length >= queue._maxQueueSize) {
        dropped.queueFull++;
      }
      batch.onEnd(span);
    },
    forceFlush: () => batch.forceFlush(),
    shutdown: () => batch.shutdown(),
  };
}

export function createTracing(env: NodeJS.ProcessEnv): TracingHooks {
  const resource = resourceFromAttributes({ 'service.name': 'petstore' }).merge(detectResources({ detectors: [envDetector] }));
  const dropped: Dropped = { queueFull: 0, exportFailed: 0 };
  const processor = countingProcessor(new BatchSpanProcessor(countingExporter(exporterFor(env), dropped)), dropped);
  // The sampler OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG name (parent-based always-on by default),
  // shared with the root decisions taken before the SDK sees a request.
  const root = rootSampling(samplerFromEnv(env));
  // Where AsyncLocalStorage runs on hooks, it is off while no sampled span is open (context.ts).
  const idle = storageUsesHooks() ? idleContext() : undefined;
  const provider = new NodeTracerProvider({ resource, spanProcessors: idle ? [idle.processor, processor] : [processor], sampler: root.sampler, idGenerator: root.idGenerator });
  // The AsyncLocalStorage context manager and the W3C trace-context propagator (only traceparent
  // continues a trace: server-span.ts decides alone when it is absent).
  provider.register(idle ? { contextManager: idle.contextManager } : undefined);
  const tracer = trace.getTracer('petstore');
  const linksOf = (captured: readonly unknown[]): Link[] => captured.filter((c): c is SpanContext => c !== undefined).map((c) => ({ context: c }));

  return {
    database: (db, system) => tracedDatabase(tracer, db, system),
    sql: (sql, system) => tracedSql(tracer, sql, system),
    serverSpan: (req, res) => serverSpanOf(tracer, root, req, res),
    traceparent() {
      // Only a sampled request's context is worth storing: a link to a dropped trace leads nowhere.
      if (activeSampled() !== true) return undefined;
      const carrier: Record<string, string> = {};
      propagation.inject(context.active(), carrier);
      return carrier.traceparent;
    },
    setAccount(accountId) {
      trace.getActiveSpan()?.setAttribute('petstore.account_id', accountId);
    },
    // Only a sampled request is worth linking to (as traceparent() above).
    capture: () => (activeSampled() === true ? trace.getActiveSpan()!.spanContext() : undefined),
    traceparentOf(captured) {
      const carrier: Record<string, string> = {};
      propagation.inject(trace.setSpanContext(ROOT_CONTEXT, captured as SpanContext), carrier);
      return carrier.traceparent;
    },
    inSpan(name, links, attributes, work, kind) {
      const sampled = activeSampled() === true;
      const linked = linksOf(links);
      // Outside a sampled request (under one the sampler dropped, or none): with nothing sampled
      // to link to, no span; else it joins the first linked request's trace (a batch).
      if (!sampled && linked.length === 0) return work();
      const parent = sampled ? context.active() : trace.setSpanContext(ROOT_CONTEXT, linked[0]!.context);
      return within(tracer.startSpan(name, { kind: kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL, attributes, links: linked }, parent), work);
    },
    clientSpan(name, linked, attributes, headers, work, outcome) {
      const link = storedContext(linked);
      const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes, links: link ? [{ context: link }] : [] }, causedBy(link));
      // The receiver continues this attempt's trace.
      propagation.inject(trace.setSpan(context.active(), span), headers);
      return within(span, async () => {
        const result = await work();
        const { attributes: more, error } = outcome(result);
        span.setAttributes(more);
        if (error) span.setStatus({ code: SpanStatusCode.ERROR });
        return result;
      });
    },
    linkedSpan(name, linked, attributes, work) {
      const link = storedContext(linked);
      return within(tracer.startSpan(name, { kind: SpanKind.CONSUMER, attributes, links: link ? [{ context: link }] : [] }, causedBy(link)), work);
    },
    ids() {
      const span = trace.getActiveSpan()?.spanContext();
      return span && trace.isSpanContextValid(span) ? { trace_id: span.traceId, span_id: span.spanId } : undefined;
    },
    dropped: () => ({ ...dropped }),
    async shutdown(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs).unref()));
      await Promise.race([provider.shutdown().catch(() => undefined), late]);
      clearTimeout(timer);
    },
  };
}

export type { Context };
