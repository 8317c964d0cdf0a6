// The portal's guide pages, in navigation order (after the reference): each is one entry here,
// which gives it its route, its navigation link and its place in the portal's tests.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { OpenApiDocument } from './document.js';
import { packageRoot } from '../../package-root.js';
import { errorsTable } from './errors-page.js';
import { keysMain } from './keys-page.js';
import { markdown } from './markdown.js';
import { webhooksMain } from './webhooks-page.js';

/** Markdown prose of the guide pages (read from the source tree, also when running dist/). */
export const PAGES_DIR = fileURLToPath(new URL('src/http/portal/pages/', packageRoot()));

export const readPage = (name: string): string => readFileSync(path.join(PAGES_DIR, name), 'utf8');

export interface Guide {
  /** Served at /docs/<slug>. */
  slug: string;
  /** Its navigation link. */
  label: string;
  /** Its <title> and first heading. */
  title: string;
  /** The page's main content (trusted HTML), given the served documents. */
  render(docs: OpenApiDocument[]): string;
}

const plain = (file: string) => () => markdown.render(readPage(file));

export const GUIDES: readonly Guide[] = [
  { slug: 'quickstart', label: 'Quickstart', title: 'Quickstart', render: plain('quickstart.md') },
  { slug: 'orders', label: 'Orders', title: 'Orders', render: plain('orders.md') },
  { slug: 'webhooks', label: 'Webhooks', title: 'Events and webhooks', render: () => webhooksMain(readPage('webhooks.md')) },
  { slug: 'agents', label: 'Agents', title: 'AI agents (MCP)', render: plain('agents.md') },
  { slug: 'keys', label: 'Keys', title: 'API keys', render: (docs) => keysMain(readPage('keys.md'), docs) },
  { slug: 'errors', label: 'Errors', title: 'Errors', render: (docs) => markdown.render(readPage('errors.md')) + errorsTable(docs) },
];
