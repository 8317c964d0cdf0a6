// /docs/deprecations: every deprecated operation of the served documents, with when it was
// deprecated (`x-deprecated-since`), its removal (`x-sunset`) and its successor (`x-successor`).
import { escapeHtml, markdown } from './markdown.js';
import { allOperations, type OpenApiDocument, type Operation, referenceLink } from './document.js';

/** "21 November 2026", plus the time when it is not midnight UTC; anything unparsable as given. */
export function formatInstant(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return value;
  const date = new Date(ms);
  const day = date.toLocaleDateString('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
  return ms % 86_400_000 === 0 ? day : `${day}, ${date.toISOString().slice(11, 16)} UTC`;
}

interface Successor {
  operationId: string;
  note: string;
}

function successorOf(op: Operation): Successor | undefined {
  const value = op.extensions['x-successor'];
  if (typeof value === 'string') return { operationId: value, note: '' };
  if (typeof value !== 'object' || value === null) return undefined;
  const { operationId, note } = value as Record<string, unknown>;
  return typeof operationId === 'string' ? { operationId, note: typeof note === 'string' ? note : '' } : undefined;
}

function successorHtml(successor: Successor | undefined, all: Operation[]): string {
  if (!successor) return 'Not named: see the description below.';
  const target = all.find((o) => o.operationId === successor.operationId);
  const note = successor.note ? ` ${markdown.renderInline(successor.note)}` : '';
  const id = escapeHtml(successor.operationId);
  if (!target) return `<code>${id}</code>${note}`;
  return `<code>${escapeHtml(`${target.method} ${target.fullPath}`)}</code>${note} (<a href="${escapeHtml(referenceLink(target))}"><code>${id}</code></a>)`;
}

/** The deprecated operations of every document (a successor may be in any of them). */
export function deprecationsList(docs: OpenApiDocument[]): string {
  const all = allOperations(docs);
  const deprecated = all.filter((op) => op.deprecated);
  if (deprecated.length === 0) return '<p>No operation is deprecated.</p>';
  return deprecated
    .map((op) => {
      const since = formatInstant(op.extensions['x-deprecated-since']) ?? 'Not stated';
      const sunset = formatInstant(op.extensions['x-sunset']);
      return (
        `<section class="deprecation" id="${escapeHtml(op.operationId)}">\n` +
        `<h2><code>${escapeHtml(`${op.method} ${op.fullPath}`)}</code> <span class="operation-id">${escapeHtml(op.operationId)}</span></h2>\n` +
        '<dl>' +
        `<dt>Deprecated since</dt><dd>${escapeHtml(since)}</dd>` +
        `<dt>Removed on (sunset)</dt><dd>${sunset ? `<strong>${escapeHtml(sunset)}</strong>` : 'No date set yet'}</dd>` +
        `<dt>Use instead</dt><dd>${successorHtml(successorOf(op), all)}</dd>` +
        `<dt>Reference</dt><dd><a href="${escapeHtml(referenceLink(op))}">${escapeHtml(op.summary || op.operationId)}</a></dd>` +
        '</dl>\n' +
        (op.description ? `<div class="description">${markdown.render(op.description)}</div>\n` : '') +
        '</section>'
      );
    })
    .join('\n');
}
