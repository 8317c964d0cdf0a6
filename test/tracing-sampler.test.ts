// The root decisions taken before the SDK sees a request (src/tracing/sampler.ts): they must be
// the configured sampler's own, trace by trace, or a request would be kept that the SDK drops
// (or the reverse) and the ratio an operator asked for would not be the ratio exported.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ROOT_CONTEXT, SamplingDecision, SpanKind } from '@opentelemetry/api';
import { rootSampling, samplerFromEnv } from '../src/tracing/sampler.js';

const sdkKeeps = (env: NodeJS.ProcessEnv, traceId: string) =>
  samplerFromEnv(env).sampler.shouldSample(ROOT_CONTEXT, traceId, 'GET', SpanKind.SERVER, {}, []).decision === SamplingDecision.RECORD_AND_SAMPLED;

describe('root sampling', () => {
  for (const [name, arg] of [
    ['parentbased_traceidratio', '0.3'],
    ['traceidratio', '0.01'],
    ['parentbased_always_on', undefined],
    ['always_off', undefined],
    ['parentbased_always_off', undefined],
    ['always_on', undefined],
  ] as const) {
    test(`when the sampler is ${name}${arg ? ` ${arg}` : ''}, then every drawn trace is decided as the SDK's sampler decides its id`, () => {
      const env = { OTEL_TRACES_SAMPLER: name, OTEL_TRACES_SAMPLER_ARG: arg };
      const root = rootSampling(samplerFromEnv(env));
      const sampler = samplerFromEnv(env).sampler;
      let kept = 0;
      for (let i = 0; i < 20_000; i++) {
        const drawn = root.draw();
        assert.match(drawn.traceId, /^[0-9a-f]{32}$/);
        const sdk = sampler.shouldSample(ROOT_CONTEXT, drawn.traceId, 'GET', SpanKind.SERVER, {}, []).decision === SamplingDecision.RECORD_AND_SAMPLED;
        assert.equal(drawn.sampled, sdk, `trace ${drawn.traceId}`);
        if (drawn.sampled) kept++;
      }
      const ratio = arg === undefined ? (name.endsWith('always_off') ? 0 : 1) : Number(arg);
      // 20 000 draws: the kept share is within 1.5 points of the ratio (over 10 standard deviations at 0.3).
      assert.ok(Math.abs(kept / 20_000 - ratio) < 0.015, `kept ${kept} of 20000 at ${ratio}`);
    });
  }

  test('when OTEL_TRACES_SAMPLER_ARG is out of range or not a number, then the ratio is 1, as the SDK reads it', () => {
    for (const arg of ['2', '-0.5', 'half', '']) {
      const configured = samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: arg });
      assert.equal(configured.rootRatio, 1, `arg "${arg}"`);
      assert.equal(configured.sampler.toString(), 'TraceIdRatioBased{1}');
    }
  });

  test('when OTEL_TRACES_SAMPLER names no known sampler, then it is parent-based always-on', () => {
    const configured = samplerFromEnv({ OTEL_TRACES_SAMPLER: 'jaeger_remote' });
    assert.equal(configured.rootRatio, 1);
    assert.match(configured.sampler.toString(), /^ParentBased\{root=AlwaysOnSampler/);
    assert.ok(sdkKeeps({ OTEL_TRACES_SAMPLER: 'jaeger_remote' }, 'ffffffffffffffffffffffffffffffff'));
  });

  test('when a kept trace is started, then the SDK gets its trace id, and ids are random otherwise', () => {
    const root = rootSampling(samplerFromEnv({}));
    const drawn = root.draw();
    assert.equal(root.withTraceId(drawn.traceId, () => root.idGenerator.generateTraceId()), drawn.traceId);
    const after = root.idGenerator.generateTraceId();
    assert.notEqual(after, drawn.traceId);
    assert.match(after, /^[0-9a-f]{32}$/);
    assert.match(root.spanId(), /^[0-9a-f]{16}$/);
  });
});
