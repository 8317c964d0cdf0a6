// A Prometheus histogram for the per-request hot path. prom-client's Histogram hashes the
// label set and turns the bucket bound into a property name on every observe(), a cost paid
// on every request (docs/performance.md); here a series is bound once and an observation is
// an array increment. It plugs into prom-client's Registry (and the cluster
// AggregatorRegistry, which sums workers' values) through the same get() contract.
import type { MetricObjectWithValues, MetricValueWithName, Registry } from 'prom-client';

export interface HistogramSeries {
  observe(value: number): void;
  /** The same, remembering `traceId` as its bucket's exemplar (OpenMetrics scrapes show it). */
  observeWithExemplar(value: number, traceId: string): void;
}

interface Exemplar {
  traceId: string;
  value: number;
  /** Seconds since the epoch. */
  at: number;
}

interface Series<L extends string> {
  labels: Record<L, string>;
  /** Per-bucket (non-cumulative) counts; the last slot is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
  /** Per bucket, the latest traced observation (made on the first one: tracing on). */
  exemplars?: Array<Exemplar | undefined>;
}

/** A bucket's exemplar as prom-client's registry prints it (OpenMetrics only). */
function exemplarOf(s: { exemplars?: Array<Exemplar | undefined> }, i: number): { exemplar?: { labelSet: { trace_id: string }; value: number; timestamp: number } } {
  const e = s.exemplars?.[i];
  return e ? { exemplar: { labelSet: { trace_id: e.traceId }, value: e.value, timestamp: e.at } } : {};
}

export class BoundHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  private readonly buckets: readonly number[];
  private readonly series = new Map<string, Series<L>>();

  constructor(options: { name: string; help: string; labelNames: readonly L[]; buckets: readonly number[]; registers: Registry[] }) {
    this.name = options.name;
    this.help = options.help;
    this.buckets = [...options.buckets].sort((a, b) => a - b);
    // The Registry accepts any metric with name, help, type and get().
    for (const registry of options.registers) registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series for these label values; keep the result and call observe() on it. */
  labels(labels: Record<L, string>): HistogramSeries {
    const id = JSON.stringify(labels);
    let series = this.series.get(id);
    if (!series) {
      series = { labels: { ...labels }, counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
      this.series.set(id, series);
    }
    const s = series;
    const buckets = this.buckets;
    const observe = (value: number): number => {
      let i = 0;
      while (i < buckets.length && value > buckets[i]!) i++;
      s.counts[i]! += 1;
      s.sum += value;
      s.count += 1;
      return i;
    };
    return {
      observe,
      observeWithExemplar(value: number, traceId: string): void {
        const i = observe(value);
        s.exemplars ??= new Array<Exemplar | undefined>(buckets.length + 1);
        s.exemplars[i] = { traceId, value, at: Date.now() / 1000 };
      },
    };
  }

  /** Series in prom-client's shape: cumulative `_bucket` lines with `le`, then `_sum` and `_count`. */
  async get(): Promise<MetricObjectWithValues<MetricValueWithName<L | 'le'>>> {
    const values: MetricValueWithName<L | 'le'>[] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      this.buckets.forEach((bound, i) => {
        cumulative += s.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: bound, ...s.labels } as never, value: cumulative, ...exemplarOf(s, i) });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...s.labels } as never, value: s.count, ...exemplarOf(s, this.buckets.length) });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels as never, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels as never, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type as never, aggregator: this.aggregator, values, collect: () => undefined };
  }

  /** Totals per series, for counters derived from this histogram. */
  counts(): Iterable<{ labels: Record<L, string>; count: number }> {
    return this.series.values();
  }

  reset(): void {
    this.series.clear();
  }
}
