// How every span of ours runs its work: as the active span while it runs, ended when the work
// settles, with an error status and the error's type (a code or a class, never its message).
import { context, type Span, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';

function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.constructor.name : 'Error';
}

/** Ends `span` when `work` settles (error status and type when it rejects). */
export function endWith<T>(span: Span, work: Promise<T>): Promise<T> {
  return work.then(
    (value) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', errorType(error));
      span.end();
      throw error;
    },
  );
}

/** Runs `work` with `span` active and ends the span when it settles (a synchronous throw included). */
export function within<T>(span: Span, work: () => Promise<T>): Promise<T> {
  let result: Promise<T>;
  try {
    result = context.with(trace.setSpan(context.active(), span), work);
  } catch (error) {
    result = Promise.reject(error);
  }
  return endWith(span, result);
}

/**
 * Whether the span's trace is one the sampler kept: its flag, not isRecording() (a span that has
 * ended, such as a callback hook's whose continuation runs in its context, no longer records, yet
 * its trace is kept).
 */
export const isSampled = (span: Pick<Span, 'spanContext'>): boolean => (span.spanContext().traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;

/** Whether the active span's trace is sampled; undefined when no span is active. */
export function activeSampled(): boolean | undefined {
  const span = trace.getActiveSpan();
  return span === undefined ? undefined : isSampled(span);
}
