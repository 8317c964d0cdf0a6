// Schemas compiled once each. Fastify asks for a serializer per route and status and a validator
// per route and part, and routes repeat their schemas: ~440 serializer requests for ~30 schemas
// (most the Error body), and compiling each was a fifth of the server's start-up.
import SerializerSelector, { type SerializerFactory } from '@fastify/fast-json-stringify-compiler';

/** `compile`, calling through once per distinct key and handing back that result after. */
export function compiledOnce<A, R>(keyOf: (arg: A) => string, compile: (arg: A) => R): (arg: A) => R {
  const compiled = new Map<string, R>();
  return (arg) => {
    const key = keyOf(arg);
    let result = compiled.get(key);
    if (result === undefined) {
      result = compile(arg);
      compiled.set(key, result);
    }
    return result;
  };
}

/**
 * Fastify's default serializer factory, each of its compilers (one per schema context, so per
 * set of shared schemas) compiling a schema once by its JSON: equal JSON, equal code.
 */
export function serializersCompiledOnce(): SerializerFactory {
  const build = SerializerSelector();
  return (externalSchemas, options) => compiledOnce((route) => JSON.stringify(route.schema) ?? '', build(externalSchemas, options));
}
