// Response serializers: fast-json-stringify's, compiled once per distinct schema. Fastify asks
// for one per route and status, and most statuses of most routes share the Error schema: ~440
// requests for ~30 schemas, and compiling each was a fifth of the server's start-up.
import SerializerSelector, { type SerializerFactory } from '@fastify/fast-json-stringify-compiler';

type Serializer = ReturnType<ReturnType<SerializerFactory>>;

/**
 * Fastify's default serializer factory, with each of its compilers (one per schema context, so
 * per set of shared schemas) keeping what it compiled by the schema's JSON: equal JSON, equal code.
 */
export function compileOncePerSchema(): SerializerFactory {
  const build = SerializerSelector();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    const compiled = new Map<string, Serializer>();
    return (route) => {
      const key = JSON.stringify(route.schema) ?? '';
      let serializer = compiled.get(key);
      if (serializer === undefined) {
        serializer = compile(route);
        compiled.set(key, serializer);
      }
      return serializer;
    };
  };
}
