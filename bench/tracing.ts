// The tracing rows (issue 28): the same store served three more times — tracing off, on at
// 100 % to a local OTLP receiver (bench/otlp-sink.ts), and parent-based 1 % — and list20,
// get-by-id and create measured on each, side by side in a balanced order, each row with its
// cost against the off service of the same run. Then paired rounds: the three take the load at
// once (sharing the server's CPU), so a slow spell of the machine hits all of them alike, and
// each round's CPU per request is a ratio to off's in the same seconds.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AcRequest, type LoadResult, runLoad } from './lib/load.js';
import { type Child, freePort, startChild, stopChild, waitForHttp } from './lib/procs.js';
import { median, type Row } from './lib/report.js';

export type TracingMode = 'off' | 'on-100' | 'on-1';

export interface TracingService {
  mode: TracingMode;
  child: Child;
  url: string;
}

const MODES: Record<TracingMode, { title: string; env: (sink: string) => NodeJS.ProcessEnv }> = {
  off: { title: 'tracing off', env: () => ({}) },
  'on-100': {
    title: 'tracing on, 100 % to a local OTLP receiver',
    env: (sink) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_TRACES_SAMPLER: 'parentbased_always_on' }),
  },
  'on-1': {
    title: 'tracing on, parent-based 1 %',
    env: (sink) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' }),
  },
};

/** The sink (on the bench's CPU) and the three services (on the server's). */
export async function startTracingServices(
  bin: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  cpus: { server: number | undefined; bench: number | undefined },
): Promise<{ sink: Child; services: TracingService[] }> {
  const sinkPort = await freePort();
  const sink = startChild('otlp-sink', ['--import', 'tsx', path.join(import.meta.dirname, 'otlp-sink.ts')], { ...process.env, PORT: String(sinkPort) }, {
    forward: true,
    cpu: cpus.bench,
  });
  await sleep(1500);
  const services: TracingService[] = [];
  const plain = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('OTEL_')));
  for (const mode of Object.keys(MODES) as TracingMode[]) {
    const port = await freePort();
    const child = startChild(`service-${mode}`, [bin, 'serve'], { ...plain, PORT: String(port), ...MODES[mode].env(`http://127.0.0.1:${sinkPort}`) }, {
      cwd,
      forward: true,
      cpu: cpus.server,
    });
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(child, `${url}/readyz`);
    services.push({ mode, child, url });
  }
  return { sink, services };
}

export async function stopTracingServices({ sink, services }: { sink: Child; services: TracingService[] }): Promise<void> {
  for (const s of services) await stopChild(s.child);
  await stopChild(sink);
}

export interface TracingMeasure {
  scenarios: ReadonlyArray<readonly [id: string, title: string, requests: () => AcRequest[]]>;
  duration: number;
  warmup: number;
  warmupConnections: number;
  joinLoads(runs: LoadResult[]): LoadResult;
  log(message: string): void;
}

/** Paired rounds of the load on every service at once (five of half the duration spread by 10-40 points on a 2-core VM). */
const PAIRED_ROUNDS = 9;

/**
 * Seconds of each scenario's load on all three services at once before any row. At 1 % the
 * sampled path runs a hundredth as often as the rest, so V8 optimises it a hundred times later:
 * its cost falls from +40-55 % in a service's first seconds to +6-12 % after a minute
 * (docs/performance.md). The rows are the cost of a service that has been running, as an
 * operator's is; each service gets the same warm-up.
 */
const SETTLE_SECONDS_PER_SCENARIO = 10;

async function settle(services: TracingService[], m: TracingMeasure): Promise<void> {
  for (const [id, , requests] of m.scenarios) {
    m.log(`tracing: ${SETTLE_SECONDS_PER_SCENARIO} s of ${id} on all three at once (warm-up)`);
    await Promise.all(services.map((s) => runLoad({ url: s.url, serverPid: s.child.pid, connections: m.warmupConnections, duration: SETTLE_SECONDS_PER_SCENARIO, requests: requests() })));
  }
}

/** Each service's server CPU per request over PAIRED_ROUNDS rounds of the load on all of them at once. */
async function pairedRounds(services: TracingService[], m: TracingMeasure, requests: () => AcRequest[]): Promise<Map<TracingService, number[]>> {
  const perRound = new Map(services.map((s) => [s, [] as number[]]));
  const duration = Math.max(2, m.duration);
  for (let round = 0; round < PAIRED_ROUNDS; round++) {
    await sleep(250);
    const loads = await Promise.all(services.map((s) => runLoad({ url: s.url, serverPid: s.child.pid, connections: 50, duration, requests: requests() })));
    services.forEach((s, i) => perRound.get(s)!.push(loads[i]!.serverCpuUsPerRequest));
  }
  return perRound;
}

/** "+12.3 %": the median over rounds of a service's CPU per request against off's in the same round. */
function pairedCost(rounds: readonly number[], off: readonly number[]): string {
  const ratios = rounds.map((us, i) => us / off[i]! - 1);
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)} %`;
  return `paired (all three loaded at once, ${ratios.length} rounds): server CPU ${pct(median(ratios))} vs off (rounds ${ratios.map((x) => pct(x).replace(' ', '')).join(', ')})`;
}

/** Rows per scenario and mode, in the order off, 100, 1, 1, 100, off (each mode's mean position the same). */
export async function measureTracing(services: TracingService[], m: TracingMeasure): Promise<Row[]> {
  const rows: Row[] = [];
  const connections = 50;
  const order = [0, 1, 2, 2, 1, 0].map((i) => services[i]!);
  await settle(services, m);
  for (const [id, title, requests] of m.scenarios) {
    const runsOf = new Map<TracingService, LoadResult[]>();
    for (const s of order) {
      const spec = { url: s.url, serverPid: s.child.pid };
      if (m.warmup > 0 && !runsOf.has(s)) await runLoad({ ...spec, connections: m.warmupConnections, duration: m.warmup, requests: requests() });
      await sleep(250);
      const load = await runLoad({ ...spec, connections, duration: m.duration, requests: requests() });
      runsOf.set(s, [...(runsOf.get(s) ?? []), load]);
      m.log(`tracing ${id} @${s.mode}: ${Math.round(load.reqPerSec)} req/s, p99 ${load.latencyMs.p99.toFixed(2)} ms (${load.serverCpuUsPerRequest.toFixed(0)} µs/req)`);
    }
    const off = m.joinLoads(runsOf.get(services[0]!)!);
    const paired = await pairedRounds(services, m, requests);
    for (const s of services) {
      const runs = runsOf.get(s)!;
      const load = m.joinLoads(runs);
      const cost =
        s.mode === 'off'
          ? ''
          : `; cost vs off: ${(100 * (1 - load.reqPerSec / off.reqPerSec)).toFixed(1)}% req/s, server CPU ${load.serverCpuUsPerRequest.toFixed(0)} vs ${off.serverCpuUsPerRequest.toFixed(0)} µs/req; ` +
            pairedCost(paired.get(s)!, paired.get(services[0]!)!);
      m.log(`tracing ${id} @${s.mode} paired: ${paired.get(s)!.map((us) => us.toFixed(0)).join(', ')} µs/req`);
      rows.push({
        id: `tracing-${id}-${s.mode}`,
        scenario: `${MODES[s.mode].title}: ${title}`,
        connections,
        load,
        ratio: undefined,
        serverRssMb: undefined,
        note: `runs: ${runs.map((r) => Math.round(r.reqPerSec)).join(' and ')} req/s${cost}`,
      });
    }
  }
  return rows;
}
