// autocannon 9 ships no types and @types/autocannon is not installed: declare the
// subset of the programmatic API the benchmark uses (see its README "API" section).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      /** Called before each send of this request: returns the request to send (then encoded each time). */
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request;
    }

    interface Options {
      url: string;
      connections?: number;
      /** Seconds. Ignored when `amount` is set. */
      duration?: number;
      /** Total requests; overrides duration. */
      amount?: number;
      /** Seconds to wait for a response. */
      timeout?: number;
      pipelining?: number;
      requests?: Request[];
      /** Called once per connection as it starts: may give that connection its own requests. */
      setupClient?: (client: Client) => void;
      title?: string;
    }

    interface Client {
      /** Replaces this connection's requests (each pre-encoded once, as the shared ones are). */
      setRequests(requests: Request[]): void;
    }

    /** hdr-histogram-percentiles-obj shape. */
    interface Histogram {
      min: number;
      max: number;
      average: number;
      mean: number;
      stddev: number;
      total: number;
      p50: number;
      p90: number;
      p99: number;
    }

    interface Result {
      title?: string;
      url: string;
      connections: number;
      /** Seconds, rounded to 10 ms. */
      duration: number;
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      resets: number;
      '2xx': number;
      statusCodeStats: Record<string, { count: number }>;
      /** Milliseconds, integer resolution. */
      latency: Histogram;
      /** Per-second samples; `total` is completed requests, `sent` requests sent. */
      requests: Histogram & { sent: number };
      throughput: Histogram;
      start: Date;
      finish: Date;
    }

    interface Instance extends EventEmitter {
      stop(): void;
      /** responseTime is in milliseconds with sub-millisecond precision (hrtime). */
      on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): this;
      on(event: string, listener: (...args: unknown[]) => void): this;
    }
  }

  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;

  export = autocannon;
}
