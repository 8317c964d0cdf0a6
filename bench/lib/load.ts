// One autocannon run, in this process, against a server in another process.
import { createHistogram } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { readCpuSeconds, readMachineCpu, ticksPerSecond } from './procs.js';

export type AcRequest = autocannon.Request;

export interface LoadSpec {
  url: string;
  connections: number;
  /** Seconds; ignored when `amount` is set. */
  duration: number;
  amount?: number;
  /** Each connection loops over these; they are pre-encoded once, which keeps the client cheap. */
  requests: AcRequest[];
  /**
   * Connection k loops over perClient(k) instead (k = 0, 1, … in the order they start): requests
   * that differ per connection, still pre-encoded once.
   */
  perClient?: ((client: number) => AcRequest[]) | undefined;
  /** The process serving the load, for its CPU usage. */
  serverPid: number;
  /** PostgreSQL backends serving the service, for their CPU usage (PostgreSQL runs only). */
  databasePids?: number[];
}

export interface LoadResult {
  connections: number;
  requests: number;
  durationSec: number;
  reqPerSec: number;
  latencyMs: { mean: number; p50: number; p99: number; max: number };
  non2xx: number;
  /** Connection errors and body mismatches, timeouts excluded. */
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** CPU used during the run, as % of one core: is the server or the load generator the bottleneck? */
  serverCpuPct: number;
  benchCpuPct: number;
  /** Server CPU time per completed request, µs: cost per request, independent of how busy the client was. */
  serverCpuUsPerRequest: number;
  /** Rest of the machine's CPU (other processes, softirq), % of one core: high means a noisy row. */
  otherCpuPct: number;
  /** CPU time of the service's PostgreSQL backends per completed request, µs (PostgreSQL runs only). */
  databaseCpuUsPerRequest?: number;
  databaseCpuPct?: number;
}

export class LoadError extends Error {}

let current: autocannon.Instance | undefined;

/** Stops a run in progress (on SIGINT) so its sockets do not keep the process alive. */
export function stopCurrentLoad(): void {
  current?.stop();
}

function perClientSetup(perClient: (client: number) => AcRequest[]): (client: autocannon.Client) => void {
  let next = 0;
  return (client) => client.setRequests(perClient(next++));
}

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  // A full collection in the load generator first (npm run bench passes --expose-gc), so
  // garbage from earlier work (seeding, walking 5 000 pages) is not collected during this run.
  (globalThis as { gc?: () => void }).gc?.();
  // autocannon's own latency histogram has 1 ms resolution, too coarse for loopback:
  // record every response time in microseconds instead.
  const latencyUs = createHistogram({ lowest: 1, highest: 60_000_000, figures: 3 });
  const serverCpu0 = readCpuSeconds(spec.serverPid) ?? 0;
  const databaseCpu = () => (spec.databasePids ?? []).map((pid) => readCpuSeconds(pid) ?? NaN);
  const databaseCpu0 = databaseCpu();
  const benchCpu0 = process.cpuUsage();
  const machine0 = readMachineCpu();
  const wall0 = process.hrtime.bigint();

  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        connections: spec.connections,
        duration: spec.duration,
        ...(spec.amount ? { amount: spec.amount } : {}),
        timeout: 10,
        pipelining: 1,
        requests: spec.requests,
        ...(spec.perClient ? { setupClient: perClientSetup(spec.perClient) } : {}),
      },
      (err, result) => {
        current = undefined;
        if (err) {
          reject(err);
          return;
        }
        const wallSec = Number(process.hrtime.bigint() - wall0) / 1e9;
        const benchCpu = process.cpuUsage(benchCpu0);
        const serverCpu = (readCpuSeconds(spec.serverPid) ?? serverCpu0) - serverCpu0;
        // A backend gone meanwhile (NaN) counts nothing.
        const dbCpu = databaseCpu().reduce((sum, end, i) => sum + (Number.isFinite(end - databaseCpu0[i]!) ? end - databaseCpu0[i]! : 0), 0);
        const machine1 = readMachineCpu();
        const machineBusySec = machine0 && machine1 ? (machine1.busy - machine0.busy) / ticksPerSecond : NaN;
        const benchCpuSec = (benchCpu.user + benchCpu.system) / 1e6;
        const statusCodes: Record<string, number> = {};
        for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count;
        const total = result.requests.total;
        if (total === 0) {
          reject(new LoadError(`no response from ${spec.url} (errors: ${result.errors}, timeouts: ${result.timeouts})`));
          return;
        }
        resolve({
          connections: spec.connections,
          requests: total,
          durationSec: result.duration,
          // Completed requests over the measured time: exact, unlike the mean of 1 s samples.
          reqPerSec: total / result.duration,
          latencyMs: {
            mean: latencyUs.mean / 1000,
            p50: latencyUs.percentile(50) / 1000,
            p99: latencyUs.percentile(99) / 1000,
            max: latencyUs.max / 1000,
          },
          non2xx: result.non2xx,
          // autocannon counts a timeout in `errors` too: keep them apart.
          errors: result.errors - result.timeouts + result.mismatches,
          timeouts: result.timeouts,
          statusCodes,
          serverCpuPct: (100 * serverCpu) / wallSec,
          serverCpuUsPerRequest: (1e6 * serverCpu) / total,
          benchCpuPct: (100 * benchCpuSec) / wallSec,
          otherCpuPct: Math.max(0, (100 * (machineBusySec - serverCpu - benchCpuSec - dbCpu)) / wallSec),
          ...(spec.databasePids ? { databaseCpuUsPerRequest: (1e6 * dbCpu) / total, databaseCpuPct: (100 * dbCpu) / wallSec } : {}),
        });
      },
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => {
      latencyUs.record(Math.max(1, Math.round(responseTime * 1000)));
    });
    current = instance;
  });
}
