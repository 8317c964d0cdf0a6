// The reference's "Webhook events": the served document's `x-webhooks` (one POST per event kind),
// each with its description, the signature headers and the fields of its payload schema. Swagger
// UI renders `webhooks` of OpenAPI 3.1 only; this document is 3.0.3, so the page renders them.
import type { OpenApiDocument } from './document.js';
import { escapeHtml, markdown } from './markdown.js';

type Json = Record<string, unknown>;

const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const at = (value: unknown, ...keys: string[]): unknown => keys.reduce<unknown>((v, k) => (isRecord(v) ? v[k] : undefined), value);

/** `#/components/schemas/Pet` -> its schema in the document and its name. */
function resolve(doc: OpenApiDocument, schema: unknown): { schema: Json; name: string } {
  const ref = text(at(schema, '$ref'));
  if (!ref.startsWith('#/components/schemas/')) return { schema: isRecord(schema) ? schema : {}, name: '' };
  const name = ref.slice('#/components/schemas/'.length);
  const target = at(doc, 'components', 'schemas', name);
  return { schema: isRecord(target) ? target : {}, name };
}

/** A field's type as a reader names it: `Pet`, `"pet.created"`, `string (date-time)`, `PetStatus or null`. */
function typeOf(schema: unknown): string {
  if (!isRecord(schema)) return 'value';
  const ref = text(schema.$ref);
  if (ref) return ref.split('/').at(-1) ?? ref;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  const union = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (union) return union.map(typeOf).join(' or ');
  const type = text(schema.type) || 'value';
  const format = text(schema.format);
  return `${type}${format ? ` (${format})` : ''}${schema.nullable === true ? ' or null' : ''}`;
}

/** One row per property; an inline object's properties follow as `parent.child` (two levels). */
function fieldRows(doc: OpenApiDocument, schema: Json, prefix = '', depth = 0): string[] {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(properties).flatMap(([name, field]) => {
    const path = `${prefix}${name}`;
    const row =
      `<tr><td><code>${escapeHtml(path)}</code>${required.has(name) ? '' : ' <span class="optional">optional</span>'}</td>` +
      `<td><code>${escapeHtml(typeOf(field))}</code></td><td>${markdown.renderInline(text(at(field, 'description')))}</td></tr>`;
    const inline = isRecord(field) && !field.$ref && isRecord(field.properties) && depth < 1;
    return inline ? [row, ...fieldRows(doc, field, `${path}.`, depth + 1)] : [row];
  });
}

function eventArticle(doc: OpenApiDocument, type: string, post: Json): string {
  const payload = resolve(doc, at(post, 'requestBody', 'content', 'application/json', 'schema'));
  const stability = text(post['x-stability']);
  return (
    `<article class="webhook-event" id="webhook-${escapeHtml(type)}">` +
    `<h3><span class="webhook-method">POST</span> <code>${escapeHtml(type)}</code>` +
    (stability ? ` <span class="portal-badge portal-badge-stability">${escapeHtml(stability)}</span>` : '') +
    '</h3>' +
    `<p>${markdown.renderInline(text(post.description))}</p>` +
    `<p class="webhook-payload-name">Body: <code>${escapeHtml(payload.name || 'object')}</code></p>` +
    '<div class="table-scroll"><table class="webhook-payload"><thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Description</th></tr></thead>' +
    `<tbody>${fieldRows(doc, payload.schema).join('')}</tbody></table></div></article>`
  );
}

/** The event kinds of `x-webhooks`, in document order, with the headers every delivery carries. */
export function webhookEventsSection(doc: OpenApiDocument): string {
  const hooks = isRecord(doc['x-webhooks']) ? Object.entries(doc['x-webhooks']) : [];
  const posts = hooks.flatMap(([type, item]) => (isRecord(at(item, 'post')) ? [[type, at(item, 'post') as Json] as const] : []));
  const headers = (Array.isArray(posts[0]?.[1].parameters) ? posts[0][1].parameters : []).filter(isRecord);
  const headerRows = headers.map((h) => `<tr><td><code>${escapeHtml(text(h.name))}</code></td><td>${markdown.renderInline(text(h.description))}</td></tr>`);
  return (
    '<section class="webhook-events" id="webhook-events" aria-labelledby="webhook-events-title">' +
    '<h2 id="webhook-events-title">Webhook events <code>x-webhooks</code></h2>' +
    '<p>What the server POSTs to your webhook endpoints: one event kind each, signed (Standard Webhooks). ' +
    'How to receive, verify and retry them: <a href="/docs/webhooks">Webhooks</a>. Every delivery carries these headers:</p>' +
    '<div class="table-scroll"><table class="webhook-headers"><thead><tr><th scope="col">Header</th><th scope="col">Value</th></tr></thead>' +
    `<tbody>${headerRows.join('')}</tbody></table></div>\n` +
    posts.map(([type, post]) => eventArticle(doc, type, post)).join('\n') +
    '</section>'
  );
}
