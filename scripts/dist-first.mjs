// `--import`ed by scripts/test.mjs after tsx: a test's import of `src/…` loads the build in `dist/`
// instead, when the build is newer than every source file. Loading the app through tsx costs each
// test file about a second of CPU more than loading it from `dist/` (docs/performance.md, "CI's
// time"). A stale or missing build falls back to tsx, so a test never runs old code.
import { register } from 'node:module';
import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = `${dir}/${entry.name}`;
    const time = entry.isDirectory() ? newestSource(full) : statSync(full).mtimeMs;
    if (time > newest) newest = time;
  }
  return newest;
}

function buildIsFresh() {
  try {
    const built = statSync(fileURLToPath(new URL('dist/.tsbuildinfo', root))).mtimeMs;
    return built >= newestSource(fileURLToPath(new URL('src', root)));
  } catch {
    return false;
  }
}

if (process.env.PETSTORE_TEST_FROM_SOURCE !== '1' && buildIsFresh()) {
  register(new URL('./dist-first-hooks.mjs', import.meta.url), {
    data: { src: new URL('src/', root).href, dist: new URL('dist/', root).href },
  });
} else if (process.env.PETSTORE_TEST_FROM_SOURCE !== '1') {
  process.emitWarning('dist/ is older than src/: this test loads src/ through tsx (`npm run build` makes it faster)');
}
