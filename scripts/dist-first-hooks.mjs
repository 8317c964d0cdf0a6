// Module hooks for scripts/dist-first.mjs: `src/x.js` imported by a test resolves to `dist/x.js`.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

let src = '';
let dist = '';

export function initialize(data) {
  ({ src, dist } = data);
}

export async function resolve(specifier, context, nextResolve) {
  if (specifier.startsWith('.') && context.parentURL?.startsWith('file:')) {
    const url = new URL(specifier, context.parentURL).href;
    if (url.startsWith(src) && url.endsWith('.js')) {
      const built = dist + url.slice(src.length);
      if (existsSync(fileURLToPath(built))) return { url: built, format: 'module', shortCircuit: true };
    }
  }
  return nextResolve(specifier, context);
}
