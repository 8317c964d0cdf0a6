// /docs/keys: the guide (pages/keys.md) with its scopes table generated from the served documents:
// each scope, and the operations that declare it (`x-required-scope`), so the table cannot drift
// from what the server enforces.
import { SCOPES } from '../../schemas/api-keys.js';
import { allOperations, type OpenApiDocument, referenceLink } from './document.js';
import { escapeHtml, markdown } from './markdown.js';

export const KEYS_PLACEHOLDERS = { scopes: '{{scopes}}' } as const;

/** One row per scope: what it implies, and the operations that need it. */
export function scopesTable(docs: OpenApiDocument[]): string {
  const operations = allOperations(docs);
  const rows = SCOPES.map((scope) => {
    const needing = operations.filter((op) => op.extensions['x-required-scope'] === scope);
    const links = needing.map((op) => `<a href="${escapeHtml(referenceLink(op))}"><code>${escapeHtml(op.operationId)}</code></a>`).join(', ');
    const implies = scope.endsWith(':write') ? `<code>${escapeHtml(scope.replace(/:write$/, ':read'))}</code>` : '';
    return `<tr id="${escapeHtml(scope.replace(':', '-'))}"><td><code>${escapeHtml(scope)}</code></td><td>${implies}</td><td>${links || 'none yet'}</td></tr>`;
  });
  return (
    '<table class="scopes"><thead><tr><th scope="col">Scope</th><th scope="col">Also grants</th>' +
    `<th scope="col">Operations that need it</th></tr></thead><tbody>\n${rows.join('\n')}\n</tbody></table>`
  );
}

/** The rendered guide with the generated table in place of its placeholder. */
export function keysMain(source: string, docs: OpenApiDocument[]): string {
  const filled = markdown.render(source).replace(`<p>${KEYS_PLACEHOLDERS.scopes}</p>`, scopesTable(docs));
  if (filled.includes('{{')) throw new Error('pages/keys.md: a generated table is missing or misplaced (a {{…}} placeholder is left).');
  return filled;
}
