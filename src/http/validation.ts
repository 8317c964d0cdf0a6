// Request validation with two Ajv instances: bodies are validated strictly (no type
// coercion, unknown fields rejected), while query and path strings are coerced to the
// declared types. Errors become messages that name the field and say how to fix it.
import { Ajv, type ErrorObject, type Options } from 'ajv';
import type { FastifySchemaCompiler, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import { NoQuery } from '../schemas/index.js';
import { compiledOnce } from './compile-once.js';

function newAjv(options: Options, schemas: TSchema[]): Ajv {
  // validateSchema off: checking our own schemas against the meta-schema at every start took a
  // tenth of it; the published documents (every schema) are linted by a test instead.
  const ajv = new Ajv({ strict: true, strictTypes: false, allErrors: false, verbose: true, validateSchema: false, ...options });
  // OpenAPI formats: constraints live in minimum/maximum, the format documents the wire type.
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && Math.abs(n) <= 2 ** 31 });
  ajv.addFormat('date-time', { type: 'string', validate: (s: string) => RFC3339.test(s) && !Number.isNaN(Date.parse(s)) });
  ajv.addKeyword({ keyword: 'x-enum-descriptions', schemaType: 'object' });
  ajv.addKeyword({ keyword: OPTIONAL_BODY, schemaType: 'boolean' });
  for (const schema of schemas) ajv.addSchema(schema);
  return ajv;
}

const DECIMAL_INTEGER = /^-?(0|[1-9][0-9]*)$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * Query and path values arrive as strings. Ajv's own coercion also accepts "1e3", " 5"
 * and "0x10"; we convert only plain decimal integers and let everything else fail
 * validation with the value quoted back.
 */
function integerFields(schema: TSchema): string[] {
  const properties = (schema as { properties?: Record<string, { type?: string }> }).properties ?? {};
  return Object.keys(properties).filter((name) => properties[name]?.type === 'integer');
}

/**
 * An onRoute hook: a route that declares no query schema gets NoQuery, so an unknown query
 * parameter is refused (400 invalid_request naming it) on every route of the context, as the
 * list routes' own schemas refuse theirs. NoQuery has no properties: the document is unchanged.
 */
export function refuseUndeclaredQuery(route: RouteOptions): void {
  if (route.schema?.querystring !== undefined) return;
  route.schema = { ...route.schema, querystring: NoQuery };
}

/** A body schema marked with this may be left out entirely (no body at all); a body that is sent must match. */
export const OPTIONAL_BODY = 'x-body-optional';

/** The compiler, compiling each schema once per part (routes repeat their parameters). */
export function createValidatorCompiler(schemas: TSchema[]): FastifySchemaCompiler<TSchema> {
  return compiledOnce(({ schema, httpPart }) => `${httpPart ?? ''} ${JSON.stringify(schema)}`, validatorCompiler(schemas));
}

function validatorCompiler(schemas: TSchema[]): FastifySchemaCompiler<TSchema> {
  const body = newAjv({ coerceTypes: false, useDefaults: false, removeAdditional: false }, schemas);
  const strings = newAjv({ coerceTypes: false, useDefaults: true, removeAdditional: false }, schemas);
  return ({ schema, httpPart }) => {
    if (httpPart === 'body') {
      const validate = body.compile(schema);
      if ((schema as Record<string, unknown>)[OPTIONAL_BODY] !== true) return validate;
      const validateOptional = (data: unknown) => {
        // Fastify hands a request without a body over as null or undefined.
        const valid = data === undefined || data === null || validate(data);
        validateOptional.errors = validate.errors;
        return valid;
      };
      validateOptional.errors = validate.errors;
      return validateOptional;
    }
    const validate = strings.compile(schema);
    const integers = integerFields(schema);
    const validateStrings = (data: unknown) => {
      if (data && typeof data === 'object') {
        const values = data as Record<string, unknown>;
        for (const name of integers) {
          const value = values[name];
          if (typeof value === 'string' && DECIMAL_INTEGER.test(value)) values[name] = Number(value);
        }
      }
      const valid = validate(data);
      validateStrings.errors = validate.errors;
      return valid;
    };
    validateStrings.errors = validate.errors;
    return validateStrings;
  };
}

const PART_NAMES: Record<string, string> = {
  body: 'Body field',
  querystring: 'Query parameter',
  params: 'Path parameter',
  headers: 'Header',
};

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && Number.isFinite(value) && !Number.isInteger(value)) return 'a fractional number';
  return typeof value;
}

const article = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

/** One clear sentence for the first validation error. */
export function describeValidationError(error: ErrorObject, part: string): string {
  const fieldPath = error.instancePath.split('/').slice(1).join('.');
  const kind = PART_NAMES[part] ?? 'Field';
  const where = fieldPath ? `${kind} "${fieldPath}"` : part === 'body' ? 'The request body' : `The ${part}`;
  const parent = (error.parentSchema ?? {}) as { description?: string; properties?: Record<string, unknown> };
  const params = error.params as Record<string, unknown>;

  switch (error.keyword) {
    case 'required': {
      const missing = `${fieldPath ? `${fieldPath}.` : ''}${String(params.missingProperty)}`;
      return `${kind} "${missing}" is required.`;
    }
    case 'additionalProperties': {
      const refused = `${kind} "${String(params.additionalProperty)}" is not allowed`;
      const allowed = Object.keys(parent.properties ?? {}).join(', ');
      if (allowed) return `${refused}. Allowed: ${allowed}.`;
      return part === 'body' ? `${refused}: this operation takes no fields. Send no body, or {}.` : `${refused}: this operation takes no ${kind.toLowerCase()}s. Remove it.`;
    }
    case 'type':
      if (!fieldPath && part === 'body') {
        return error.data === undefined
          ? 'The request body is required: send a JSON object with Content-Type: application/json.'
          : `The request body must be a JSON object, not ${typeOf(error.data)}.`;
      }
      if (Array.isArray(error.data) && part !== 'body') return `${where} must be given at most once.`;
      return `${where} must be ${article(String(params.type))}, not ${part === 'body' ? typeOf(error.data) : JSON.stringify(error.data)}.`;
    case 'enum':
      return `${where} must be one of: ${(params.allowedValues as unknown[]).join(', ')}.`;
    case 'minimum':
    case 'maximum':
      return `${where} must be ${error.keyword === 'minimum' ? 'at least' : 'at most'} ${String(params.limit)}.`;
    case 'minLength':
      return `${where} must be at least ${String(params.limit)} character(s) long.`;
    case 'maxLength':
      return `${where} must be at most ${String(params.limit)} characters long.`;
    default:
      return `${where} is invalid${parent.description ? `: ${parent.description}` : '.'}`;
  }
}
