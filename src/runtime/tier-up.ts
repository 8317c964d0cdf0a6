// Node 20's V8 has no mid tier (Maglev): a function runs as baseline code until TurboFan takes it,
// which two defaults delay (67 584 bytes of bytecode run between checks, and 500 calls after any
// inline cache changes). Our request paths meet new object shapes often enough to keep many
// functions waiting: earlier tier-up saves 2-11 % of CPU per request on the bench
// (docs/performance.md). Asked for once a process serves, not before: start-up runs its code once,
// and tiering it up sooner cost a quarter more CPU before the first request. V8 reads both flags
// each time a function's budget is renewed, so hot code meets them within its first requests.
// Flags of the same names on the command line win; newer lines tier up differently (and name
// these otherwise): left as they are.
import { setFlagsFromString } from 'node:v8';

const SOONER: ReadonlyArray<readonly [string, number]> = [
  ['--interrupt-budget', 16384],
  ['--minimum-invocations-after-ic-update', 50],
];

let done = false;

/** Sets Node 20's tier-up flags for a serving process (once; not where the command line names them). */
export function tierUpSooner(): void {
  if (done || !process.versions.node.startsWith('20.')) return;
  done = true;
  const given = new Set(process.execArgv.map((arg) => arg.split('=')[0]!.replaceAll('_', '-')));
  for (const [name, value] of SOONER) {
    if (!given.has(name)) setFlagsFromString(`${name}=${value}`);
  }
}
