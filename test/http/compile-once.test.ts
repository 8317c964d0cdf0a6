import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compiledOnce, serializersCompiledOnce } from '../../src/http/compile-once.js';
import { createValidatorCompiler } from '../../src/http/validation.js';

const route = (schema: unknown, url = '/v1/pets', httpStatus = '200') => ({ schema, method: 'GET', url, httpStatus });
const errorRef = { $ref: 'Error#' };
const errorSchema = {
  $id: 'Error',
  type: 'object',
  properties: { code: { type: 'string' }, message: { type: 'string' } },
  required: ['code', 'message'],
};

describe('schemas compiled once', () => {
  test('when two keys are asked for several times, then each is compiled once and its result handed back', () => {
    const compiled: string[] = [];
    const compile = compiledOnce((s: string) => s.toLowerCase(), (s) => (compiled.push(s), { s }));
    const first = compile('Pet');
    assert.equal(compile('PET'), first);
    assert.notEqual(compile('Error'), first);
    assert.deepEqual(compiled, ['Pet', 'Error']);
  });

  test('when routes share a response schema, then they share one serializer, and it writes what the schema says', () => {
    const compile = serializersCompiledOnce()({ Error: errorSchema }, {});
    const notFound = compile(route({ ...errorRef }, '/v1/pets/:petId', '404'));
    assert.equal(compile(route({ ...errorRef }, '/v1/orders/:orderId', '404')), notFound);
    assert.equal(notFound({ code: 'not_found', message: 'No pet.', secret: 'x' }), '{"code":"not_found","message":"No pet."}');
    const pet = compile(route({ type: 'object', properties: { id: { type: 'integer' } } }));
    assert.notEqual(pet, notFound);
    assert.equal(pet({ id: 7, code: 'x' }), '{"id":7}');
  });

  test('when a body and a query share a schema, then each part keeps its own rules (bodies are not coerced)', () => {
    const compile = createValidatorCompiler([]);
    const schema = { type: 'object', properties: { limit: { type: 'integer' } } };
    const body = compile({ schema, method: 'POST', url: '/v1/pets', httpPart: 'body' }) as (data: unknown) => boolean;
    const query = compile({ schema: { ...schema }, method: 'GET', url: '/v1/pets', httpPart: 'querystring' }) as (data: unknown) => boolean;
    assert.equal(compile({ schema: { ...schema }, method: 'GET', url: '/v1/orders', httpPart: 'querystring' }), query);
    assert.equal(body({ limit: '5' }), false);
    assert.equal(query({ limit: '5' }), true);
  });
});
