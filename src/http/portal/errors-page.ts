// /docs/errors: every error code of the error model (src/errors.ts) with its status and when it
// happens, and the operations whose documented responses name it (from the served documents).
import { ERROR_CODES, ERROR_STATUS, type ErrorCode } from '../../errors.js';
import { escapeHtml, markdown } from './markdown.js';
import { allOperations, type OpenApiDocument, type Operation, referenceLink } from './document.js';

/** More operations than this are listed behind a summary. */
const FOLD_AFTER = 4;

const isErrorCode = (name: string): name is ErrorCode => Object.hasOwn(ERROR_CODES, name);

/** Which operations' responses name each code (response descriptions quote it: `not_found`). */
function documentedOn(docs: OpenApiDocument[]): Map<ErrorCode, Set<Operation>> {
  const found = new Map<ErrorCode, Set<Operation>>();
  for (const op of allOperations(docs)) {
    for (const { description } of op.responses) {
      for (const [, name] of description.matchAll(/`([a-z_]+)`/g)) {
        if (!name || !isErrorCode(name)) continue;
        found.set(name, (found.get(name) ?? new Set()).add(op));
      }
    }
  }
  return found;
}

export function errorsTable(docs: OpenApiDocument[]): string {
  const where = documentedOn(docs);
  const codes = (Object.keys(ERROR_CODES) as ErrorCode[]).sort((a, b) => ERROR_STATUS[a] - ERROR_STATUS[b]);
  const rows = codes.map((code) => {
    const ops = [...(where.get(code) ?? [])];
    const links = ops.map((op) => `<a href="${escapeHtml(referenceLink(op))}"><code>${escapeHtml(op.operationId)}</code></a>`).join(', ');
    // A long list folds, so that the row stays as tall as its explanation.
    const returnedBy = ops.length === 0
      ? 'Any request'
      : ops.length <= FOLD_AFTER ? links : `<details><summary>${ops.length} operations</summary><span class="operations">${links}</span></details>`;
    return (
      `<tr id="${escapeHtml(code)}"><td><code>${escapeHtml(code)}</code></td><td>${ERROR_STATUS[code]}</td>` +
      `<td>${markdown.renderInline(ERROR_CODES[code])}</td><td>${returnedBy}</td></tr>`
    );
  });
  return (
    '<table class="error-codes"><thead><tr><th scope="col"><code>code</code></th><th scope="col">Status</th>' +
    '<th scope="col">When it happens</th><th scope="col">Documented on</th></tr></thead>' +
    `<tbody>\n${rows.join('\n')}\n</tbody></table>`
  );
}
