// Checks a response against the served OpenAPI document: the status must be declared for the
// operation (or its range, or `default`), a body must come exactly when content is declared, in a
// declared media type and matching its schema; every error must be an Error.
import assert from 'node:assert/strict';
import { Ajv, type ValidateFunction } from 'ajv';

interface MediaType { schema?: Record<string, unknown> }
interface ResponseObject { content?: Record<string, MediaType>; headers?: Record<string, unknown> }
interface Operation { operationId?: string; responses: Record<string, ResponseObject> }
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, unknown>> };
  [key: string]: unknown;
}

export interface CheckedResponse {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  /** The parsed JSON body; undefined when there is none (or it is not JSON). */
  body: unknown;
  /** The raw body, when known: tells "no body" from "a body that is not JSON". */
  text?: string;
}

export interface OpenApiChecker {
  /** Asserts every rule below (throws an AssertionError naming the first broken one). */
  (res: CheckedResponse): void;
  /** The operation `method path` is (undefined when the document does not describe it). */
  operation(method: string, path: string): { id: string; template: string } | undefined;
  /** Against the document: status declared, body present exactly when content is declared, media type, schema. */
  documentProblems(res: CheckedResponse): string[];
  /** Every error (status >= 400) is an Error whose `status` is the HTTP status, on any path. */
  errorModelProblems(res: CheckedResponse): string[];
}

/** The media type without parameters, lower-cased (`application/json; charset=utf-8` → `application/json`). */
const essence = (contentType: string) => contentType.split(';')[0]!.trim().toLowerCase();

/** The declared media type (`application/json`, `application/*`, `*∕*`) that covers `contentType`. */
function declaredMediaType(declared: string[], contentType: string): string | undefined {
  const actual = essence(contentType);
  return declared.find((range) => {
    const r = essence(range);
    return r === actual || r === '*/*' || (r.endsWith('/*') && actual.startsWith(r.slice(0, -1)));
  });
}

// Compiling the schemas costs far more than checking (~1 s against ~10 µs a response): apps of one
// process serving the same document share one checker and its compiled validators.
const checkers = new Map<string, OpenApiChecker>();

/** `basePath`: where the document's paths are served (its servers end in it). */
export function createOpenApiChecker(doc: OpenApiDocument, basePath = '/v1'): OpenApiChecker {
  const key = `${basePath} ${JSON.stringify(doc)}`;
  let checker = checkers.get(key);
  if (!checker) checkers.set(key, (checker = buildChecker(doc, basePath)));
  return checker;
}

function buildChecker(doc: OpenApiDocument, basePath: string): OpenApiChecker {
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  // What the API promises for every timestamp: RFC 3339, UTC, milliseconds.
  ajv.addFormat('date-time', { type: 'string', validate: (s: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(s) && !Number.isNaN(Date.parse(s)) });
  ajv.addSchema({ components: doc.components ?? {} }, 'doc');
  const cache = new Map<string, ValidateFunction>();
  const validator = (schema: Record<string, unknown>) => {
    const key = JSON.stringify(schema);
    let fn = cache.get(key);
    if (!fn) {
      fn = ajv.compile(JSON.parse(key.replaceAll('"#/components/', '"doc#/components/')) as object);
      cache.set(key, fn);
    }
    return fn;
  };
  // Compiled on first use: a document with no errors declared need not have an Error schema.
  const errorValidator = () => validator({ $ref: '#/components/schemas/Error' });
  // Every declared schema compiled now, when the app starts: a check inside a test costs
  // microseconds, so it cannot stretch a test's timing (key cache windows, deadlines).
  for (const operations of Object.values(doc.paths)) {
    for (const operation of Object.values(operations)) {
      for (const response of Object.values(operation.responses ?? {})) {
        for (const media of Object.values(response.content ?? {})) if (media.schema) validator(media.schema);
      }
    }
  }

  const templates = Object.keys(doc.paths).map((template) => ({
    template,
    regex: new RegExp(`^${basePath}${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));

  const find = (method: string, path: string) => {
    const pathOnly = path.split('?')[0] ?? '';
    const match = templates.find((t) => t.regex.test(pathOnly));
    const operation = match && doc.paths[match.template]?.[method.toLowerCase()];
    return operation && match ? { operation, template: match.template } : undefined;
  };
  const where = (res: CheckedResponse) => {
    const found = find(res.method, res.path);
    const name = found ? `${found.operation.operationId ?? '?'} (${res.method} ${found.template})` : `${res.method} ${res.path}`;
    return `${name} → ${res.status}`;
  };

  const errorModelProblems = (res: CheckedResponse): string[] => {
    if (res.status < 400) return [];
    const at = where(res);
    if (!/^application\/json/.test(res.contentType ?? '')) return [`${at}: error responses are JSON, got Content-Type ${res.contentType}`];
    const validate = errorValidator();
    if (!validate(res.body)) return [`${at}: body is an Error: ${ajv.errorsText(validate.errors)} ${JSON.stringify(res.body)}`];
    const status = (res.body as { status: number }).status;
    return status === res.status ? [] : [`${at}: Error.status (${status}) equals the HTTP status`];
  };

  const documentProblems = (res: CheckedResponse): string[] => {
    const found = find(res.method, res.path);
    if (!found) return []; // not a documented operation (health, unknown route, HEAD, 405)
    const at = where(res);
    const { responses } = found.operation;
    const status = String(res.status);
    const declared = responses[status] ?? responses[`${status[0]}XX`] ?? responses.default;
    if (!declared) return [`${at}: status ${status} is not declared in the OpenAPI document (declared: ${Object.keys(responses).join(', ')})`];
    const mediaTypes = Object.keys(declared.content ?? {});
    const hasBody = res.text !== undefined ? res.text.length > 0 : res.body !== undefined;
    if (mediaTypes.length === 0) {
      const problems: string[] = [];
      if (hasBody) problems.push(`${at}: the document declares no content, but the response has a body: ${(res.text ?? JSON.stringify(res.body)).slice(0, 200)}`);
      if (res.contentType !== null) problems.push(`${at}: the document declares no content, but the response has Content-Type ${res.contentType}`);
      return problems;
    }
    if (!hasBody) return [`${at}: the document declares content (${mediaTypes.join(', ')}), but the response has no body`];
    const mediaType = res.contentType === null ? undefined : declaredMediaType(mediaTypes, res.contentType);
    if (mediaType === undefined) return [`${at}: Content-Type ${res.contentType} is not declared (declared: ${mediaTypes.join(', ')})`];
    const schema = declared.content![mediaType]!.schema;
    if (!schema || !/[/+]json$/.test(essence(res.contentType!))) return [];
    if (res.body === undefined) return [`${at}: the body is not JSON: ${(res.text ?? '').slice(0, 200)}`];
    const validate = validator(schema);
    return validate(res.body) ? [] : [`${at}: body matches the document: ${ajv.errorsText(validate.errors)}`];
  };

  const check = (res: CheckedResponse): void => {
    const problems = [...errorModelProblems(res), ...documentProblems(res)];
    assert.ok(problems.length === 0, problems.join('\n'));
  };
  return Object.assign(check, {
    operation: (method: string, path: string) => {
      const found = find(method, path);
      return found && { id: found.operation.operationId ?? '?', template: found.template };
    },
    documentProblems,
    errorModelProblems,
  });
}
