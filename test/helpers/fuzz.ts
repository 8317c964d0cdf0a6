// Property-based fuzzing driven by the served OpenAPI document. For every operation it
// generates requests (valid, boundary, mutated, garbage) as plain data ("plans"), sends
// them over real HTTP, and checks what every response must satisfy:
//   - never a 5xx, never a dropped or truncated connection;
//   - X-Content-Type-Options: nosniff and an X-Request-Id on every response;
//   - every error is an `Error` body, status equal to the HTTP status, as application/json;
//   - every answer of a documented operation has a declared status and a body matching the
//     document's schema, and Cache-Control: no-store;
//   - nothing leaks between accounts: no foreign pet in a 2xx body, no 200 for a foreign
//     or edited cursor; and nothing is lost: pets read back exactly as created;
//   - for "clean" requests the exact answer is known (201 with the pet, 200 with one's own
//     pet, 404 identical to a missing id for another account's pet, ordered pages).
// Plans refer to pets and cursors by index (`{ pet: 'own', i: 3 }`): they are resolved when
// the request is sent, against what earlier requests created, so counterexamples stay small.
import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { Ajv, type ValidateFunction } from 'ajv';
import fc from 'fast-check';
import { generateKey } from '../../src/services/api-keys.js';
import { createOpenApiChecker, type OpenApiDocument } from './openapi.js';
import type { TestApp } from './app.js';
import { exchangeRaw, NoResponseError, send, StaleConnectionError, type WireRequest, type WireResponse } from './wire.js';

// ---------------------------------------------------------------------------------------
// The document

type Schema = { [key: string]: unknown };

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema: Schema;
}

interface DocOperation {
  operationId?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, unknown>;
}

export interface OperationInfo {
  id: string;
  method: string;
  /** Full path template, with the server's base path: /v1/pets/{petId}. */
  template: string;
  pathParams: Parameter[];
  queryParams: Parameter[];
  headerParams: Parameter[];
  body: Schema | undefined;
}

export function basePath(doc: OpenApiDocument): string {
  const servers = (doc as { servers?: Array<{ url: string }> }).servers ?? [];
  return servers[0] ? new URL(servers[0].url).pathname.replace(/\/$/, '') : '';
}

export function operationsOf(doc: OpenApiDocument): OperationInfo[] {
  const base = basePath(doc);
  const out: OperationInfo[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, raw] of Object.entries(item)) {
      const op = raw as unknown as DocOperation;
      // A stream's answer never completes, which is what the properties require of every answer:
      // streamEvents has its own tests (test/http/event-stream.test.ts).
      const success = (raw as { responses?: Record<string, { content?: Record<string, unknown> }> }).responses?.['200'];
      if (success?.content?.['text/event-stream'] !== undefined) continue;
      const params = op.parameters ?? [];
      out.push({
        id: op.operationId ?? `${method} ${template}`,
        method: method.toUpperCase(),
        template: base + template,
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        headerParams: params.filter((p) => p.in === 'header'),
        body: op.requestBody?.content['application/json']?.schema,
      });
    }
  }
  return out;
}

function resolver(doc: OpenApiDocument) {
  return function resolve(schema: Schema): Schema {
    const ref = schema.$ref;
    if (typeof ref !== 'string') return schema;
    const name = ref.replace('#/components/schemas/', '');
    const target = doc.components.schemas[name];
    if (!target) throw new Error(`unresolved ${ref}`);
    return resolve(target);
  };
}

// ---------------------------------------------------------------------------------------
// JSON with raw literals (1e400, NaN), duplicate keys and "__proto__" keys

/** A JSON fragment written as is: `1e400`, `NaN`, `01`. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** An object written from its entries, so keys may repeat or be "__proto__". */
export class JsonEntries {
  constructor(readonly entries: Array<[string, unknown]>) {}
}

export function serialize(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof JsonEntries) return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${serialize(v)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map(serialize).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${serialize(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const codePoints = (s: string) => [...s].length;

// ---------------------------------------------------------------------------------------
// Values from schemas

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function integerBounds(schema: Schema): { min: number; max: number } {
  return {
    min: typeof schema.minimum === 'number' ? schema.minimum : -MAX_SAFE,
    max: typeof schema.maximum === 'number' ? schema.maximum : MAX_SAFE,
  };
}

function anyInteger(min: number, max: number): fc.Arbitrary<number> {
  return fc.oneof(
    fc.constantFrom(min, max, Math.min(min + 1, max), Math.max(max - 1, min)),
    fc.integer({ min: Math.max(min, 1 - 2 ** 31), max: Math.min(max, 2 ** 31 - 1, Math.max(min, 1 - 2 ** 31) + 1000) }),
    fc.bigInt(BigInt(min), BigInt(max)).map(Number),
  );
}

/** Names and other strings: printable Unicode with astral characters, RTL and combining marks. */
const interestingText = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 24 }),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 24 }),
  fc.constantFrom('Rex', 'Tom & Jerry', 'Ünïcödé', '🐶🐱', 'Ṡ̈̇', '\u202eRTL', 'a\u200bb', 'Ω≈ç√', '"quoted"', "O'Brien", '<script>', '%00', '\\', '名前'),
);

export function validValue(schema: Schema, resolve: (s: Schema) => Schema): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  switch (s.type) {
    case 'integer': {
      const { min, max } = integerBounds(s);
      return anyInteger(min, max);
    }
    case 'string': {
      const min = typeof s.minLength === 'number' ? s.minLength : 0;
      const max = typeof s.maxLength === 'number' ? s.maxLength : 64;
      const pattern = typeof s.pattern === 'string' ? new RegExp(s.pattern, 'u') : undefined;
      const fits = (v: string) => codePoints(v) >= min && codePoints(v) <= max && (!pattern || pattern.test(v));
      let base: fc.Arbitrary<string>;
      try {
        base = pattern ? fc.stringMatching(pattern, { maxLength: max }) : interestingText;
        fc.sample(base, 1);
      } catch {
        base = interestingText; // fast-check cannot generate from this pattern (lookahead): filter instead
      }
      const longest = max <= 100_000 ? fc.constantFrom('x'.repeat(max), '🐶'.repeat(max), 'é'.repeat(max)) : fc.constant('x');
      return fc.oneof({ arbitrary: base, weight: 8 }, { arbitrary: longest, weight: 1 }).filter(fits);
    }
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const required = (s.required ?? []) as string[];
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, prop] of Object.entries(props)) model[name] = validValue(prop, resolve);
      return fc.record(model, { requiredKeys: required });
    }
    case 'array':
      return fc.array(validValue((s.items ?? {}) as Schema, resolve), { maxLength: 4 });
    case 'boolean':
      return fc.boolean();
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

const weirdNumbers = ['1e400', '-1e400', '9007199254740992', '9007199254740993', '18446744073709551616', '1.0', '1e0', '1E2', '-0', '0',
  '-1', '0.5', '1.5e-400', '01', '0x10', 'NaN', 'Infinity', '-Infinity', '+1', '1_0', '9'.repeat(400), '4.2e1', '.5', '1.', '2e53'];

/** Values a field of this schema must refuse: boundaries just outside, wrong types, raw literals. */
export function invalidValue(schema: Schema, resolve: (s: Schema) => Schema): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  const wrongTypes = fc.constantFrom<unknown>(null, true, false, [], {}, [1], { a: 1 }, '', '1');
  if (Array.isArray(s.enum)) {
    const members = s.enum as string[];
    return fc.oneof(
      wrongTypes,
      fc.constantFrom(...members.map((m) => m.toUpperCase()), ...members.map((m) => ` ${m}`), ...members.map((m) => `${m}\u0000`), 'unknown', members.join(',')),
      fc.string({ maxLength: 12 }).filter((v) => !members.includes(v)),
    );
  }
  switch (s.type) {
    case 'integer': {
      const { min, max } = integerBounds(s);
      return fc.oneof(
        wrongTypes,
        fc.constantFrom<unknown>(min - 1, 0.5, min + 0.5, -1, -(2 ** 31), 2 ** 53, 1e308, -1e308, Number.MIN_VALUE, ...(max < MAX_SAFE ? [max + 1] : [])),
        // Raw literals; a few (1.0, 1E2) are integers in disguise and may be accepted.
        fc.constantFrom(...weirdNumbers).map((t) => new RawJson(t)),
        fc.double({ noNaN: true }).filter((d) => !Number.isInteger(d) || d < min || d > max),
        fc.string({ maxLength: 8 }),
      );
    }
    case 'string': {
      const max = typeof s.maxLength === 'number' ? s.maxLength : 64;
      return fc.oneof(
        wrongTypes.filter((v) => typeof v !== 'string' || v === ''),
        fc.integer(),
        fc.constantFrom('x'.repeat(max + 1), '🐶'.repeat(max + 1), ' ', '   ', '\t', '\u00a0\u3000', 'Re\u0000x', 'Re\nx', 'Re\rx', '\u007f', '\u001b[31m', 'a\ud800b', '\udc00', 'ok\ud83d'),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }).map((v) => `${v}\u0000`),
      );
    }
    case 'object':
      return fc.oneof(wrongTypes.filter((v) => typeof v !== 'object' || Array.isArray(v) || v === null), fc.jsonValue({ maxDepth: 1 }));
    default:
      return wrongTypes;
  }
}

/** A string for a query or path parameter that the schema accepts. */
function validString(schema: Schema, resolve: (s: Schema) => Schema): fc.Arbitrary<string> {
  return validValue(schema, resolve).map((v) => String(v));
}

/** A string for a query or path parameter that the schema refuses (or that is hostile anyway). */
function invalidString(schema: Schema, resolve: (s: Schema) => Schema): fc.Arbitrary<string> {
  const s = resolve(schema);
  const generic = fc.constantFrom('', ' ', '%00', 'null', 'undefined', '[]', '{}', 'true', '__proto__', '../', '%2e%2e', '\u00e9', '%C3%A9', '💥', 'a'.repeat(600));
  if (s.type === 'integer') {
    const { min, max } = integerBounds(s);
    return fc.oneof(
      generic,
      fc.constantFrom(String(min - 1), ...(max < MAX_SAFE ? [String(max + 1)] : []), '1e1', '0x10', '0b1', '0o7', '%205', '+5', '05', '1.0', '1.5', '-0',
        '١', 'Infinity', 'NaN', '9007199254740992', '9'.repeat(40), '1,2', '1%2C2', '%31'),
      fc.string({ unit: 'grapheme-ascii', maxLength: 6 }).filter((v) => !/^(0|[1-9][0-9]*)$/.test(v)).map(encodeURIComponent),
    );
  }
  if (Array.isArray(s.enum)) {
    const members = s.enum as string[];
    return fc.oneof(generic, fc.constantFrom(...members.map((m) => m.toUpperCase()), `${members[0]}%00`, members.join(','), `${members[0]}+`));
  }
  if (s.type === 'string' && typeof s.maxLength === 'number') {
    return fc.oneof(generic, fc.constant('c'.repeat(s.maxLength + 1)));
  }
  return generic;
}

// ---------------------------------------------------------------------------------------
// Plans

export type Who = 'A' | 'B';

/** A path or query value: literal text (already encoded), or a pet id / cursor resolved at send time. */
export type ValueSpec =
  | { lit: string }
  | { pet: 'own' | 'other'; i: number }
  | { cursor: 'own' | 'other'; i: number; flip: number | null };

export type AuthSpec =
  | { kind: 'key'; who: Who; scheme: string; spacing: string }
  | { kind: 'none' }
  | { kind: 'raw'; value: string }
  | { kind: 'basic'; who: Who }
  | { kind: 'staging' | 'revoked' | 'badChecksum' | 'unissued' | 'truncated' | 'lowercase' };

export type BodySpec =
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'sized'; size: number };

export type RawMutation =
  | { kind: 'method'; token: string }
  | { kind: 'version'; version: string }
  | { kind: 'headerLine'; line: string }
  | { kind: 'bareLf' }
  | { kind: 'noHost' }
  | { kind: 'duplicateHost' }
  | { kind: 'framing'; lines: string[] };

export interface Plan {
  /** Which generator made it, for statistics. */
  label: string;
  method: string;
  /** Path segments (each literal text or a value), joined with "/" after a leading "/". */
  segments: Array<string | ValueSpec>;
  /** Appended to the path as is: "/", "/..", ";x", "#f"… */
  suffix: string;
  /** Query parameters (name already encoded); null for no "?" at all. */
  query: Array<[string, string | ValueSpec]> | null;
  auth: AuthSpec;
  headers: Array<[string, string]>;
  body: BodySpec | null;
  chunked: boolean;
  /** Sent as raw bytes on a new connection, with this mutation; null: sent with node:http. */
  raw: RawMutation | null;
  /** The exact answer is known (see the oracle in checkResponse). */
  clean: boolean;
  /** Set when the plan contains an input class with a known, reported src bug. */
  knownBug: string | null;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const RESERVED_HEADERS = /^(host|content-length|transfer-encoding|connection|expect|upgrade|te|trailer|keep-alive|authorization|content-type|idempotency-key|proxy-connection)$/i;

const headerValueChar = fc.oneof(
  { arbitrary: fc.integer({ min: 0x20, max: 0x7e }), weight: 10 },
  { arbitrary: fc.integer({ min: 0x80, max: 0xff }), weight: 1 },
  { arbitrary: fc.constant(0x09), weight: 1 },
).map((c) => String.fromCharCode(c));
const headerValue = fc.string({ unit: headerValueChar, maxLength: 40 }).map((v) => v.trim());
const headerName = fc.oneof(
  fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,18}$/),
  fc.constantFrom('X-Forwarded-For', 'X-Forwarded-Proto', 'X-Real-IP', 'Cookie', 'Origin', 'Referer', 'If-None-Match', 'Range', 'X-HTTP-Method-Override', 'Accept-Language', 'Forwarded'),
).filter((n) => TOKEN.test(n) && !RESERVED_HEADERS.test(n));

const extraHeaders: fc.Arbitrary<Array<[string, string]>> = fc.array(
  fc.oneof(
    fc.tuple(headerName, headerValue),
    fc.constantFrom<[string, string]>(
      ['Accept', 'application/xml'],
      ['Accept', '*/*'],
      ['Accept', 'text/html;q=0.9, application/json'],
      ['Accept-Encoding', 'gzip, deflate, br'],
      ['Content-Encoding', 'gzip'],
      ['Expect', '100-continue'],
      ['Connection', 'close'],
      ['Upgrade', 'websocket'],
      ['X-HTTP-Method-Override', 'DELETE'],
      ['Cookie', 'session=abc; other=1'],
      ['X-Forwarded-For', '1.2.3.4, 5.6.7.8'],
      ['Range', 'bytes=0-10'],
    ),
    fc.tuple(fc.constant('X-Request-Id'), fc.oneof(fc.stringMatching(/^[A-Za-z0-9._:-]{1,140}$/), headerValue)),
  ),
  { maxLength: 3 },
);

const contentTypes = fc.oneof(
  { arbitrary: fc.constant<string | null>('application/json'), weight: 12 },
  {
    arbitrary: fc.constantFrom<string | null>(
      null,
      '',
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'APPLICATION/JSON',
      'application/json; charset=latin1',
      'application/json ; x=y',
      'text/plain',
      'text/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/problem+json',
      'application/vnd.api+json',
      'application/jsonx',
      'application/json, text/plain',
      '*/*',
      'application/octet-stream',
    ),
    weight: 4,
  },
  { arbitrary: headerValue.map((v): string | null => v), weight: 1 },
);

const authSpecs: fc.Arbitrary<AuthSpec> = fc.oneof(
  { arbitrary: fc.constantFrom<Who>('A', 'B').map((who): AuthSpec => ({ kind: 'key', who, scheme: 'Bearer', spacing: ' ' })), weight: 30 },
  {
    arbitrary: fc
      .record({ who: fc.constantFrom<Who>('A', 'B'), scheme: fc.constantFrom('bearer', 'BEARER', 'Bearer', 'BeArEr'), spacing: fc.constantFrom(' ', '  ') })
      .map((a): AuthSpec => ({ kind: 'key', ...a })),
    weight: 2,
  },
  {
    arbitrary: fc.constantFrom<AuthSpec>(
      { kind: 'none' },
      { kind: 'staging' },
      { kind: 'revoked' },
      { kind: 'badChecksum' },
      { kind: 'unissued' },
      { kind: 'truncated' },
      { kind: 'lowercase' },
      { kind: 'basic', who: 'A' },
    ),
    weight: 6,
  },
  {
    arbitrary: fc.oneof(headerValue, fc.constantFrom('Bearer', 'Bearer ', 'Token x', 'Bearer psk_live_', 'Bearer a b', 'Bearer psk_live_' + 'A'.repeat(36), 'Bearer ' + 'x'.repeat(4000))).map((value): AuthSpec => ({ kind: 'raw', value })),
    weight: 2,
  },
);

/** Path mutations; each may turn a documented path into an unknown or malformed one. */
const pathSuffixes = fc.oneof(
  { arbitrary: fc.constant(''), weight: 20 },
  { arbitrary: fc.constantFrom('/', '//', '/x', '/..', '/.', '/%2e%2e', '/%2F', ';a=b', '%00', '/1', '#frag', '%20', '/%C3%A9', '/extra/segments/here'), weight: 3 },
);

function encodeSometimes(value: string): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: fc.constant(encodeURIComponent(value)), weight: 6 },
    // Every character percent-encoded, even unreserved ones (%31 for 1).
    { arbitrary: fc.constant([...Buffer.from(value, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('')), weight: 1 },
    // As is, when node:http can send it.
    { arbitrary: fc.constant(/^[\x21-\x7e]*$/.test(value) && !/[?#/%]/.test(value) ? value : encodeURIComponent(value)), weight: 1 },
  );
}

/**
 * Known src bugs a path segment triggers: malformed percent-encoding (FST_ERR_BAD_URL) and
 * parameters over the router's maxParamLength of 200 (FST_ERR_MAX_PARAM_LENGTH); Fastify
 * answers both with its own body, without nosniff or request id.
 */
function pathBug(segment: string): string | null {
  try {
    decodeURIComponent(segment);
  } catch {
    return 'badUrl';
  }
  return segment.length > 200 ? 'maxParamLength' : null;
}

/** Path-parameter values, pool references included. */
function pathValue(param: Parameter, resolve: (s: Schema) => Schema): fc.Arbitrary<{ spec: ValueSpec; clean: boolean; knownBug: string | null }> {
  const schema = resolve(param.schema);
  const isId = schema.type === 'integer';
  return fc.oneof(
    { arbitrary: fc.record({ pet: fc.constantFrom<'own' | 'other'>('own', 'other'), i: fc.nat(1000) }).map((spec) => ({ spec: spec as ValueSpec, clean: true, knownBug: null })), weight: isId ? 8 : 0 },
    { arbitrary: validString(param.schema, resolve).chain(encodeSometimes).map((lit) => ({ spec: { lit } as ValueSpec, clean: false, knownBug: null })), weight: 4 },
    { arbitrary: invalidString(param.schema, resolve).map((lit) => ({ spec: { lit: lit.startsWith('%') ? lit : encodeURIComponent(lit) } as ValueSpec, clean: false, knownBug: null })), weight: 4 },
    // Longer than the router's maxParamLength (200): Fastify's own 414 body (reported).
    { arbitrary: fc.integer({ min: 201, max: 2000 }).map((n) => ({ spec: { lit: '9'.repeat(n) } as ValueSpec, clean: false, knownBug: 'maxParamLength' })), weight: 1 },
    // Malformed percent-encoding: Fastify's own FST_ERR_BAD_URL body (reported).
    { arbitrary: fc.constantFrom('%', '1%', '%zz', '%e0%80', '%c3', '%ff%fe', '%%31').map((lit) => ({ spec: { lit } as ValueSpec, clean: false, knownBug: 'badUrl' })), weight: 1 },
  );
}

/** Query string: documented parameters with valid, boundary or garbage values, cursors, unknown and repeated ones. */
function queryFor(op: OperationInfo, resolve: (s: Schema) => Schema): fc.Arbitrary<{ query: Array<[string, string | ValueSpec]> | null; clean: boolean }> {
  const known = op.queryParams.map((param) => {
    const isCursor = param.name === 'cursor';
    const value: fc.Arbitrary<{ v: string | ValueSpec; clean: boolean }> = fc.oneof(
      { arbitrary: validString(param.schema, resolve).map((v) => ({ v: encodeURIComponent(v), clean: !isCursor })), weight: isCursor ? 1 : 6 },
      {
        arbitrary: fc
          .record({ cursor: fc.constantFrom<'own' | 'other'>('own', 'own', 'other'), i: fc.nat(1000), flip: fc.option(fc.nat(64), { freq: 3 }) })
          .map((spec) => ({ v: spec as ValueSpec, clean: spec.cursor === 'own' && spec.flip === null })),
        weight: isCursor ? 6 : 0,
      },
      { arbitrary: invalidString(param.schema, resolve).map((v) => ({ v: v.startsWith('%') ? v : encodeURIComponent(v), clean: false })), weight: 3 },
    );
    return fc.option(value.map((x) => ({ name: param.name, ...x })), { freq: 2 });
  });
  const unknown = fc.array(
    fc.tuple(
      fc.oneof(fc.constantFrom('key', 'api_key', 'access_token', '__proto__', 'constructor', 'limit[]', 'LIMIT', 'Status', 'a.b', '', '%zz', 'offset', 'page'), fc.stringMatching(/^[a-z_]{1,8}$/)),
      fc.oneof(fc.constantFrom('', '1', 'x'), fc.string({ maxLength: 6 }).map(encodeURIComponent)),
    ),
    { maxLength: 2 },
  );
  return fc
    .record({
      known: fc.tuple(...known),
      unknown: fc.oneof({ arbitrary: fc.constant([] as Array<[string, string]>), weight: 5 }, { arbitrary: unknown, weight: 1 }),
      repeat: fc.oneof({ arbitrary: fc.constant(false), weight: 6 }, { arbitrary: fc.constant(true), weight: 1 }),
      empty: fc.boolean(),
    })
    .map(({ known: values, unknown: extra, repeat, empty }) => {
      const query: Array<[string, string | ValueSpec]> = [];
      let clean = true;
      for (const entry of values) {
        if (entry === null) continue;
        query.push([entry.name, entry.v]);
        clean &&= entry.clean;
      }
      if (extra.length > 0) {
        query.push(...extra);
        clean = false;
      }
      if (repeat && query.length > 0) {
        query.push(query[0]!);
        clean = false;
      }
      if (query.length === 0) return { query: empty ? [] : null, clean };
      return { query, clean };
    });
}

/** Request bodies: valid values of the schema, mutations of them, JSON of other shapes, and non-JSON bytes. */
function bodyFor(schema: Schema, resolve: (s: Schema) => Schema, bodyLimit: number): fc.Arbitrary<{ body: BodySpec; clean: boolean; label: string }> {
  const s = resolve(schema);
  const props = Object.entries((s.properties ?? {}) as Record<string, Schema>);
  const valid = validValue(schema, resolve) as fc.Arbitrary<Record<string, unknown>>;
  // Mutations of one field: none for a body without fields (deliverOrder, cancelOrder take `{}`).
  const propName = fc.constantFrom(...(props.length ? props.map(([name]) => name) : ['']));
  const fieldMutations: Array<fc.Arbitrary<{ body: BodySpec; clean: boolean; label: string }>> = props.length === 0 ? [] : [
    // A required field missing.
    fc.tuple(valid, propName).map(([v, name]) => {
      const copy = { ...v };
      delete copy[name];
      return { body: { kind: 'json', value: copy } as BodySpec, clean: false, label: 'body:missing-field' };
    }),
    // One field with a value its schema refuses.
    fc
      .tuple(valid, fc.constantFrom(...props))
      .chain(([v, [name, prop]]) => invalidValue(prop, resolve).map((bad) => ({ body: { kind: 'json', value: { ...v, [name]: bad } } as BodySpec, clean: false, label: 'body:invalid-field' }))),
    // One field replaced with arbitrary JSON.
    fc.tuple(valid, propName, fc.jsonValue({ maxDepth: 3 })).map(([v, name, value]) => ({ body: { kind: 'json', value: { ...v, [name]: value } } as BodySpec, clean: false, label: 'body:random-field' })),
    // Duplicate keys: the last one wins (JSON.parse); the answer must still be a clean 201 or 400.
    fc.tuple(valid, propName, fc.jsonValue({ maxDepth: 1 })).map(([v, name, first]) => ({
      body: { kind: 'json', value: new JsonEntries([[name, first], ...Object.entries(v)]) } as BodySpec,
      clean: false,
      label: 'body:duplicate-key',
    })),
  ];
  const mutations: Array<fc.Arbitrary<{ body: BodySpec; clean: boolean; label: string }>> = [
    ...fieldMutations,
    // An unknown field, including "__proto__", "constructor" and "id".
    fc
      .tuple(valid, fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', '', 'Name', 'name ', 'toString'), fc.string({ maxLength: 8 })), fc.jsonValue({ maxDepth: 2 }))
      .filter(([v, key]) => !(key in v) && !props.some(([name]) => name === key))
      .map(([v, key, extra]) => ({ body: { kind: 'json', value: new JsonEntries([...Object.entries(v), [key, extra]]) } as BodySpec, clean: false, label: 'body:extra-field' })),
  ];
  const shapes: Array<fc.Arbitrary<{ body: BodySpec; clean: boolean; label: string }>> = [
    fc.jsonValue({ maxDepth: 3 }).map((value) => ({ body: { kind: 'json', value } as BodySpec, clean: false, label: 'body:random-json' })),
    valid.map((v) => ({ body: { kind: 'json', value: [v] } as BodySpec, clean: false, label: 'body:wrapped' })),
    fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ body: { kind: 'bytes', bytes } as BodySpec, clean: false, label: 'body:bytes' })),
    fc.tuple(valid, fc.nat()).map(([v, cut]) => {
      const text = JSON.stringify(v);
      return { body: { kind: 'text', text: text.slice(0, cut % text.length) } as BodySpec, clean: false, label: 'body:truncated' };
    }),
    fc.constantFrom('', ' ', 'null', '{}', '[]', '"x"', '{"name":"Rex","categoryId":1,}', "{'name':'Rex'}", '{"name":"Rex"} x', 'NaN', '\ufeff{"name":"Rex","categoryId":1}',
      '{"name":"Rex","categoryId":1}\n', '{"__proto__":{"x":1},"name":"Rex","categoryId":1}', '{"constructor":{"prototype":{"x":1}},"name":"Rex","categoryId":1}',
      '['.repeat(5000) + ']'.repeat(5000), '{"a":'.repeat(3000) + '1' + '}'.repeat(3000)).map((text) => ({ body: { kind: 'text', text } as BodySpec, clean: false, label: 'body:edge-text' })),
    fc.tuple(valid, fc.constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc0, 0xaf], [0x00])).map(([v, bad]) => {
      const text = JSON.stringify({ ...v, name: 'XX' });
      const at = text.indexOf('XX');
      const bytes = Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bad), Buffer.from(text.slice(at + 2))]);
      return { body: { kind: 'bytes', bytes: new Uint8Array(bytes) } as BodySpec, clean: false, label: 'body:invalid-utf8' };
    }),
    // Around the body limit: exactly at it (accepted), just over (413), far over.
    fc.constantFrom(bodyLimit - 1, bodyLimit, bodyLimit + 1, bodyLimit * 2).map((size) => ({ body: { kind: 'sized', size } as BodySpec, clean: false, label: 'body:size-limit' })),
  ];
  return fc.oneof(
    { arbitrary: valid.map((value) => ({ body: { kind: 'json', value } as BodySpec, clean: true, label: 'body:valid' })), weight: 8 },
    { arbitrary: fc.oneof(...mutations), weight: 8 },
    { arbitrary: fc.oneof(...shapes), weight: 4 },
  );
}

/** Values of the conditional headers: the clean one leaves the answer unconditional (If-Match `*` on an existing resource, an If-None-Match naming no tag). */
const CONDITIONAL_VALUES: Record<string, fc.Arbitrary<{ value: string; clean: boolean }>> = {
  'if-match': fc.oneof(
    { arbitrary: fc.constant({ value: '*', clean: true }), weight: 3 },
    { arbitrary: fc.constantFrom('"stale"', 'W/"weak"', '"a", "b"', 'not-a-tag', '', '"unterminated').map((value) => ({ value, clean: false })), weight: 2 },
  ),
  'if-none-match': fc.oneof(
    { arbitrary: fc.constantFrom('"never-a-tag"', '"x", W/"y"').map((value) => ({ value, clean: true })), weight: 3 },
    { arbitrary: fc.constantFrom('*', 'not-a-tag', '', '"unterminated').map((value) => ({ value, clean: false })), weight: 2 },
  ),
};

function headerParamValue(param: Parameter, resolve: (s: Schema) => Schema): fc.Arbitrary<{ value: string; clean: boolean }> {
  const conditional = CONDITIONAL_VALUES[param.name.toLowerCase()];
  if (conditional) return conditional;
  const schema = resolve(param.schema);
  return fc.oneof(
    // A fresh, valid value: no collision with earlier requests.
    { arbitrary: fc.uuid().map((value) => ({ value, clean: true })), weight: 3 },
    // A few shared values, so the same key meets other bodies and other accounts.
    { arbitrary: fc.constantFrom('retry-1', 'retry-2', '"retry-1"', 'shared').map((value) => ({ value, clean: false })), weight: 3 },
    { arbitrary: validString(schema, resolve).filter((v) => /^[\x21-\x7e][\x20-\x7e]*$/.test(v) && !/\s$/.test(v)).map((value) => ({ value, clean: false })), weight: 1 },
    { arbitrary: fc.constantFrom('', ' ', '"', '""', '"unterminated', 'a b', 'é', 'x'.repeat(256), '"' + 'x'.repeat(256) + '"', '\t').map((value) => ({ value, clean: false })), weight: 2 },
  );
}

export interface PlanOptions {
  /** Include the input classes of known, reported src bugs (for the todo run). */
  includeKnownBugs: boolean;
  bodyLimit: number;
}

/** Bodies on operations that take none: usually none, sometimes JSON or bytes anyway. */
const strayBody = fc.oneof(
  { arbitrary: fc.constant(null), weight: 15 },
  { arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => ({ body: { kind: 'json', value } as BodySpec, clean: false, label: 'body:unexpected-json' })), weight: 1 },
  { arbitrary: fc.uint8Array({ maxLength: 32 }).map((bytes) => ({ body: { kind: 'bytes', bytes } as BodySpec, clean: false, label: 'body:unexpected-bytes' })), weight: 1 },
);

/** Plans for one documented operation: its method and path template, with everything else varied. */
function planFor(op: OperationInfo, resolve: (s: Schema) => Schema, options: PlanOptions): fc.Arbitrary<Plan> {
  const literalSegments = op.template.split('/').slice(1);
  const segments = fc.tuple(
    ...literalSegments.map((segment) => {
      const param = /^\{(.+)\}$/.exec(segment)?.[1];
      const spec = param ? op.pathParams.find((p) => p.name === param) : undefined;
      if (spec) return pathValue(spec, resolve).map((v) => ({ part: v.spec as string | ValueSpec, clean: v.clean, knownBug: v.knownBug }));
      return fc.oneof(
        { arbitrary: fc.constant({ part: segment as string | ValueSpec, clean: true, knownBug: null as string | null }), weight: 30 },
        { arbitrary: fc.constantFrom(segment.toUpperCase(), `${segment}s`, segment.slice(0, -1), `%${segment.charCodeAt(0).toString(16)}${segment.slice(1)}`).map((part) => ({ part: part as string | ValueSpec, clean: false, knownBug: null as string | null })), weight: 1 },
      );
    }),
  );
  const headerParams = fc.tuple(...op.headerParams.map((param) => fc.option(headerParamValue(param, resolve).map((v) => ({ name: param.name, ...v })), { freq: 3 })));
  const otherMethod = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND');
  return fc
    .record({
      method: fc.oneof({ arbitrary: fc.constant(op.method), weight: 12 }, { arbitrary: otherMethod, weight: 1 }),
      segments,
      suffix: pathSuffixes,
      query: queryFor(op, resolve),
      auth: authSpecs,
      contentType: contentTypes,
      headers: fc.oneof({ arbitrary: fc.constant([] as Array<[string, string]>), weight: 3 }, { arbitrary: extraHeaders, weight: 1 }),
      headerParams,
      body: op.body ? fc.option(bodyFor(op.body, resolve, options.bodyLimit), { freq: 12 }) : strayBody,
      chunked: fc.oneof({ arbitrary: fc.constant(false), weight: 9 }, { arbitrary: fc.constant(true), weight: 1 }),
      expectation: fc.oneof({ arbitrary: fc.constant(null), weight: 40 }, { arbitrary: fc.constantFrom('foo', '200-ok', '100-continue, x'), weight: 1 }),
    })
    .map((r): Plan => {
      const headers: Array<[string, string]> = [...r.headers];
      let clean = r.method === op.method && r.suffix === '' && r.query.clean && r.headers.length === 0 && !r.chunked;
      let knownBug: string | null = null;
      for (const s of r.segments) {
        clean &&= s.clean;
        knownBug ??= s.knownBug ?? pathBug(typeof s.part === 'string' ? s.part : 'lit' in s.part ? s.part.lit : '');
      }
      knownBug ??= pathBug(r.suffix.split('#')[0]!);
      for (const h of r.headerParams) {
        if (h === null) continue;
        headers.push([h.name, h.value]);
        clean &&= h.clean;
      }
      let body: BodySpec | null = null;
      if (r.body) {
        body = r.body.body;
        clean &&= r.body.clean;
        if (r.contentType !== null) headers.push(['Content-Type', r.contentType]);
        clean &&= r.contentType === 'application/json';
      } else {
        clean &&= !op.body;
      }
      if (r.expectation !== null) {
        // Node answers an unknown expectation itself: 417 with an empty body (reported).
        headers.push(['Expect', r.expectation]);
        knownBug ??= 'expect';
        clean = false;
      }
      const auth = r.auth;
      clean &&= auth.kind === 'key';
      const label = `${op.id}${r.method !== op.method ? `:${r.method}` : ''}${r.body ? ` ${r.body.label}` : ''}`;
      return {
        label,
        method: r.method,
        segments: r.segments.map((s) => s.part),
        suffix: r.suffix,
        query: r.query.query,
        auth,
        headers,
        body,
        chunked: r.chunked && body !== null,
        raw: null,
        clean,
        knownBug,
      };
    })
    .filter((plan) => options.includeKnownBugs || plan.knownBug === null);
}

/** Requests no operation describes: random paths and methods. */
function strayPlan(): fc.Arbitrary<Plan> {
  return fc
    .record({
      method: fc.constantFrom('GET', 'POST', 'DELETE', 'HEAD', 'OPTIONS', 'PUT'),
      path: fc.oneof(fc.webPath(), fc.constantFrom('/', '/v1', '/v1/', '/v2/pets', '/V1/PETS', '/healthz', '/readyz', '/metrics', '/v1/openapi.json', '/docs/deprecations', '/.env', '/admin', '/v1/pets/1/2/3')),
      auth: authSpecs,
    })
    .filter((r) => /^[\x21-\x7e]*$/.test(r.path) && !/%(?![0-9A-Fa-f]{2})/.test(r.path) && !/%[89a-fA-F][0-9a-fA-F]/.test(r.path))
    .map((r): Plan => ({
      label: 'stray',
      method: r.method,
      segments: r.path.split('/').slice(1),
      suffix: '',
      query: null,
      auth: r.auth,
      headers: [],
      body: null,
      chunked: false,
      raw: null,
      clean: false,
      knownBug: null,
    }));
}

const rawMutations: fc.Arbitrary<RawMutation> = fc.oneof(
  fc.constantFrom('get', 'GeT', 'FOO', 'M-SEARCH', 'PRI', 'CONNECT', 'TRACE', 'PROPFIND', 'G\u00c9T', 'GET\t').map((token): RawMutation => ({ kind: 'method', token })),
  fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/9.9', 'http/1.1', 'HTTP/1.1 ', 'HTTP/1.10', 'HTTP/1').map((version): RawMutation => ({ kind: 'version', version })),
  fc
    .constantFrom('X-A: a\u0001b', 'X-A: a\u007fb', 'X-A: a\u0000b', ' folded: x', 'X-A : b', 'NoColon', ': empty-name', 'a b: c', 'X-A:\tb', 'X-Ü: x', 'X-A: \u00ff\u00fe')
    .map((line): RawMutation => ({ kind: 'headerLine', line })),
  fc.constant<RawMutation>({ kind: 'bareLf' }),
  fc.constant<RawMutation>({ kind: 'duplicateHost' }),
  fc
    .constantFrom<string[]>(
      ['Content-Length: 2', 'Content-Length: 3'],
      ['Content-Length: 2', 'Transfer-Encoding: chunked'],
      ['Transfer-Encoding: chunked, identity'],
      ['Content-Length: -1'],
      ['Content-Length: +2'],
      ['Content-Length: 0x2'],
      ['Content-Length: 99999999999999999999'],
    )
    .map((lines): RawMutation => ({ kind: 'framing', lines })),
  fc.constant<RawMutation>({ kind: 'noHost' }),
);

/** The same plans as the operations produce, sent as raw bytes with one wire-level mutation. */
function rawPlan(base: fc.Arbitrary<Plan>, options: PlanOptions): fc.Arbitrary<Plan> {
  return fc
    .tuple(base, rawMutations)
    .map(([plan, mutation]): Plan => ({
      ...plan,
      label: `raw:${mutation.kind}`,
      raw: mutation,
      chunked: false,
      clean: false,
      // Without Host, Node answers 400 itself with an empty, non-JSON body; a CONNECT request
      // gets no answer at all: Node closes the connection (both reported).
      knownBug: plan.knownBug ?? (mutation.kind === 'noHost' ? 'noHost' : mutation.kind === 'method' && mutation.token === 'CONNECT' ? 'connect' : null),
    }))
    .filter((plan) => options.includeKnownBugs || plan.knownBug === null);
}

/** Every request the fuzzer sends: each documented operation, stray requests and raw-wire variants. */
export function requestPlans(doc: OpenApiDocument, options: PlanOptions): fc.Arbitrary<Plan> {
  const resolve = resolver(doc);
  const perOperation = operationsOf(doc).map((op) => planFor(op, resolve, options));
  const documented = fc.oneof(...perOperation);
  return fc.oneof(
    { arbitrary: documented, weight: 16 },
    { arbitrary: strayPlan(), weight: 1 },
    { arbitrary: rawPlan(documented, options), weight: 2 },
  );
}

// ---------------------------------------------------------------------------------------
// Running plans

interface StoredPet {
  id: number;
  name: string;
  categoryId: number;
  status?: string;
}

export interface FuzzStats {
  cases: number;
  byStatus: Map<number, number>;
  byLabel: Map<string, number>;
  /** Requests retried because a kept-alive connection had been closed by the server. */
  staleRetries: number;
  /** The slowest exchanges, for the summary. */
  slowest: Array<{ ms: number; label: string; status: number }>;
}

export interface FuzzContext {
  url: string;
  agent: Agent;
  doc: OpenApiDocument;
  keys: { A: string; B: string; staging: string; revoked: string };
  pets: Record<Who, Map<number, StoredPet>>;
  cursors: Record<Who, Array<{ cursor: string; status: string | undefined; categoryId?: string | undefined }>>;
  /** The 404 message for a missing id, with the id replaced by "{id}". */
  missingMessage: string;
  /** Takes each known pet's status from the store (orders change them; PATCH and DELETE are recorded as answered). */
  resyncStatuses(): Promise<void>;
  stats: FuzzStats;
  check: ReturnType<typeof createOpenApiChecker>;
  errorSchema: ValidateFunction;
  operations: OperationInfo[];
}

interface Materialized {
  request: WireRequest;
  /** The account the request authenticates as, when its Authorization is valid. */
  requester: Who | null;
  /** A pet id / cursor referenced by the request, and whose it is. */
  petRef: { id: number; owner: Who | null } | null;
  cursorRef: { owner: Who; edited: boolean; status: string | undefined } | null;
}

/** The message with the pet id (as a whole number) replaced by "{id}". */
export const withoutId = (message: string, id: number) => message.replace(new RegExp(`\\b${id}\\b`, 'g'), '{id}');

const other = (who: Who): Who => (who === 'A' ? 'B' : 'A');

function flipChar(text: string, at: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const i = at % text.length;
  const c = text[i]!;
  const replacement = alphabet[(alphabet.indexOf(c) + 1 + (at % 7)) % alphabet.length]!;
  return text.slice(0, i) + replacement + text.slice(i + 1);
}

function authorizationHeader(ctx: FuzzContext, auth: AuthSpec): { value: string | undefined; requester: Who | null } {
  const { A, staging, revoked } = ctx.keys;
  switch (auth.kind) {
    case 'key':
      return { value: `${auth.scheme}${auth.spacing}${ctx.keys[auth.who]}`, requester: auth.who };
    case 'none':
      return { value: undefined, requester: null };
    case 'raw':
      return { value: auth.value, requester: null };
    case 'basic':
      return { value: `Basic ${ctx.keys[auth.who]}`, requester: null };
    case 'staging':
      return { value: `Bearer ${staging}`, requester: null };
    case 'revoked':
      return { value: `Bearer ${revoked}`, requester: null };
    case 'badChecksum':
      return { value: `Bearer ${flipChar(A, A.length - 1)}`, requester: null };
    case 'unissued':
      return { value: `Bearer ${generateKey('production')}`, requester: null };
    case 'truncated':
      return { value: `Bearer ${A.slice(0, -1)}`, requester: null };
    case 'lowercase':
      return { value: `Bearer ${A.toLowerCase()}`, requester: null };
  }
}

function petJson(size: number): Uint8Array {
  // {"name":"xxxx","categoryId":1} padded with spaces (valid JSON) to exactly `size` bytes.
  const base = '{"name":"x","categoryId":1}';
  return new Uint8Array(Buffer.from(base + ' '.repeat(Math.max(0, size - base.length))));
}

function bodyBytes(body: BodySpec): Uint8Array {
  switch (body.kind) {
    case 'json':
      return new Uint8Array(Buffer.from(serialize(body.value), 'utf8'));
    case 'text':
      return new Uint8Array(Buffer.from(body.text, 'utf8'));
    case 'bytes':
      return body.bytes;
    case 'sized':
      return petJson(body.size);
  }
}

function materialize(ctx: FuzzContext, plan: Plan): Materialized {
  const { value: authorization, requester } = authorizationHeader(ctx, plan.auth);
  const self: Who = requester ?? 'A';
  let petRef: Materialized['petRef'] = null;
  let cursorRef: Materialized['cursorRef'] = null;
  let cursorStatus: string | undefined;
  let cursorCategory: string | undefined;

  const resolveValue = (spec: ValueSpec): string => {
    if ('lit' in spec) return spec.lit;
    if ('pet' in spec) {
      const owner = spec.pet === 'own' ? self : other(self);
      const ids = [...ctx.pets[owner].keys()];
      if (ids.length === 0) return '999999999';
      const id = ids[spec.i % ids.length]!;
      petRef = { id, owner };
      return String(id);
    }
    const owner = spec.cursor === 'own' ? self : other(self);
    const pool = ctx.cursors[owner];
    if (pool.length === 0) return 'AAAA';
    const entry = pool[spec.i % pool.length]!;
    const value = spec.flip === null ? entry.cursor : flipChar(entry.cursor, spec.flip);
    // Base64url's last character carries spare bits: a change there may decode to the same bytes.
    const edited = !Buffer.from(value, 'base64url').equals(Buffer.from(entry.cursor, 'base64url'));
    cursorRef = { owner, edited, status: entry.status };
    cursorStatus = entry.status;
    cursorCategory = entry.categoryId;
    return value;
  };

  const path = `/${plan.segments.map((s) => (typeof s === 'string' ? s : resolveValue(s))).join('/')}${plan.suffix}`;
  let query = '';
  if (plan.query !== null) {
    const pairs = plan.query.map(([name, value]) => [name, typeof value === 'string' ? value : resolveValue(value)] as const);
    // A cursor is only valid with the filters it was issued for: keep them consistent for clean plans.
    const withStatus =
      plan.clean && cursorRef !== null
        ? [
            ...pairs.filter(([name]) => name !== 'status' && name !== 'categoryId'),
            ...(cursorStatus ? [['status', cursorStatus] as const] : []),
            ...(cursorCategory ? [['categoryId', cursorCategory] as const] : []),
          ]
        : pairs;
    query = `?${withStatus.map(([name, value]) => `${name}=${value}`).join('&')}`;
  }
  const headers: Array<[string, string]> = [];
  if (authorization !== undefined) headers.push(['Authorization', authorization]);
  headers.push(...plan.headers);
  const request: WireRequest = { method: plan.method, target: path + query, headers, chunked: plan.chunked };
  if (plan.body) request.body = bodyBytes(plan.body);
  return { request, requester, petRef, cursorRef };
}

function rawBytes(url: string, request: WireRequest, mutation: RawMutation): Buffer {
  const { host } = new URL(url);
  let method = request.method;
  let version = 'HTTP/1.1';
  const lines: string[] = [];
  if (mutation.kind !== 'noHost') lines.push(`Host: ${host}`);
  if (mutation.kind === 'duplicateHost') lines.push('Host: other.example');
  for (const [name, value] of request.headers ?? []) lines.push(`${name}: ${value}`);
  const body = request.body ? Buffer.from(request.body) : Buffer.alloc(0);
  if (mutation.kind === 'framing') lines.push(...mutation.lines);
  else if (request.body) lines.push(`Content-Length: ${body.length}`);
  if (mutation.kind === 'headerLine') lines.push(mutation.line);
  if (mutation.kind === 'method') method = mutation.token;
  if (mutation.kind === 'version') version = mutation.version;
  lines.push('Connection: close');
  const eol = mutation.kind === 'bareLf' ? '\n' : '\r\n';
  const head = `${method} ${request.target} ${version}${eol}${lines.join(eol)}${eol}${eol}`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** Responses written on the socket before Fastify saw a request (clientErrorHandler): Node's responses always have a Date. */
export const answeredBeforeRouting = (res: WireResponse) => res.headers.date === undefined;

/**
 * The path as the router sees it: without query or fragment, and with percent-encoded
 * unreserved characters decoded (RFC 3986 §6.2.2.2: /v1/p%65ts is /v1/pets).
 */
function routedPath(target: string): string {
  return target
    .split(/[?#]/)[0]!
    .replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
      const c = String.fromCharCode(parseInt(hex, 16));
      return /[A-Za-z0-9._~-]/.test(c) ? c : escape;
    });
}

function documentedOperation(ctx: FuzzContext, method: string, target: string): OperationInfo | undefined {
  const path = routedPath(target);
  return ctx.operations.find((op) => op.method === method && new RegExp(`^${op.template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path));
}

function describeExchange(request: WireRequest, res?: WireResponse): string {
  const head = `${request.method} ${request.target}\n  ${(request.headers ?? []).map(([n, v]) => `${n}: ${v.length > 120 ? `${v.slice(0, 120)}…` : v}`).join('\n  ')}`;
  const body = request.body ? `\n  body (${request.body.byteLength} bytes): ${JSON.stringify(Buffer.from(request.body).toString('utf8').slice(0, 200))}` : '';
  const answer = res ? `\n→ ${res.status} ${JSON.stringify(res.headers)}\n  ${res.text.slice(0, 400)}` : '';
  return `${head}${body}${answer}`;
}

function checkResponse(ctx: FuzzContext, plan: Plan, m: Materialized, res: WireResponse): void {
  const { request } = m;
  const where = describeExchange(request, res);
  assert.ok(res.status >= 200 && res.status < 500, `never a 5xx (nor a 1xx/3xx):\n${where}`);
  assert.equal(res.headers['x-content-type-options'], 'nosniff', `X-Content-Type-Options: nosniff on every response:\n${where}`);
  const early = answeredBeforeRouting(res);
  if (!early) assert.ok(res.headers['x-request-id'], `X-Request-Id on every response:\n${where}`);
  const head = request.method === 'HEAD';
  if (!head && res.status >= 400) {
    assert.match(res.headers['content-type'] ?? '', /^application\/json/, `errors are application/json:\n${where}`);
    assert.ok(ctx.errorSchema(res.json), `the body is an Error: ${JSON.stringify(ctx.errorSchema.errors)}\n${where}`);
    assert.equal((res.json as { status: number }).status, res.status, `Error.status equals the HTTP status:\n${where}`);
  }
  const op = documentedOperation(ctx, request.method, request.target);
  if (!head) {
    try {
      ctx.check({ method: request.method, path: routedPath(request.target), status: res.status, contentType: res.headers['content-type'] ?? null, body: res.json, text: res.text });
    } catch (err) {
      throw new assert.AssertionError({ message: `${(err as Error).message}\n${where}` });
    }
  }
  if (op && !early) assert.equal(res.headers['cache-control'], 'no-store', `Cache-Control: no-store on ${op.id}:\n${where}`);

  // Nothing leaks: every pet in a 2xx body is the requester's, exactly as created.
  if (res.status >= 200 && res.status < 300 && op && !head) {
    const pets = (Array.isArray(res.json) ? res.json : [res.json]) as StoredPet[];
    if (op.id === 'createPet' && m.requester) {
      // Idempotency keys are shared between the accounts in the plans: a replay must never
      // hand one account the other's pet.
      // Ids are numbered per account, so the other account may hold the same id: what must
      // hold is that a new pet has an id its own account never had, and a replay is its own.
      const created = pets[0]!;
      if (res.headers['idempotent-replayed'] !== undefined) assert.deepEqual(created, ctx.pets[m.requester].get(created.id), `a replay returns the requester's own pet:\n${where}`);
      else assert.ok(!ctx.pets[m.requester].has(created.id), `account ${m.requester} got id ${created.id} a second time:\n${where}`);
    } else if (op.method !== 'POST') {
      assert.ok(m.requester, `a 2xx without a valid key:\n${where}`);
    }
    if (m.requester && (op.id === 'getPet' || op.id === 'listPets')) {
      for (const pet of pets) {
        // The requester's own pet with that id, exactly (the other account's pet with the
        // same number has another name: the setup names them by account).
        assert.deepEqual(pet, ctx.pets[m.requester].get(pet.id), `account ${m.requester} is shown its own pet ${pet.id}, exactly as created:\n${where}`);
      }
    }
  }
  // A cursor from another account, or an edited one, never yields a page.
  if (m.cursorRef && m.requester && (m.cursorRef.owner !== m.requester || m.cursorRef.edited) && res.status === 200 && op?.id === 'listPets') {
    assert.fail(`a ${m.cursorRef.edited ? 'edited' : 'foreign'} cursor was accepted:\n${where}`);
  }

  if (plan.clean && m.requester && !head) oracle(ctx, op, m, res, where);
}

/** The exact answers to clean requests. */
function oracle(ctx: FuzzContext, op: OperationInfo | undefined, m: Materialized, res: WireResponse, where: string): void {
  if (op?.id === 'createPet' && m.request.body) {
    assert.equal(res.status, 201, `a valid pet is created:\n${where}`);
    const sent = JSON.parse(Buffer.from(m.request.body).toString('utf8')) as Omit<StoredPet, 'id'>;
    const created = res.json as StoredPet;
    if (res.headers['idempotent-replayed'] === undefined) assert.deepEqual(created, { id: created.id, ...sent }, `201 echoes the pet as sent:\n${where}`);
  } else if (op?.id === 'getPet' && m.petRef) {
    if (m.petRef.owner === m.requester || (m.requester !== null && ctx.pets[m.requester].has(m.petRef.id))) {
      // The other account's id may also be one of the requester's own: then that pet is found.
      assert.equal(res.status, 200, `one's own pet is found:\n${where}`);
    } else {
      assert.equal(res.status, 404, `another account's pet is not found:\n${where}`);
      const message = withoutId((res.json as { message: string }).message, m.petRef.id);
      assert.equal(message, ctx.missingMessage, `the 404 for another account's pet is the 404 for a missing id:\n${where}`);
    }
  } else if (op?.id === 'listPets' && (m.cursorRef === null || m.cursorRef.owner === m.requester)) {
    assert.equal(res.status, 200, `a valid list request succeeds:\n${where}`);
    const pets = res.json as StoredPet[];
    const params = new URLSearchParams(m.request.target.split('?')[1] ?? '');
    const limit = Number(params.get('limit') ?? 20);
    assert.ok(pets.length <= limit, `at most limit=${limit} pets:\n${where}`);
    const ids = pets.map((p) => p.id);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), `pets in ascending id order:\n${where}`);
    const status = params.get('status');
    if (status) assert.ok(pets.every((p) => p.status === status), `only status=${status}:\n${where}`);
    const category = params.get('categoryId');
    if (category) assert.ok(pets.every((p) => p.categoryId === Number(category)), `only categoryId=${category}:\n${where}`);
    if (m.cursorRef === null) {
      // The first page is exactly the first `limit` of the account's pets with these filters.
      const expected = [...ctx.pets[m.requester!].values()]
        .filter((p) => (!status || p.status === status) && (!category || p.categoryId === Number(category)))
        .sort((a, b) => a.id - b.id);
      assert.deepEqual(ids, expected.slice(0, limit).map((p) => p.id), `the first page is complete:\n${where}`);
      assert.equal(res.headers.link !== undefined, expected.length > limit, `Link rel="next" exactly when more pets exist:\n${where}`);
    }
  }
}

function record(ctx: FuzzContext, m: Materialized, res: WireResponse): void {
  if (!m.requester || m.request.method === 'HEAD') return;
  const op = documentedOperation(ctx, m.request.method, m.request.target);
  if ((op?.id === 'createPet' && res.status === 201) || (op?.id === 'updatePet' && res.status === 200)) {
    const pet = res.json as StoredPet;
    ctx.pets[m.requester].set(pet.id, pet);
  }
  if (op?.id === 'deletePet' && res.status === 204) {
    // The pet the server routed to, read as it reads the path (routedPath: /v1/%70ets/21 and
    // /v1/pets/%32%31 delete pet 21, and a query or fragment is not part of the id).
    const segment = /^\/v1\/pets\/([^/]+)/.exec(routedPath(m.request.target))?.[1] ?? '';
    ctx.pets[m.requester].delete(Number(decodeURIComponent(segment)));
  }

  const link = res.headers.link;
  if (op?.id === 'listPets' && res.status === 200 && link) {
    const next = /<([^>]+)>;\s*rel="next"/.exec(link)?.[1];
    if (next) {
      const params = new URL(next, ctx.url).searchParams;
      const cursor = params.get('cursor');
      if (cursor && ctx.cursors[m.requester].length < 200) {
        ctx.cursors[m.requester].push({ cursor, status: params.get('status') ?? undefined, categoryId: params.get('categoryId') ?? undefined });
      }
    }
  }
}

/** Sends one plan and checks the answer; throws an AssertionError describing the request on failure. */
export async function runPlan(ctx: FuzzContext, plan: Plan): Promise<void> {
  const m = materialize(ctx, plan);
  const started = Date.now();
  let res: WireResponse;
  try {
    if (plan.raw) {
      // What the server sees: the mutated method, if any.
      if (plan.raw.kind === 'method') m.request = { ...m.request, method: plan.raw.token };
      res = await exchangeRaw(ctx.url, rawBytes(ctx.url, m.request, plan.raw), { timeoutMs: 5000, head: m.request.method === 'HEAD' });
    } else {
      try {
        res = await send(ctx.url, m.request, { agent: ctx.agent, timeoutMs: 5000 });
      } catch (err) {
        if (!(err instanceof StaleConnectionError)) throw err;
        ctx.stats.staleRetries++;
        res = await send(ctx.url, m.request, { agent: false, timeoutMs: 5000 });
      }
    }
  } catch (err) {
    if (err instanceof NoResponseError) throw new assert.AssertionError({ message: `every request gets a complete response: ${err.message}\n${describeExchange(m.request)}` });
    throw err;
  }
  ctx.stats.cases++;
  const ms = Date.now() - started;
  if (ctx.stats.slowest.length < 5 || ms > ctx.stats.slowest[4]!.ms) {
    ctx.stats.slowest = [...ctx.stats.slowest, { ms, label: plan.label, status: res.status }].sort((x, y) => y.ms - x.ms).slice(0, 5);
  }
  ctx.stats.byStatus.set(res.status, (ctx.stats.byStatus.get(res.status) ?? 0) + 1);
  ctx.stats.byLabel.set(plan.label, (ctx.stats.byLabel.get(plan.label) ?? 0) + 1);
  checkResponse(ctx, plan, m, res);
  record(ctx, m, res);
  // Orders move pets between statuses. Whatever this request was (even mangled on the wire,
  // where the client's reading of the answer may not be the server's), the model takes the
  // pets' statuses from the store again, so later reads are still compared exactly.
  if (routedPath(m.request.target).startsWith('/v1/store/')) await ctx.resyncStatuses();
}

// ---------------------------------------------------------------------------------------
// Setting up

/**
 * Prepares two accounts with pets and cursors on a running app (started with rate limits
 * out of the way), a staging key and a revoked key, and the document-driven checkers.
 */
export async function createFuzzContext(app: TestApp, petsPerAccount = 30): Promise<FuzzContext> {
  const doc = (await (await fetch(`${app.url}/v1/openapi.json`)).json()) as OpenApiDocument;
  const a = await app.createAccount('Fuzz A');
  const b = await app.createAccount('Fuzz B');
  const staging = await app.services.apiKeys.create(a.accountId, app.config.environment === 'production' ? 'staging' : 'production');
  const revoked = await app.services.apiKeys.create(a.accountId);
  await app.services.apiKeys.revoke(revoked.id);

  const ajv = new Ajv({ strict: false, allErrors: true });
  const errorSchema = ajv.compile(doc.components.schemas.Error as object);
  const ctx: FuzzContext = {
    url: app.url,
    agent: new Agent({ keepAlive: true, maxSockets: 1 }),
    doc,
    keys: { A: a.key, B: b.key, staging: staging.key, revoked: revoked.key },
    pets: { A: new Map(), B: new Map() },
    cursors: { A: [], B: [] },
    missingMessage: '',
    async resyncStatuses() {
      for (const [who, account] of [['A', a], ['B', b]] as const) {
        for (const stored of await app.store.pets.list({ accountId: account.accountId, limit: 100_000 })) {
          const known = ctx.pets[who].get(stored.id);
          if (!known) continue;
          const { status: _old, ...rest } = known;
          ctx.pets[who].set(stored.id, stored.status === undefined ? rest : { ...rest, status: stored.status });
        }
      }
    },
    stats: { cases: 0, byStatus: new Map(), byLabel: new Map(), staleRetries: 0, slowest: [] },
    check: createOpenApiChecker(doc),
    errorSchema,
    operations: operationsOf(doc),
  };
  const statuses = [undefined, 'available', 'pending', 'sold'] as const;
  // Interleaved. Both accounts number their pets from 1, so they hold the same ids: the names
  // (by account) tell whose pet a body shows.
  for (let i = 0; i < petsPerAccount; i++) {
    for (const who of ['A', 'B'] as const) {
      const status = statuses[i % statuses.length];
      const pet = await app.services.pets.create(who === 'A' ? a.accountId : b.accountId, { name: `${who}-pet-${i}`, categoryId: i + 1, ...(status ? { status } : {}) });
      ctx.pets[who].set(pet.id, pet as StoredPet);
    }
  }
  for (const who of ['A', 'B'] as const) {
    for (const status of statuses) {
      const res = await send(app.url, { method: 'GET', target: `/v1/pets?limit=2${status ? `&status=${status}` : ''}`, headers: [['Authorization', `Bearer ${ctx.keys[who]}`]] });
      record(ctx, { request: { method: 'GET', target: '/v1/pets' }, requester: who, petRef: null, cursorRef: null }, res);
    }
  }
  const missingId = 9007199254740991;
  const missing = await send(app.url, { method: 'GET', target: `/v1/pets/${missingId}`, headers: [['Authorization', `Bearer ${a.key}`]] });
  ctx.missingMessage = withoutId((missing.json as { message: string }).message, missingId);
  return ctx;
}

export function summarize(stats: FuzzStats): string {
  const statuses = [...stats.byStatus.entries()].sort(([x], [y]) => x - y).map(([s, n]) => `${s}×${n}`).join(' ');
  const slowest = stats.slowest.map((s) => `${s.label} → ${s.status} in ${s.ms} ms`).join(', ');
  return `${stats.cases} requests; statuses ${statuses}; stale keep-alive retries ${stats.staleRetries}; slowest: ${slowest}`;
}
