// The tracing context manager (src/tracing/context.ts): AsyncLocalStorage switched off while no
// sampled span is open, on again with the next context, and context carried across awaits
// meanwhile. The real SDK, in this process; ended spans are kept by a processor that, like the
// batch processor between exports, enters no context (SimpleSpanProcessor's export enters one).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { context, ROOT_CONTEXT, type Span, trace } from '@opentelemetry/api';
import { isTracingSuppressed, suppressTracing } from '@opentelemetry/core';
import { AlwaysOnSampler, BasicTracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { idleContext, storageUsesHooks } from '../src/tracing/context.js';

const idle = idleContext();
const finished: ReadableSpan[] = [];
const keeper: SpanProcessor = { onStart: () => undefined, onEnd: (span) => void finished.push(span), forceFlush: async () => undefined, shutdown: async () => undefined };
const provider = new BasicTracerProvider({ spanProcessors: [idle.processor, keeper], sampler: new AlwaysOnSampler() });
context.setGlobalContextManager(idle.contextManager);
const tracer = provider.getTracer('test');

/** Starts `name` as a child of the active span after an await, ends it, and returns its parent's span id. */
async function childAfterAwait(name: string): Promise<string | undefined> {
  await sleep(2);
  const child = tracer.startSpan(name);
  child.end();
  return finished.find((span) => span.name === name)?.parentSpanContext?.spanId;
}

const within = <T>(span: Span, work: () => Promise<T>) => context.with(trace.setSpan(ROOT_CONTEXT, span), work);
const onHooks = { skip: storageUsesHooks() ? false : 'AsyncLocalStorage runs without hooks here: the manager is not used' };

describe('tracing context manager', () => {
  test('when the storage runs on hooks, then Node before 24 uses them unless told otherwise, and Node 24 only with --no-async-context-frame', () => {
    assert.equal(storageUsesHooks('20.20.2', []), true);
    assert.equal(storageUsesHooks('22.15.0', ['--experimental-async-context-frame']), false);
    assert.equal(storageUsesHooks('24.11.0', []), false);
    assert.equal(storageUsesHooks('24.11.0', ['--no-async-context-frame']), true);
  });

  test('when the last sampled span ends, then the storage is off at once, and the next context turns it on with parenting intact', onHooks, async () => {
    const first = tracer.startSpan('first');
    assert.equal(await within(first, () => childAfterAwait('first.child')), first.spanContext().spanId);
    assert.deepEqual(idle.state(), { open: 1, enabled: true });
    first.end();
    assert.deepEqual(idle.state(), { open: 0, enabled: false }, 'off in the turn the span ended');
    assert.equal(trace.getActiveSpan(), undefined);

    const second = tracer.startSpan('second');
    assert.equal(await within(second, () => childAfterAwait('second.child')), second.spanContext().spanId);
    assert.equal(idle.state().enabled, true);
    second.end();
  });

  // Such a context is not carried past that turn (nothing of ours reads one there: spans start only under a sampled one).
  test('when a context is entered outside any sampled span (the batch export\'s), then the storage is off again from the next turn', onHooks, async () => {
    await nextTurn();
    assert.equal(idle.state().enabled, false);
    assert.equal(context.with(suppressTracing(ROOT_CONTEXT), () => isTracingSuppressed(context.active())), true);
    assert.equal(idle.state().enabled, true);
    await nextTurn();
    assert.deepEqual(idle.state(), { open: 0, enabled: false });
  });

  test('when one sampled span ends while another is open, then the storage stays on and the open one keeps its children', onHooks, async () => {
    const long = tracer.startSpan('long');
    const parentOfLate = within(long, async () => {
      await sleep(20);
      return childAfterAwait('long.late');
    });
    const short = tracer.startSpan('short');
    await within(short, () => sleep(1));
    short.end();
    assert.deepEqual(idle.state(), { open: 1, enabled: true });
    await nextTurn();
    assert.deepEqual(idle.state(), { open: 1, enabled: true });
    assert.equal(await parentOfLate, long.spanContext().spanId);
    long.end();
    assert.deepEqual(idle.state(), { open: 0, enabled: false });
  });
});
