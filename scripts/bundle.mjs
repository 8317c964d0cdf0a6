// `npm run build`, after tsc: bundles the compiled CLI (dist/cli/main.js and the commands it
// imports when they run) into dist/bundle/, which bin/petstore.js runs. Loading ~900 ES module
// files (ours and TypeBox's ~700) was half of a server's start and most of a one-shot command's
// (docs/performance.md, "Start-up: one bundle"). Every other package stays external: they are
// CommonJS files loaded from node_modules as before, where native addons (better-sqlite3) and
// files found by path keep working.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

const OUT = 'dist/bundle';
/** Bundled besides our own modules: packages of many small ES module files. */
const BUNDLED = /^typebox(\/|$)/;

rmSync(OUT, { recursive: true, force: true });
await build({
  entryPoints: { main: 'dist/cli/main.js' },
  outdir: OUT,
  bundle: true,
  splitting: true, // each command's modules load when it runs, as they do from dist/cli
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked', // chained to src/ through tsc's maps (node --enable-source-maps)
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
  plugins: [
    {
      name: 'packages-external',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => (BUNDLED.test(args.path) ? undefined : { path: args.path, external: true }));
      },
    },
  ],
});
