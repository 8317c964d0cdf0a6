// The developer portal: GET / -> /docs, the interactive reference (Swagger UI over the served
// /v1/openapi.json and /example/v1/openapi.json), the guides (Markdown in ./pages) and the pages
// generated from the error model and the documents. Everything it loads comes from this origin
// (see CSP below).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import etag from '@fastify/etag';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { DEPRECATION_DOC_PATH } from '../deprecation.js';
import { EXAMPLE_OPENAPI_PATH } from '../example/index.js';
import { OPENAPI_PATH } from '../plugins/openapi.js';
import { EXAMPLE_BASE_PATH } from '../routes/messages.js';
import { deprecationsList } from './deprecations-page.js';
import { errorsTable } from './errors-page.js';
import { ASSETS_PREFIX, DOCS_PATH, renderPage } from './layout.js';
import { webhooksMain } from './webhooks-page.js';
import { keysMain } from './keys-page.js';
import { escapeHtml, markdown } from './markdown.js';
import type { OpenApiDocument } from './document.js';

const ROOT = new URL('../../../', import.meta.url);
/** Markdown prose of the guide pages (read from the source tree, also when running dist/). */
export const PAGES_DIR = fileURLToPath(new URL('src/http/portal/pages/', ROOT));
/** Built by scripts/build-portal.mjs (`npm run build`): Swagger UI and ./assets, with .br and .gz copies. */
export const ASSETS_DIR = fileURLToPath(new URL('dist/portal/assets/', ROOT));

/**
 * Only this origin, for everything. Images may also be data: URIs (Swagger UI's stylesheet
 * draws its icons with them); no inline script or style, no eval, no framing.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export interface PortalOptions {
  /** PETSTORE_DOCS: false keeps only /docs/deprecations, which API responses link to. */
  enabled: boolean;
  /** The served documents: /v1/openapi.json, then the example API's /example/v1/openapi.json. */
  openApiDocuments: () => OpenApiDocument[];
}

/**
 * The APIs the reference shows, one Swagger UI each, one above the other (reference.js reads the
 * data attributes): a newcomer sees every operation of both without choosing a definition first.
 */
const REFERENCE_APIS = [
  {
    id: 'petstore-api',
    name: 'Petstore API',
    document: OPENAPI_PATH,
    server: '/v1',
    about: 'pets and orders',
  },
  {
    id: 'example-api',
    name: 'Example API',
    document: EXAMPLE_OPENAPI_PATH,
    server: EXAMPLE_BASE_PATH,
    about: 'the quickstart\'s messages, <code>{api_url}</code>',
  },
] as const;

function referenceMain(): string {
  const contents = REFERENCE_APIS.map(
    (api) => `<a href="#${api.id}">${escapeHtml(api.name)}</a> (<code>${escapeHtml(api.server)}</code>: ${api.about})`,
  ).join(' and, below it, ');
  const sections = REFERENCE_APIS.map(
    (api) =>
      `<section class="reference-api" id="${api.id}" aria-label="${escapeHtml(api.name)}" data-document="${escapeHtml(api.document)}" ` +
      `data-server="${escapeHtml(api.server)}"><p class="reference-loading">Loading the ${escapeHtml(api.name)} reference…</p></section>`,
  ).join('\n');
  const documents = REFERENCE_APIS.map((api) => `<a href="${escapeHtml(api.document)}">${escapeHtml(api.document)}</a>`).join(' and ');
  return (
    '<div class="reference-intro">' +
    '<p>Send requests from this page: click <strong>Authorize</strong>, paste your API key (see the ' +
    '<a href="/docs/quickstart">Quickstart</a>), then open an operation and choose <strong>Try it out</strong>. ' +
    'One key works for both APIs on this page. It stays in this tab\'s memory, and requests go only to this server.</p>' +
    `<p class="reference-contents">This page has two APIs: ${contents}.</p>` +
    '</div>\n' +
    `${sections}\n` +
    `<noscript><p class="reference-loading">The interactive reference needs JavaScript. The documents themselves are ${documents}.</p></noscript>`
  );
}

const readPage = (name: string) => readFileSync(path.join(PAGES_DIR, name), 'utf8');

/** Renders on first request (the document exists only once the app is ready), then serves the same bytes. */
function memo(render: () => string): () => string {
  let html: string | undefined;
  return () => (html ??= render());
}

function sendHtml(reply: FastifyReply, html: string): FastifyReply {
  // Revalidated on every use (ETag), so a new release is seen at once.
  return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(html);
}

export const portal: FastifyPluginAsync<PortalOptions> = async (app, { enabled, openApiDocuments }) => {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    reply.header('referrer-policy', 'no-referrer');
    done();
  });
  // Strong ETags from the bytes of each generated page; If-None-Match -> 304.
  await app.register(etag, { algorithm: 'sha256' });

  const deprecationsPage = memo(() =>
    renderPage({
      title: 'Deprecations',
      path: DEPRECATION_DOC_PATH,
      main: markdown.render(readPage('deprecations.md')) + deprecationsList(openApiDocuments()),
      mainClass: 'guide',
      standalone: !enabled,
    }),
  );
  app.get(DEPRECATION_DOC_PATH, { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, deprecationsPage()));
  if (!enabled) return;

  if (!existsSync(ASSETS_DIR)) app.log.warn({ dir: ASSETS_DIR }, 'developer portal assets are missing: run `npm run build`');
  await app.register(fastifyStatic, {
    root: ASSETS_DIR,
    prefix: ASSETS_PREFIX,
    decorateReply: false,
    index: false,
    // The .br or .gz copy the client accepts (Vary: Accept-Encoding), else the file itself.
    preCompressed: true,
    cacheControl: false,
    setHeaders: (res) => {
      res.setHeader('cache-control', 'no-cache');
      // Every asset has .br and .gz copies: caches must key on Accept-Encoding.
      res.setHeader('vary', 'accept-encoding');
    },
  });

  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect(DOCS_PATH, 302));
  app.get(`${DOCS_PATH}/`, { schema: { hide: true } }, async (_request, reply) => reply.redirect(DOCS_PATH, 302));

  const reference = memo(() =>
    renderPage({
      title: 'API reference',
      path: DOCS_PATH,
      main: referenceMain(),
      mainClass: 'reference',
      stylesheets: [`${ASSETS_PREFIX}swagger-ui.css`],
      scripts: [`${ASSETS_PREFIX}swagger-ui-bundle.js`, `${ASSETS_PREFIX}reference.js`],
    }),
  );
  const quickstart = memo(() =>
    renderPage({ title: 'Quickstart', path: `${DOCS_PATH}/quickstart`, main: markdown.render(readPage('quickstart.md')), mainClass: 'guide' }),
  );
  const webhooks = memo(() =>
    renderPage({ title: 'Events and webhooks', path: `${DOCS_PATH}/webhooks`, main: webhooksMain(readPage('webhooks.md')), mainClass: 'guide' }),
  );
  const agents = memo(() =>
    renderPage({ title: 'AI agents (MCP)', path: `${DOCS_PATH}/agents`, main: markdown.render(readPage('agents.md')), mainClass: 'guide' }),
  );
  const keys = memo(() =>
    renderPage({ title: 'API keys', path: `${DOCS_PATH}/keys`, main: keysMain(readPage('keys.md'), openApiDocuments()), mainClass: 'guide' }),
  );
  const errors = memo(() =>
    renderPage({
      title: 'Errors',
      path: `${DOCS_PATH}/errors`,
      main: markdown.render(readPage('errors.md')) + errorsTable(openApiDocuments()),
      mainClass: 'guide',
    }),
  );

  app.get(DOCS_PATH, { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, reference()));
  app.get(`${DOCS_PATH}/quickstart`, { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, quickstart()));
  app.get(`${DOCS_PATH}/webhooks`, { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, webhooks()));
  app.get(`${DOCS_PATH}/agents`, { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, agents()));
  app.get(`${DOCS_PATH}/keys`, { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, keys()));
  app.get(`${DOCS_PATH}/errors`, { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, errors()));
};
