// The one page shell of the portal: head, navigation, main. Every page goes through it.
import { EXAMPLE_OPENAPI_PATH } from '../example/index.js';
import { OPENAPI_PATH } from '../plugins/openapi.js';
import { GUIDES } from './guides.js';
import { escapeHtml } from './markdown.js';

export const DOCS_PATH = '/docs';
export const ASSETS_PREFIX = `${DOCS_PATH}/assets/`;

/** The navigation: the reference, the guides (guides.ts), then the deprecations. */
export const PAGES: ReadonlyArray<{ href: string; label: string }> = [
  { href: DOCS_PATH, label: 'Reference' },
  ...GUIDES.map((guide) => ({ href: `${DOCS_PATH}/${guide.slug}`, label: guide.label })),
  { href: `${DOCS_PATH}/deprecations`, label: 'Deprecations' },
];

const DOCUMENTS = [
  { href: OPENAPI_PATH, label: 'openapi.json', title: 'The Petstore API OpenAPI document' },
  { href: EXAMPLE_OPENAPI_PATH, label: 'Example API openapi.json', title: 'The example messaging API OpenAPI document' },
] as const;

export interface PageOptions {
  title: string;
  /** This page's path: its navigation link is marked current. */
  path: string;
  /** Trusted HTML: built from escaped or rendered parts. */
  main: string;
  mainClass?: string;
  stylesheets?: string[];
  scripts?: string[];
  /** Without the portal (PETSTORE_DOCS=false): no navigation and no portal assets. */
  standalone?: boolean;
}

function navigation(current: string): string {
  const link = (href: string, label: string, title?: string) =>
    `<li><a href="${escapeHtml(href)}"${href === current ? ' aria-current="page"' : ''}${title ? ` title="${escapeHtml(title)}"` : ''}>${escapeHtml(label)}</a></li>`;
  return (
    '<header class="portal-header"><nav class="portal-nav" aria-label="Developer portal">' +
    `<a class="portal-brand" href="${DOCS_PATH}">Petstore API</a>` +
    `<ul class="portal-pages">${PAGES.map((p) => link(p.href, p.label)).join('')}</ul>` +
    `<ul class="portal-documents">${DOCUMENTS.map((d) => link(d.href, d.label, d.title)).join('')}</ul>` +
    '</nav></header>'
  );
}

export function renderPage(options: PageOptions): string {
  const { standalone = false } = options;
  const stylesheets = standalone ? [] : [...(options.stylesheets ?? []), `${ASSETS_PREFIX}portal.css`];
  // portal.js: the guides' Copy buttons.
  const scripts = standalone ? [] : [...(options.scripts ?? []), `${ASSETS_PREFIX}portal.js`];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)} · Petstore API</title>
${standalone ? '' : `<link rel="icon" href="${ASSETS_PREFIX}favicon.svg" type="image/svg+xml">\n`}${stylesheets.map((href) => `<link rel="stylesheet" href="${escapeHtml(href)}">`).join('\n')}
</head>
<body>
${standalone ? '' : navigation(options.path)}
<main id="main"${options.mainClass ? ` class="${escapeHtml(options.mainClass)}"` : ''}>
${options.main}
</main>
${scripts.map((src) => `<script src="${escapeHtml(src)}"></script>`).join('\n')}
</body>
</html>
`;
}
