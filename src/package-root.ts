// The package's root (the folder of its package.json), found by walking up from this module.
// The compiled tree (dist/http/…) and the bundle (dist/bundle/…) sit at different depths, so a
// fixed '../../../' would find the portal's files from one of them only.
import { existsSync } from 'node:fs';

export function packageRoot(from: string | URL = import.meta.url): URL {
  for (let dir = new URL('./', from); ; ) {
    if (existsSync(new URL('package.json', dir))) return dir;
    const up = new URL('../', dir);
    if (up.href === dir.href) throw new Error(`no package.json above ${String(from)}`);
    dir = up;
  }
}
