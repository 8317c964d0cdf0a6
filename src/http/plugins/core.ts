// What every route of the app shares: schemas and validation, the error model, JSON parsing,
// the headers every response carries, graceful shutdown, the one log line per request, and 405
// (with Allow) for the methods a path does not have.
import type { HTTPMethods } from 'fastify';
import secureJson from 'secure-json-parse';
import { InvalidContentTypeError, InvalidJsonError, InvalidRequestError, MethodNotAllowedError } from '../../errors.js';
import { createRequestLineWriter, writesAt } from '../../logger.js';
import { hooks as tracingHooks, serverSpanOf } from '../../tracing/switch.js';
import { eventSchemas } from '../../schemas/events.js';
import { sharedSchemas } from '../../schemas/index.js';
import { categorySchemas } from '../../schemas/categories.js';
import { apiKeySchemas } from '../../schemas/api-keys.js';
import { auditSchemas } from '../../schemas/audit.js';
import { type App, definePlugin, PLUGIN } from '../plugin.js';
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

export const corePlugin = definePlugin<{ bodyLimit: number }>(PLUGIN.core, [], async (app, { bodyLimit }) => {
  const schemas = [...sharedSchemas, ...categorySchemas, ...eventSchemas, ...apiKeySchemas, ...auditSchemas];
  for (const schema of schemas) app.addSchema(schema);
  app.setValidatorCompiler(createValidatorCompiler(schemas));
  registerErrorHandling(app, bodyLimit);

  app.decorateRequest('auth', null);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, parseJson(body as Buffer));
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
      done(null, parseJson(body as Buffer));
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

const ALL_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * Remembers each path's methods from now on; the returned function, called once every route is
 * registered, makes the other methods answer 405 with Allow instead of 404.
 */
export function collectRouteMethods(app: App): () => void {
  const methodsByUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if (route.config && (route.config as { methodNotAllowed?: boolean }).methodNotAllowed) return;
    const methods = methodsByUrl.get(route.url) ?? new Set<string>();
    for (const m of ([] as string[]).concat(route.method)) methods.add(m);
    methodsByUrl.set(route.url, methods);
  });
  return () => {
    for (const [url, allowed] of methodsByUrl) {
      const other = ALL_METHODS.filter((m) => !allowed.has(m));
      if (other.length === 0) continue;
      const allow = ALL_METHODS.filter((m) => allowed.has(m));
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
