// Result rows, targets and their Markdown rendering.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import type { LoadResult } from './load.js';

export interface Row {
  id: string;
  scenario: string;
  connections: number;
  load: LoadResult;
  /** req/s divided by the ceiling's req/s at the same connection count. */
  ratio: number | undefined;
  /** Service VmRSS right after the run, MB. */
  serverRssMb: number | undefined;
  note?: string;
}

export type Verdict = 'PASS' | 'MISS' | 'SKIP';

export interface Target {
  name: string;
  goal: string;
  actual: string;
  verdict: Verdict;
}

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  node: string;
  os: string;
  totalMemMb: number;
  loadAvgAtStart: number[];
  tempDirFs: string;
  git: string;
  srcChanges: string[];
  date: string;
}

function mountFsType(dir: string): string {
  try {
    let best = { point: '', type: 'unknown' };
    for (const line of fs.readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [, point, type] = line.split(' ');
      if (point && type && (dir === point || dir.startsWith(point.endsWith('/') ? point : `${point}/`)) && point.length >= best.point.length) {
        best = { point, type };
      }
    }
    return `${best.type} (${best.point})`;
  } catch {
    return 'unknown';
  }
}

/** The commit, and which src/ files differ from it: the build measured is the working tree's. */
function gitState(cwd: string): { git: string; srcChanges: string[] } {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const srcChanges = git('status', '--porcelain', '--', 'src').split('\n').filter(Boolean);
    return {
      git: `${git('rev-parse', '--short', 'HEAD')}${srcChanges.length ? ` (+${srcChanges.length} uncommitted change(s) in src/)` : ''}`,
      srcChanges,
    };
  } catch {
    return { git: 'unknown', srcChanges: [] };
  }
}

export function machineInfo(repoRoot: string, tempDir: string): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    totalMemMb: Math.round(os.totalmem() / 2 ** 20),
    loadAvgAtStart: os.loadavg().map((n) => Math.round(n * 100) / 100),
    tempDirFs: mountFsType(tempDir),
    ...gitState(repoRoot),
    date: new Date().toISOString(),
  };
}

const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const fmtMs = (n: number) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0));
const fmtPct = (n: number) => `${Math.round(n)}%`;

export function errorSummary(load: LoadResult): string {
  const parts: string[] = [];
  if (load.non2xx > 0) {
    const codes = Object.entries(load.statusCodes)
      .filter(([code]) => !code.startsWith('2'))
      .map(([code, n]) => `${code}×${n}`)
      .join(' ');
    parts.push(`${load.non2xx} non-2xx (${codes})`);
  }
  if (load.errors > 0) parts.push(`${load.errors} conn errors`);
  if (load.timeouts > 0) parts.push(`${load.timeouts} timeouts`);
  return parts.length ? parts.join(', ') : '0';
}

export function rowHasErrors(row: Row): boolean {
  return row.load.non2xx + row.load.errors + row.load.timeouts > 0;
}

export function markdownTable(rows: Row[]): string {
  const header = [
    '| Scenario | Conns | req/s | × ceiling | p50 ms | p99 ms | max ms | Errors | CPU server / bench / other | Server CPU µs/req | Server RSS MB | Notes |',
    '|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|---|',
  ];
  const body = rows.map((r) =>
    [
      '',
      r.scenario,
      r.connections,
      fmtInt(r.load.reqPerSec),
      r.ratio === undefined ? 'n/a' : `${r.ratio.toFixed(3)}×`,
      fmtMs(r.load.latencyMs.p50),
      fmtMs(r.load.latencyMs.p99),
      fmtMs(r.load.latencyMs.max),
      errorSummary(r.load),
      `${fmtPct(r.load.serverCpuPct)} / ${fmtPct(r.load.benchCpuPct)} / ${fmtPct(r.load.otherCpuPct)}` +
        (r.load.databaseCpuPct === undefined ? '' : ` (+ PostgreSQL ${fmtPct(r.load.databaseCpuPct)})`),
      r.load.serverCpuUsPerRequest.toFixed(0) + (r.load.databaseCpuUsPerRequest === undefined ? '' : ` + ${r.load.databaseCpuUsPerRequest.toFixed(0)} PG`),
      r.serverRssMb === undefined ? 'n/a' : r.serverRssMb.toFixed(0),
      r.note ?? '',
      '',
    ]
      .join(' | ')
      .trim(),
  );
  return [...header, ...body].join('\n');
}

export function targetsTable(targets: Target[]): string {
  return [
    '| Target | Goal | Actual | Result |',
    '|---|---|---|---|',
    ...targets.map((t) => `| ${t.name} | ${t.goal} | ${t.actual} | ${t.verdict === 'PASS' ? 'PASS' : t.verdict === 'MISS' ? '**MISS**' : 'SKIP'} |`),
  ].join('\n');
}

export function machineLine(m: MachineInfo): string {
  return (
    `${m.cpuModel}, ${m.cores} cores, ${m.totalMemMb} MB RAM, ${m.os}; Node ${m.node}; ` +
    `load average at start ${m.loadAvgAtStart.join(' / ')}; temp dir on ${m.tempDirFs}; git ${m.git}; ${m.date}`
  );
}

/** The middle value (the mean of the two middle ones for an even count): paired rounds' figure. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
