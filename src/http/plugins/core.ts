// What every route of the app shares: schemas and validation, the error model, JSON parsing,
// the headers every response carries, graceful shutdown, the one log line per request, and 405
// (with Allow) for the methods a path does not have.
import { METHODS } from 'node:http';
import type { FastifyRequest, HTTPMethods } from 'fastify';
import secureJson from 'secure-json-parse';
import { InvalidContentTypeError, InvalidJsonError, InvalidRequestError, MethodNotAllowedError, UnsupportedContentEncodingError } from '../../errors.js';
import { createRequestLineWriter, writesAt } from '../../logger.js';
import { hooks as tracingHooks, serverSpanOf } from '../../tracing/switch.js';
import { eventSchemas } from '../../schemas/events.js';
import { sharedSchemas } from '../../schemas/index.js';
import { categorySchemas } from '../../schemas/categories.js';
import { apiKeySchemas } from '../../schemas/api-keys.js';
import { auditSchemas } from '../../schemas/audit.js';
import { type App, definePlugin, PLUGIN } from '../plugin.js';
import { errorResponse, type HeaderSpec } from '../responses.js';
import { createValidatorCompiler } from '../validation.js';
import { registerErrorHandling } from './errors.js';
import { registerShutdown } from './shutdown.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** True once close has begun, for request paths that answer outside Fastify's hooks. */
    isClosing(): boolean;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseJson(body: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new InvalidJsonError('The request body is not valid UTF-8. Send JSON encoded as UTF-8.');
  }
  if (text.trim() === '') throw new InvalidRequestError('The request body is empty. Send a JSON object.');
  try {
    return secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const reason = err instanceof SyntaxError && /forbidden prototype/i.test(err.message)
      ? 'it contains a forbidden "__proto__" or "constructor.prototype" key'
      : err instanceof RangeError ? 'it is nested too deeply' : `${(err as Error).message}`;
    throw new InvalidJsonError(`The request body is not valid JSON: ${reason}.`);
  }
}

function registerRequestLog(app: App): void {
  const writeRequestLine = createRequestLineWriter(app.log);
  const traced = tracingHooks !== undefined;
  app.addHook('onResponse', (request, reply, done) => {
    // At warn and above nothing is read: the getters below cost something each.
    if (!writesAt(app.log, 'info')) {
      done();
      return;
    }
    // What Fastify's serializers would take for req and res.
    writeRequestLine({
      reqId: request.id,
      method: request.method,
      url: request.url,
      version: request.headers['accept-version'],
      host: request.host,
      remoteAddress: request.ip,
      remotePort: request.socket?.remotePort,
      statusCode: reply.statusCode,
      responseTime: reply.elapsedTime,
      trace: traced ? serverSpanOf(request.raw)?.ids : undefined,
    });
    done();
  });
}

/**
 * Every operation that takes a body can answer 415 `unsupported_content_encoding` (parseBody):
 * declared once here, beside its 413, with the same headers, so the document says so.
 */
function declareUnsupportedEncoding(app: App): void {
  app.addHook('onRoute', (route) => {
    const responses = route.schema?.response as Record<string, { headers?: HeaderSpec }> | undefined;
    if (!route.schema?.body || !responses?.[413] || responses[415]) return;
    responses[415] = errorResponse('The body is compressed (`unsupported_content_encoding`): send it without a Content-Encoding; `Accept-Encoding` says which are accepted.', {
      ...responses[413].headers,
      'Accept-Encoding': { type: 'string', description: 'The content codings accepted for request bodies: `identity` (none).' },
    });
  });
}

/**
 * A JSON body, refused when compressed where the operation documents it (its 415): nothing here
 * decodes gzip or br, and parsing the bytes as JSON would blame UTF-8.
 */
function parseBody(req: FastifyRequest, body: Buffer): unknown {
  const encoding = req.headers['content-encoding'];
  // Only then: routeOptions builds a new object on each read, and this runs for every body.
  if (encoding !== undefined && body.length > 0 && encoding.trim().toLowerCase() !== 'identity') {
    const documented = (req.routeOptions.schema?.response as Record<string, unknown> | undefined)?.[415] !== undefined;
    if (documented) throw new UnsupportedContentEncodingError(encoding);
  }
  return parseJson(body);
}

export const corePlugin = definePlugin<{ bodyLimit: number }>(PLUGIN.core, [], async (app, { bodyLimit }) => {
  const schemas = [...sharedSchemas, ...categorySchemas, ...eventSchemas, ...apiKeySchemas, ...auditSchemas];
  for (const schema of schemas) app.addSchema(schema);
  app.setValidatorCompiler(createValidatorCompiler(schemas));
  registerErrorHandling(app, bodyLimit);

  declareUnsupportedEncoding(app);
  app.decorateRequest('auth', null);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    try {
      done(null, parseBody(req, body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  // JSON Merge Patch (RFC 7396) bodies, for PATCH only; elsewhere refused as before.
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'buffer' }, (req, body, done) => {
    if (req.method !== 'PATCH') {
      done(new InvalidContentTypeError('Content-Type application/merge-patch+json is for PATCH requests. Send the body as JSON with Content-Type: application/json.'), undefined);
      return;
    }
    try {
      done(null, parseBody(req, body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  // Hooks on the request path are callback style: an async hook costs a promise and a
  // microtask per request even when it has nothing to wait for.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    done();
  });
  // After the headers hook, so refusals during shutdown carry them too.
  app.decorate('isClosing', registerShutdown(app));
  registerRequestLog(app);
});

/** The methods an Allow header lists first, in this order; any other the router knows comes after. */
const USUAL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * Remembers each path's methods from now on; the returned function, called once every route is
 * registered, makes every other method Node parses (TRACE, PROPFIND…) answer 405 with Allow
 * instead of 404. CONNECT never reaches Fastify (instance.ts refuses it).
 */
export function collectRouteMethods(app: App): () => void {
  // No body is read for them: the answer is 405 whatever it holds.
  for (const method of METHODS) if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method);
  const allMethods = [...USUAL_METHODS, ...app.supportedMethods.filter((m) => !USUAL_METHODS.includes(m))] as HTTPMethods[];
  const methodsByUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if (route.config && (route.config as { methodNotAllowed?: boolean }).methodNotAllowed) return;
    const methods = methodsByUrl.get(route.url) ?? new Set<string>();
    for (const m of ([] as string[]).concat(route.method)) methods.add(m);
    methodsByUrl.set(route.url, methods);
  });
  return () => {
    for (const [url, allowed] of methodsByUrl) {
      const other = allMethods.filter((m) => !allowed.has(m));
      if (other.length === 0) continue;
      const allow = allMethods.filter((m) => allowed.has(m));
      app.route({
        method: other,
        url,
        config: { methodNotAllowed: true },
        schema: { hide: true },
        handler: async (request) => {
          throw new MethodNotAllowedError(request.method, request.url.split('?')[0] ?? url, allow);
        },
      });
    }
  };
}
