// /docs: the interactive reference. One Swagger UI per served document (reference.js reads the
// data attributes), its operations grouped by resource (the document keeps its single tag, which
// the spec requires; deep links `#/animals/<operationId>` stay), and the document's `x-webhooks`
// (each event kind with its payload) rendered here, since Swagger UI shows none for OpenAPI 3.0.
import { EXAMPLE_OPENAPI_PATH } from '../example/index.js';
import { OPENAPI_PATH } from '../plugins/openapi.js';
import { EXAMPLE_BASE_PATH } from '../routes/messages.js';
import { type OpenApiDocument, operations } from './document.js';
import { escapeHtml } from './markdown.js';
import { webhookEventsSection } from './webhook-events.js';

/** The APIs the reference shows, one above the other: a newcomer sees every operation of both at once. */
const REFERENCE_APIS = [
  { id: 'petstore-api', name: 'Petstore API', document: OPENAPI_PATH, server: '/v1', about: 'pets and orders' },
  { id: 'example-api', name: 'Example API', document: EXAMPLE_OPENAPI_PATH, server: EXAMPLE_BASE_PATH, about: 'the quickstart\'s messages, <code>{api_url}</code>' },
] as const;

/** Resources by path prefix (relative to the API's base path), in page order; the guide that walks through each. */
const RESOURCES = [
  { prefix: '/pets', name: 'Pets', guide: '/docs/quickstart' },
  { prefix: '/store/inventory', name: 'Pets', guide: '/docs/quickstart' },
  { prefix: '/categories', name: 'Categories', guide: '/docs/quickstart' },
  { prefix: '/store/orders', name: 'Orders', guide: '/docs/orders' },
  { prefix: '/events', name: 'Events', guide: '/docs/webhooks' },
  { prefix: '/webhook-endpoints', name: 'Webhook endpoints', guide: '/docs/webhooks' },
  { prefix: '/api-keys', name: 'API keys', guide: '/docs/keys' },
  { prefix: '/audit-log', name: 'Audit log', guide: '/docs/keys' },
  { prefix: '/messages', name: 'Messages', guide: '/docs/quickstart#send-a-message-then-wait-for-it' },
] as const;

export interface ResourceGroup {
  /** The section's id on the page: `resource-<id>`. */
  id: string;
  name: string;
  guide: string;
  /** `get /pets/{petId}`: method and path as in the document, as Swagger UI names them. */
  operations: string[];
}

const idOf = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, '-');

/** The document's operations by resource, in RESOURCES order; an unknown path gets a group of its first segment. */
export function resourceGroups(doc: OpenApiDocument): ResourceGroup[] {
  const groups = new Map<string, ResourceGroup>();
  for (const { name, guide } of RESOURCES) groups.set(name, { id: idOf(name), name, guide, operations: [] });
  for (const op of operations(doc)) {
    const known = RESOURCES.find((r) => op.path === r.prefix || op.path.startsWith(`${r.prefix}/`));
    const segment = op.path.split('/')[1] ?? 'other';
    const name = known?.name ?? segment.charAt(0).toUpperCase() + segment.slice(1);
    if (!groups.has(name)) groups.set(name, { id: idOf(name), name, guide: '/docs/quickstart', operations: [] });
    groups.get(name)!.operations.push(`${op.method.toLowerCase()} ${op.path}`);
  }
  return [...groups.values()].filter((g) => g.operations.length > 0);
}

const link = (href: string, html: string) => `<a href="${escapeHtml(href)}">${html}</a>`;

export function referenceMain(docs: OpenApiDocument[]): string {
  const apis = REFERENCE_APIS.map((api, i) => ({ ...api, groups: docs[i] ? resourceGroups(docs[i]) : [] }));
  const contents = apis.map((api) => {
    const resources = api.groups.map((g) => link(`#resource-${g.id}`, escapeHtml(g.name)));
    if (api.id === 'petstore-api') resources.push(link('#webhook-events', 'Webhook events'));
    return `<li>${link(`#${api.id}`, escapeHtml(api.name))} (<code>${escapeHtml(api.server)}</code>: ${api.about}): ${resources.join(' · ')}</li>`;
  });
  const sections = apis.map(
    (api) =>
      `<section class="reference-api" id="${api.id}" aria-label="${escapeHtml(api.name)}" data-document="${escapeHtml(api.document)}" ` +
      `data-server="${escapeHtml(api.server)}" data-groups="${escapeHtml(JSON.stringify(api.groups))}">` +
      `<p class="reference-loading">Loading the ${escapeHtml(api.name)} reference…</p></section>`,
  );
  const documents = REFERENCE_APIS.map((api) => link(api.document, escapeHtml(api.document))).join(' and ');
  return (
    '<div class="reference-intro">' +
    '<p>Send requests from this page: click <strong>Authorize</strong>, paste your API key (see the ' +
    '<a href="/docs/quickstart">Quickstart</a>), then open an operation and choose <strong>Try it out</strong>. ' +
    'One key works for both APIs on this page. It stays in this tab\'s memory, and requests go only to this server.</p>' +
    `<nav class="reference-contents" aria-label="Resources"><p>This page has two APIs, by resource:</p><ul>${contents.join('')}</ul></nav>` +
    '</div>\n' +
    `${sections[0]}\n${webhookEventsSection(docs[0] ?? {})}\n${sections.slice(1).join('\n')}\n` +
    `<noscript><p class="reference-loading">The interactive reference needs JavaScript. The documents themselves are ${documents}.</p></noscript>`
  );
}
