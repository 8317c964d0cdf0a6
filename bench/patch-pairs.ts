// PATCH against the durable POST, alternated on the same service after both rows. The two rows
// are measured a minute apart, and this VM's capacity moves by up to 25 % within a run (the
// ceiling's start and end rows), so their ratio says as much about the machine as about PATCH.
// Here each pair's two rounds follow each other within seconds, in the order POST, PATCH, then
// PATCH, POST (each kind's mean position the same), and the median of the pairs' ratios is the
// target's figure. Both paths have run for 12 s or more by then: neither is measured warming up.
import { setTimeout as sleep } from 'node:timers/promises';
import { type AcRequest, runLoad } from './lib/load.js';

/** Pairs of rounds (five pairs spread by 10-20 points; the median of seven moves less). */
export const PATCH_PAIRS = 7;

export interface PatchPairsSpec {
  url: string;
  serverPid: number;
  /** Seconds per round. */
  duration: number;
  post: () => AcRequest[];
  patch: () => (client: number) => AcRequest[];
  log(message: string): void;
}

/** PATCH req/s ÷ POST req/s of each pair, at 50 connections. */
export async function patchPostPairs(spec: PatchPairsSpec): Promise<number[]> {
  const round = async (kind: 'POST' | 'PATCH') => {
    await sleep(250);
    const load = await runLoad({
      url: spec.url,
      serverPid: spec.serverPid,
      connections: 50,
      duration: spec.duration,
      ...(kind === 'POST' ? { requests: spec.post() } : { requests: [], perClient: spec.patch() }),
    });
    return load.reqPerSec;
  };
  const ratios: number[] = [];
  for (let pair = 0; pair < PATCH_PAIRS; pair++) {
    const first = pair % 2 === 0 ? 'POST' : 'PATCH';
    const a = await round(first);
    const b = await round(first === 'POST' ? 'PATCH' : 'POST');
    const [post, patch] = first === 'POST' ? [a, b] : [b, a];
    ratios.push(patch / post);
    spec.log(`patch vs post, pair ${pair + 1}: POST ${Math.round(post)} req/s, PATCH ${Math.round(patch)} req/s (${(patch / post).toFixed(2)})`);
  }
  return ratios;
}
