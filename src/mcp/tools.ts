// The API as MCP tools, generated from the served OpenAPI documents so they cannot drift from it:
// one tool per operation (name = operationId; description, deprecation and stability from the
// document; input schema = its parameters and body, $refs inlined). A call is an ordinary HTTP
// request with the caller's key (the `Api`), so every rule of the API (scopes, isolation, rate
// limits, validation) applies as it is; writes carry an Idempotency-Key. An operation that
// answers a stream (text/event-stream) is a bounded tool instead (stream-tool.ts).
import { createHash } from 'node:crypto';
import { type ApiTool, resultOf } from './api.js';
import { isStreaming, streamTool } from './stream-tool.js';

type Json = Record<string, unknown>;

/** A served document and the path its operations are relative to (`/v1`, `/example/v1`). */
export interface ToolSource {
  document: Json;
  basePath: string;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The schema with every `#/components/schemas/X` reference replaced by X (recursion cut at a repeat). */
function inline(schema: unknown, components: Json, seen: readonly string[] = []): unknown {
  if (Array.isArray(schema)) return schema.map((item) => inline(item, components, seen));
  if (typeof schema !== 'object' || schema === null) return schema;
  const ref = (schema as { $ref?: unknown }).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
    const name = ref.slice('#/components/schemas/'.length);
    if (seen.includes(name)) return { type: 'object' };
    return inline(components[name], components, [...seen, name]);
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'example' || key === 'examples' || key === '$id') continue;
    out[key] = inline(value, components, seen);
  }
  return out;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  description?: string;
  schema?: unknown;
}

/** What the description says besides the document's text: stability, deprecation and removal date. */
function markers(op: Json): string {
  const notes: string[] = [];
  if (op.deprecated === true) {
    const sunset = typeof op['x-sunset'] === 'string' ? ` It will be removed on ${op['x-sunset']}.` : '';
    const successor = (op['x-successor'] as { operationId?: string } | undefined)?.operationId;
    notes.push(`DEPRECATED.${sunset}${successor ? ` Use ${successor} instead.` : ''}`);
  }
  if (op['x-stability'] === 'experimental') notes.push('EXPERIMENTAL: the shape may still change.');
  if (typeof op['x-required-scope'] === 'string') notes.push(`Needs the scope ${op['x-required-scope']}.`);
  return notes.length ? `${notes.join(' ')}\n\n` : '';
}

/** The tool's input properties for the operation's parameters (and the names of the required ones). */
function parameterProperties(parameters: readonly Parameter[], components: Json): { properties: Json; required: string[] } {
  const properties: Json = {};
  const required: string[] = [];
  for (const p of parameters) {
    properties[p.name] = { ...(inline(p.schema ?? {}, components) as Json), ...(p.description ? { description: p.description } : {}) };
    if (p.required) required.push(p.name);
  }
  return { properties, required };
}

/** The request's URL and headers from the call's arguments for the operation's parameters. */
function requestOf(basePath: string, path: string, parameters: readonly Parameter[], args: Record<string, unknown>): { url: string; headers: Record<string, string> } {
  let url = basePath + path.replace(/\{([^}]+)\}/g, (_, key: string) => encodeURIComponent(String(args[key] ?? '')));
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const p of parameters) {
    const value = args[p.name];
    if (value === undefined || p.in === 'path') continue;
    if (p.in === 'query') query.set(p.name, String(value));
    else headers[p.name.toLowerCase()] = String(value);
  }
  if (query.size > 0) url += `?${query}`;
  return { url, headers };
}

/** What the description says before the operation's own text: markers, then the summary. */
const descriptionOf = (op: Json, name: string) => `${markers(op)}${String(op.summary ?? name)}: ${String(op.description ?? '')}`.trim();

function toolOf(source: ToolSource, path: string, method: (typeof METHODS)[number], op: Json, components: Json): ApiTool {
  const usable = (op.parameters as Parameter[] | undefined) ?? [];
  const { properties, required } = parameterProperties(usable, components);
  const name = String(op.operationId);
  if (method === 'get' && isStreaming(op)) {
    return streamTool({ name, description: descriptionOf(op, name), title: String(op.summary ?? name), properties, required, request: (args) => requestOf(source.basePath, path, usable, args) });
  }
  const body = (op.requestBody as { required?: boolean; content?: Record<string, { schema?: unknown }> } | undefined);
  const media = body?.content && Object.entries(body.content)[0];
  if (media) {
    properties.body = { ...(inline(media[1].schema ?? {}, components) as Json), description: `The request body (${media[0]}).` };
    if (body.required) required.push('body');
  }
  const write = method !== 'get';
  return {
    name,
    description: descriptionOf(op, name),
    inputSchema: { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false },
    annotations: { title: String(op.summary ?? name), readOnlyHint: !write, idempotentHint: !write || method === 'put' || method === 'delete' },
    async call(args, api) {
      const { url, headers } = requestOf(source.basePath, path, usable, args);
      // An agent that repeats a call (same tool, same arguments) gets the first answer, not a
      // second pet: the default key is derived from the call. To do the same thing twice on
      // purpose, pass distinct Idempotency-Key values.
      if (write) headers['idempotency-key'] ??= createHash('sha256').update(`${name}\n${JSON.stringify(args)}`).digest('base64url');
      let payload: string | undefined;
      if (media && args.body !== undefined) {
        headers['content-type'] = media[0];
        payload = JSON.stringify(args.body);
      }
      const answer = await api.send({ method: method.toUpperCase(), path: url, headers, ...(payload !== undefined ? { body: payload } : {}) });
      return resultOf(answer);
    },
  };
}

/** One tool per operation of the documents, in document order. */
export function toolsOf(sources: readonly ToolSource[]): ApiTool[] {
  const tools: ApiTool[] = [];
  for (const source of sources) {
    const components = ((source.document.components as Json | undefined)?.schemas as Json | undefined) ?? {};
    for (const [path, item] of Object.entries((source.document.paths as Record<string, Json> | undefined) ?? {})) {
      for (const method of METHODS) {
        const op = item[method] as Json | undefined;
        if (op?.operationId) tools.push(toolOf(source, path, method, op, components));
      }
    }
  }
  return tools;
}
