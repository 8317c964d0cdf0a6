// The developer portal: GET / -> /docs, the interactive reference (reference-page.ts), the
// guides (guides.ts: Markdown in ./pages, some with tables generated from the error model and the
// documents) and the deprecations. Everything it loads comes from this origin
// (see CSP below).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import etag from '@fastify/etag';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { DEPRECATION_DOC_PATH } from '../deprecation.js';
import { deprecationsList } from './deprecations-page.js';
import { GUIDES, readPage } from './guides.js';
import { referenceMain } from './reference-page.js';
import { ASSETS_PREFIX, DOCS_PATH, renderPage } from './layout.js';
import { markdown } from './markdown.js';
import type { OpenApiDocument } from './document.js';
import { packageRoot } from '../../package-root.js';

export { PAGES_DIR } from './guides.js';
/** Built by scripts/build-portal.mjs (`npm run build`): Swagger UI and ./assets, with .br and .gz copies. */
export const ASSETS_DIR = fileURLToPath(new URL('dist/portal/assets/', packageRoot()));

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
      main: referenceMain(openApiDocuments()),
      mainClass: 'reference',
      stylesheets: [`${ASSETS_PREFIX}swagger-ui.css`],
      scripts: [`${ASSETS_PREFIX}swagger-ui-bundle.js`, `${ASSETS_PREFIX}reference.js`],
    }),
  );
  app.get(DOCS_PATH, { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, reference()));
  for (const guide of GUIDES) {
    const page = memo(() =>
      renderPage({ title: guide.title, path: `${DOCS_PATH}/${guide.slug}`, main: guide.render(openApiDocuments()), mainClass: 'guide' }),
    );
    app.get(`${DOCS_PATH}/${guide.slug}`, { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, page()));
  }
};
