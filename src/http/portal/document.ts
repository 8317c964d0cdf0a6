// Reading the served OpenAPI document for the generated pages. The document is data here:
// every field is checked before use, and every string is escaped where it is written.

export interface OpenApiDocument {
  servers?: unknown;
  paths?: unknown;
  [key: string]: unknown;
}

export interface Operation {
  method: string;
  /** As in the document: relative to the server URL (`/pets/{petId}`). */
  path: string;
  /** The path a client calls on this origin (`/v1/pets/{petId}`). */
  fullPath: string;
  operationId: string;
  tag: string;
  summary: string;
  description: string;
  deprecated: boolean;
  /** Extensions (`x-…`) of the operation object. */
  extensions: Record<string, unknown>;
  /** Response descriptions by status code. */
  responses: Array<{ status: string; description: string }>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** The path part of the first server URL (`https://api.example/v1` -> `/v1`). */
export function basePath(doc: OpenApiDocument): string {
  const first: unknown = Array.isArray(doc.servers) ? doc.servers[0] : undefined;
  const url = isRecord(first) ? text(first.url) : '';
  if (!url) return '';
  try {
    return new URL(url, 'http://server.invalid').pathname.replace(/\/$/, '');
  } catch {
    return '';
  }
}

export function operations(doc: OpenApiDocument): Operation[] {
  const base = basePath(doc);
  const found: Operation[] = [];
  if (!isRecord(doc.paths)) return found;
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!isRecord(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isRecord(op)) continue;
      const tags = Array.isArray(op.tags) ? op.tags.filter((t): t is string => typeof t === 'string') : [];
      const responses = isRecord(op.responses)
        ? Object.entries(op.responses).map(([status, r]) => ({ status, description: isRecord(r) ? text(r.description) : '' }))
        : [];
      found.push({
        method: method.toUpperCase(),
        path,
        fullPath: base + path,
        operationId: text(op.operationId) || `${method} ${path}`,
        tag: tags[0] ?? 'default',
        summary: text(op.summary),
        description: text(op.description),
        deprecated: op.deprecated === true,
        extensions: Object.fromEntries(Object.entries(op).filter(([key]) => key.startsWith('x-'))),
        responses,
      });
    }
  }
  return found;
}

/** The operations of every document, in order (the Petstore's, then the example API's). */
export function allOperations(docs: OpenApiDocument[]): Operation[] {
  return docs.flatMap(operations);
}

/** The reference's deep link to an operation (Swagger UI's `#/<tag>/<operationId>`). */
export function referenceLink(op: Pick<Operation, 'tag' | 'operationId'>): string {
  return `/docs#/${encodeURIComponent(op.tag)}/${encodeURIComponent(op.operationId)}`;
}
