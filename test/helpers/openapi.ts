// Checks a response against the served OpenAPI document: the status must be declared
// for the operation and the body must match its schema; every error must be an Error.
import assert from 'node:assert/strict';
import { Ajv, type ValidateFunction } from 'ajv';

interface MediaType { schema: Record<string, unknown> }
interface ResponseObject { content?: Record<string, MediaType>; headers?: Record<string, unknown> }
interface Operation { responses: Record<string, ResponseObject> }
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
  body: unknown;
}

/** `basePath`: where the document's paths are served (its servers end in it). */
export function createOpenApiChecker(doc: OpenApiDocument, basePath = '/v1') {
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  // What the API promises for every timestamp: RFC 3339, UTC, milliseconds.
  ajv.addFormat('date-time', { type: 'string', validate: (s: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(s) && !Number.isNaN(Date.parse(s)) });
  ajv.addSchema({ components: doc.components }, 'doc');
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
  const errorValidator = validator({ $ref: '#/components/schemas/Error' });

  const templates = Object.keys(doc.paths).map((template) => ({
    template,
    regex: new RegExp(`^${basePath}${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));

  return function check(res: CheckedResponse): void {
    const where = `${res.method} ${res.path} → ${res.status}`;
    if (res.status >= 400) {
      assert.match(res.contentType ?? '', /^application\/json/, `${where}: error responses are JSON`);
      assert.ok(errorValidator(res.body), `${where}: body is an Error: ${ajv.errorsText(errorValidator.errors)} ${JSON.stringify(res.body)}`);
      assert.equal((res.body as { status: number }).status, res.status, `${where}: Error.status equals the HTTP status`);
    }
    const pathOnly = res.path.split('?')[0] ?? '';
    const match = templates.find((t) => t.regex.test(pathOnly));
    const operation = match && doc.paths[match.template]?.[res.method.toLowerCase()];
    if (!operation) return; // not a documented operation (health, unknown route, 405)
    const declared = operation.responses[String(res.status)];
    assert.ok(declared, `${where}: status ${res.status} is declared in the OpenAPI document`);
    const schema = declared.content?.['application/json']?.schema;
    if (schema && res.method !== 'HEAD') {
      const validate = validator(schema);
      assert.ok(validate(res.body), `${where}: body matches the document: ${ajv.errorsText(validate.errors)}`);
    }
  };
}
