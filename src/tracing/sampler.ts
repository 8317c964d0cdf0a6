// The sampler the standard environment names (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG; the
// values and defaults of the OpenTelemetry specification), built here rather than by the SDK so
// that a request with no incoming trace can be decided before the SDK is asked for anything: most
// requests at a low ratio are dropped, and then cost a trace id and one comparison.
import { diag } from '@opentelemetry/api';
import { AlwaysOffSampler, AlwaysOnSampler, type IdGenerator, ParentBasedSampler, RandomIdGenerator, type Sampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';

const DEFAULT_RATIO = 1;

function ratioOf(raw: string | undefined): number {
  const ratio = raw === undefined || raw.trim() === '' ? Number.NaN : Number(raw);
  if (Number.isNaN(ratio) || ratio < 0 || ratio > 1) {
    diag.error(`OTEL_TRACES_SAMPLER_ARG "${raw ?? ''}" is not a ratio in [0, 1]: using ${DEFAULT_RATIO}.`);
    return DEFAULT_RATIO;
  }
  return ratio;
}

/** A sampler, and the share of new traces (no parent) its root keeps. */
export interface ConfiguredSampler {
  sampler: Sampler;
  rootRatio: number;
}

/** The sampler OTEL_TRACES_SAMPLER names (parentbased_always_on when unset or unknown, as the SDK does). */
export function samplerFromEnv(env: NodeJS.ProcessEnv): ConfiguredSampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on';
  const parentBased = (root: Sampler, rootRatio: number) => ({ sampler: new ParentBasedSampler({ root }), rootRatio });
  switch (name) {
    case 'always_on':
      return { sampler: new AlwaysOnSampler(), rootRatio: 1 };
    case 'always_off':
      return { sampler: new AlwaysOffSampler(), rootRatio: 0 };
    case 'traceidratio': {
      const ratio = ratioOf(env.OTEL_TRACES_SAMPLER_ARG);
      return { sampler: new TraceIdRatioBasedSampler(ratio), rootRatio: ratio };
    }
    case 'parentbased_always_on':
      return parentBased(new AlwaysOnSampler(), 1);
    case 'parentbased_always_off':
      return parentBased(new AlwaysOffSampler(), 0);
    case 'parentbased_traceidratio': {
      const ratio = ratioOf(env.OTEL_TRACES_SAMPLER_ARG);
      return parentBased(new TraceIdRatioBasedSampler(ratio), ratio);
    }
    default:
      diag.error(`OTEL_TRACES_SAMPLER "${name}" is not supported: using parentbased_always_on.`);
      return parentBased(new AlwaysOnSampler(), 1);
  }
}

const word = () => (Math.random() * 0x100000000) >>> 0;
const hex8 = (w: number) => w.toString(16).padStart(8, '0');

/**
 * A new trace, drawn as four random 32-bit words. The trace-id ratio sampler keeps a trace when
 * the words' XOR is below ratio × 2³²−1 (the SDK's rule; the SDK decides again for a kept one, on
 * the same id, and its decision is the one that counts). The id is spelled out only when needed.
 */
export class DrawnTrace {
  private spelled: string | undefined;
  constructor(
    private readonly w0: number,
    private readonly w1: number,
    private readonly w2: number,
    private readonly w3: number,
    readonly sampled: boolean,
  ) {}
  get traceId(): string {
    return (this.spelled ??= hex8(this.w0) + hex8(this.w1) + hex8(this.w2) + hex8(this.w3));
  }
}

/**
 * Root decisions taken before the SDK sees the request: `draw` draws a trace id and decides as
 * the root sampler would; the SDK's span for a kept one then gets that same id (the id generator
 * below hands it over).
 */
export interface RootSampling {
  /** A new trace, and whether the root sampler keeps it. */
  draw(): DrawnTrace;
  /** Runs `start` with `traceId` as the next root span's trace id. */
  withTraceId<T>(traceId: string, start: () => T): T;
  /** A fresh span id (a dropped request's log line names one). */
  spanId(): string;
  /** The sampler, for the SDK's own decisions (child spans, continued traces). */
  readonly sampler: Sampler;
  /** The SDK's id generator: random ids, but the one withTraceId hands over. */
  readonly idGenerator: IdGenerator;
}

export function rootSampling({ sampler, rootRatio }: ConfiguredSampler): RootSampling {
  const random = new RandomIdGenerator();
  const spanId = () => random.generateSpanId();
  // TraceIdRatioBasedSampler's bound (a ratio of 1 keeps every id, 0 none).
  const bound = rootRatio >= 1 ? 0x100000000 : Math.floor(Math.max(0, rootRatio) * 0xffffffff);
  let next: string | undefined;
  return {
    draw() {
      const w0 = word();
      const w1 = word();
      const w2 = word();
      // All-zero ids are invalid (the SDK's generator makes the last byte 1 then, too).
      const w3 = word() || (w0 | w1 | w2 ? 0 : 1);
      return new DrawnTrace(w0, w1, w2, w3, (w0 ^ w1 ^ w2 ^ w3) >>> 0 < bound);
    },
    withTraceId(traceId, start) {
      next = traceId;
      try {
        return start();
      } finally {
        next = undefined;
      }
    },
    spanId,
    sampler,
    idGenerator: { generateTraceId: () => next ?? random.generateTraceId(), generateSpanId: spanId },
  };
}
