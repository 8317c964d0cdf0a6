// Sums up bench/side-by-side.sh's runs: per scenario and connection count, each build's ratios
// to the ceiling, each build's mean ÷ the before build's with a 90 % bootstrap interval (runs
// resampled; a fixed seed, so the same runs give the same interval), and the server's CPU per
// request.
//   node bench/side-by-side-summary.mjs [results folder]
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2] ?? 'bench/results/side-by-side';
const files = fs.readdirSync(dir).filter((f) => /^\d+-[a-z-]+\.txt$/.test(f)).sort((a, b) => parseInt(a) - parseInt(b));
const builds = [...new Set(files.map((f) => f.replace(/^\d+-|\.txt$/g, '')))].sort((a, b) => (a === 'before' ? -1 : b === 'before' ? 1 : a.localeCompare(b)));
const rows = new Map(); // "scenario|conns" → build → { ratio: [], cpu: [] }
for (const file of files) {
  const build = file.replace(/^\d+-|\.txt$/g, '');
  for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    // | scenario | conns | req/s | ratio× | p50 | p99 | max | errors | cpu | µs/req | rss | notes |
    if (cells.length < 12 || !/^\d+$/.test(cells[2]) || !/×$/.test(cells[4])) continue;
    const key = `${cells[1]}|${cells[2]}`;
    if (!rows.has(key)) rows.set(key, new Map());
    if (!rows.get(key).has(build)) rows.get(key).set(build, { ratio: [], cpu: [] });
    rows.get(key).get(build).ratio.push(Number.parseFloat(cells[4]));
    rows.get(key).get(build).cpu.push(Number.parseFloat(cells[10]));
  }
}
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
let seed = 42;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const resample = (xs) => xs.map(() => xs[Math.floor(random() * xs.length)]);
/** after ÷ before of the means, and its 5th and 95th percentiles over 2 000 resamplings. */
function compared(after, before) {
  const ratios = Array.from({ length: 2000 }, () => mean(resample(after)) / mean(resample(before))).sort((a, b) => a - b);
  return `${(mean(after) / mean(before)).toFixed(3)} (${ratios[100].toFixed(2)}–${ratios[1899].toFixed(2)})`;
}
const others = builds.filter((b) => b !== 'before');
console.log(`| scenario | conns | ${builds.map((b) => `${b} (× ceiling)`).join(' | ')} | ${others.map((b) => `${b} ÷ before (90 %)`).join(' | ')} | server CPU µs/req (${builds.join(' / ')}) |`);
console.log(`|---|--:|${builds.map(() => '--:|').join('')}${others.map(() => '--:|').join('')}--:|`);
for (const [key, byBuild] of rows) {
  const [scenario, conns] = key.split('|');
  const before = byBuild.get('before');
  if (!before || others.some((b) => !byBuild.has(b))) continue;
  const cells = [
    ...builds.map((b) => byBuild.get(b).ratio.map((r) => r.toFixed(3)).join(', ')),
    ...others.map((b) => compared(byBuild.get(b).ratio, before.ratio)),
    builds.map((b) => mean(byBuild.get(b).cpu).toFixed(0)).join(' / '),
  ];
  console.log(`| ${scenario} | ${conns} | ${cells.join(' | ')} |`);
}
