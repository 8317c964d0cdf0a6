// Summarizes a V8 .cpuprofile (from `node --cpu-prof`): where the time goes by package,
// and the top functions by self and by inclusive time.
// Usage: node --import tsx bench/cpuprofile-summary.ts <file.cpuprofile | dir> [--top N]
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Groups a frame by who owns the code: the app, a package, node core, V8/native. */
export function category(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(garbage collector)') return '(gc)';
    if (functionName === '(idle)') return '(idle)';
    if (functionName === '(program)') return '(program: native, not attributed to JS)';
    return '(native/builtin)';
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node core';
  const app = /\/(dist|src)\/(.*)$/.exec(url);
  if (app) return `app ${app[1]}/${app[2]!.split('/')[0]}`;
  return 'other';
}

function frameKey(frame: CallFrame): string {
  const where = frame.url ? `${frame.url.replace(/^file:\/\//, '').replace(/^.*node_modules\//, '')}:${frame.lineNumber + 1}` : '';
  return `${frame.functionName || '(anonymous)'} ${where}`.trim();
}

function pct(part: number, whole: number): string {
  return `${((100 * part) / whole).toFixed(1).padStart(5)}%`;
}

export function summarizeCpuProfile(file: string, top = 25): string {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }

  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const categories = new Map<string, number>();
  let total = 0;
  let idle = 0;
  // timeDeltas[i] is the time before sample i: attribute it to the sampled stack.
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const node = byId.get(id);
    if (!node) return;
    total += dt;
    if (node.callFrame.functionName === '(idle)') idle += dt;
    const key = frameKey(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + dt);
    const cat = category(node.callFrame);
    categories.set(cat, (categories.get(cat) ?? 0) + dt);
    // Count each function once per sample, so recursion does not inflate inclusive time.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)?.callFrame;
      if (!frame || frame.functionName === '(root)') continue;
      const k = frameKey(frame);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
    }
  });

  const busy = total - idle;
  const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
  const lines: string[] = [];
  lines.push(`${path.basename(file)}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (${pct(busy, total).trim()}); percentages below are of busy time`);
  lines.push('', 'By owner (self time):');
  for (const [cat, t] of [...categories].filter(([c]) => c !== '(idle)').sort((a, b) => b[1] - a[1])) {
    lines.push(`  ${ms(t)} ${pct(t, busy)}  ${cat}`);
  }
  lines.push('', `Top ${top} functions by self time:`);
  for (const [key, t] of [...self].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`  ${ms(t)} ${pct(t, busy)}  ${key}`);
  }
  lines.push('', `Top ${top} functions by inclusive time:`);
  for (const [key, t] of [...inclusive].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`  ${ms(t)} ${pct(t, busy)}  ${key}`);
  }
  return lines.join('\n');
}

/** The newest .cpuprofile in a directory, or the file itself. */
export function resolveProfile(target: string): string {
  if (!fs.statSync(target).isDirectory()) return target;
  const files = fs
    .readdirSync(target)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(target, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (!files[0]) throw new Error(`no .cpuprofile in ${target}`);
  return files[0];
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  const topIndex = args.indexOf('--top');
  const top = topIndex >= 0 ? Number(args.splice(topIndex, 2)[1]) : 25;
  if (!args[0]) {
    process.stderr.write('usage: node --import tsx bench/cpuprofile-summary.ts <file.cpuprofile | dir> [--top N]\n');
    process.exit(2);
  }
  process.stdout.write(`${summarizeCpuProfile(resolveProfile(args[0]), top)}\n`);
}
