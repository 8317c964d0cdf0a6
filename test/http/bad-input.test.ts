// Every bad input the issue names, each asserting the exact status and error code.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { sharedApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let key: string;

describe('bad input', () => {
const getApp = sharedApp();
before(async () => {
  app = await getApp();
  ({ key } = await app.createAccount());
});

async function expectError(
  method: string,
  path: string,
  options: Parameters<TestApp['request']>[2],
  status: number,
  code: string,
  messagePattern?: RegExp,
) {
  const res = await app.request(method, path, { key, ...options });
  assert.equal(res.status, status, `${method} ${path}: ${res.text}`);
  const body = res.body as { code: string; message: string; status: number };
  assert.equal(body.code, code, res.text);
  assert.equal(body.status, status);
  if (messagePattern) assert.match(body.message, messagePattern);
  return body;
}

const json = { 'content-type': 'application/json' };

describe('POST /v1/pets with a bad body', () => {
  test('when there is no body at all, then 400 invalid_request saying a body is required', async () => {
    await expectError('POST', '/v1/pets', {}, 400, 'invalid_request', /body is required/);
  });

  test('when the body is empty with Content-Type: application/json, then 400 invalid_request', async () => {
    await expectError('POST', '/v1/pets', { rawBody: '', headers: json }, 400, 'invalid_request', /empty/);
  });

  for (const [label, raw] of [['null', 'null'], ['an array', '[]'], ['a string', '"Rex"'], ['a number', '42'], ['true', 'true']]) {
    test(`when the body is ${label}, then 400 invalid_request saying it must be an object`, async () => {
      await expectError('POST', '/v1/pets', { rawBody: raw!, headers: json }, 400, 'invalid_request', /must be a JSON object/);
    });
  }

  for (const raw of ['{', '{"name": "Rex",}', "{'name':'Rex'}", '{"name":"Rex"} trailing', 'NaN']) {
    test(`when the body is invalid JSON (${raw}), then 400 invalid_json`, async () => {
      await expectError('POST', '/v1/pets', { rawBody: raw, headers: json }, 400, 'invalid_json');
    });
  }

  test('when the body is not valid UTF-8, then 400 invalid_json', async () => {
    const bytes = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('","categoryId":1}')]);
    await expectError('POST', '/v1/pets', { rawBody: new Uint8Array(bytes), headers: json }, 400, 'invalid_json', /UTF-8/);
  });

  test('when Content-Type is missing but a body is sent, then 400 invalid_content_type', async () => {
    const bytes = new TextEncoder().encode('{"name":"Rex","categoryId":1}');
    await expectError('POST', '/v1/pets', { rawBody: bytes }, 400, 'invalid_content_type', /application\/json/);
  });

  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml']) {
    test(`when Content-Type is ${type}, then 400 invalid_content_type`, async () => {
      await expectError('POST', '/v1/pets', { rawBody: '{"name":"Rex","categoryId":1}', headers: { 'content-type': type } }, 400, 'invalid_content_type');
    });
  }

  test('when Content-Type is application/json; charset=utf-8, then it is accepted', async () => {
    const res = await app.request('POST', '/v1/pets', {
      key,
      rawBody: '{"name":"Rex","categoryId":1}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    assert.equal(res.status, 201);
  });

  test('when name is missing, then 400 invalid_request naming "name"', async () => {
    await expectError('POST', '/v1/pets', { body: { categoryId: 1 } }, 400, 'invalid_request', /"name" is required/);
  });

  test('when categoryId is missing, then 400 invalid_request naming "categoryId"', async () => {
    await expectError('POST', '/v1/pets', { body: { name: 'Rex' } }, 400, 'invalid_request', /"categoryId" is required/);
  });

  test('when the body is an empty object, then 400 invalid_request naming a required field', async () => {
    await expectError('POST', '/v1/pets', { body: {} }, 400, 'invalid_request', /is required/);
  });

  const wrongTypes: Array<[string, unknown, RegExp]> = [
    ['categoryId is the string "7"', { name: 'Rex', categoryId: '7' }, /"categoryId" must be an integer, not string/],
    ['name is the number 5', { name: 5, categoryId: 7 }, /"name" must be a string, not number/],
    ['categoryId is 1.5', { name: 'Rex', categoryId: 1.5 }, /"categoryId" must be an integer/],
    ['categoryId is 0', { name: 'Rex', categoryId: 0 }, /"categoryId" must be at least 1/],
    ['categoryId is -3', { name: 'Rex', categoryId: -3 }, /"categoryId" must be at least 1/],
    ['categoryId is null', { name: 'Rex', categoryId: null }, /"categoryId" must be an integer, not null/],
    ['categoryId is true', { name: 'Rex', categoryId: true }, /"categoryId" must be an integer, not boolean/],
    ['name is null', { name: null, categoryId: 1 }, /"name" must be a string, not null/],
    ['name is an object', { name: { first: 'Rex' }, categoryId: 1 }, /"name" must be a string, not object/],
    ['name is empty', { name: '', categoryId: 1 }, /"name" must be at least 1 character/],
    ['name is blank', { name: '   ', categoryId: 1 }, /"name" is invalid/],
    ['name is 256 characters', { name: 'a'.repeat(256), categoryId: 1 }, /"name" must be at most 255/],
    ['name has a NUL byte', { name: 'Re\u0000x', categoryId: 1 }, /"name" is invalid/],
    ['name has a newline', { name: 'Re\nx', categoryId: 1 }, /"name" is invalid/],
    ['name has an unpaired surrogate', { name: 'Re\ud800x', categoryId: 1 }, /"name" is invalid/],
    ['status is "lost"', { name: 'Rex', categoryId: 1, status: 'lost' }, /"status" must be one of: available, pending, sold/],
    ['status is "Available"', { name: 'Rex', categoryId: 1, status: 'Available' }, /"status" must be one of/],
    ['status is null', { name: 'Rex', categoryId: 1, status: null }, /"status" must be a string, not null/],
    ['an unknown field is present', { name: 'Rex', categoryId: 1, color: 'brown' }, /"color" is not allowed/],
    ['id is sent', { id: 5, name: 'Rex', categoryId: 1 }, /"id" is not allowed/],
    ['a "constructor" key is sent', { name: 'Rex', categoryId: 1, constructor: 'x' }, /"constructor" is not allowed/],
  ];
  for (const [label, body, message] of wrongTypes) {
    test(`when ${label}, then 400 invalid_request`, async () => {
      await expectError('POST', '/v1/pets', { body }, 400, 'invalid_request', message);
    });
  }

  test('when categoryId is beyond the exact-integer range, then 400 rather than a rounded value', async () => {
    for (const literal of ['9007199254740992', '9007199254740993', '18446744073709551616', '1e400', '-1e400']) {
      await expectError('POST', '/v1/pets', { rawBody: `{"name":"Rex","categoryId":${literal}}`, headers: json }, 400, 'invalid_request', /categoryId/);
    }
  });

  test('when the body has a __proto__ key, then 400 invalid_json and no prototype is polluted', async () => {
    await expectError('POST', '/v1/pets', { rawBody: '{"name":"Rex","categoryId":1,"__proto__":{"polluted":true}}', headers: json }, 400, 'invalid_json', /__proto__/);
    await expectError('POST', '/v1/pets', { rawBody: '{"name":"Rex","categoryId":1,"constructor":{"prototype":{"polluted":true}}}', headers: json }, 400, 'invalid_json');
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  test('when the body is larger than 64 KiB, then 413 payload_too_large', async () => {
    await expectError('POST', '/v1/pets', { body: { name: 'x'.repeat(70 * 1024), categoryId: 1 } }, 413, 'payload_too_large');
  });
});

describe('GET /v1/pets with bad query parameters', () => {
  const cases: Array<[string, RegExp]> = [
    ['limit=0', /"limit" must be at least 1/],
    ['limit=101', /"limit" must be at most 100/],
    ['limit=abc', /"limit" must be an integer/],
    ['limit=1.5', /"limit" must be an integer/],
    ['limit=-5', /"limit" must be at least 1/],
    ['limit=1e1', /"limit" must be an integer, not "1e1"/],
    ['limit=0x10', /"limit" must be an integer/],
    ['limit=%205', /"limit" must be an integer/],
    ['limit=', /"limit" must be an integer/],
    ['limit=1&limit=2', /"limit" must be given at most once/],
    ['status=lost', /"status" must be one of: available, pending, sold/],
    ['status=AVAILABLE', /"status" must be one of/],
    ['status=available&status=sold', /"status"/],
    ['colour=brown', /"colour" is not allowed/],
  ];
  for (const [query, message] of cases) {
    test(`when ${query}, then 400 invalid_request`, async () => {
      await expectError('GET', `/v1/pets?${query}`, {}, 400, 'invalid_request', message);
    });
  }

  test('when limit is 1 or 100, then 200', async () => {
    assert.equal((await app.request('GET', '/v1/pets?limit=1', { key })).status, 200);
    assert.equal((await app.request('GET', '/v1/pets?limit=100', { key })).status, 200);
  });
});

describe('GET /v1/pets/{petId} with a bad id', () => {
  for (const id of ['abc', '0', '-1', '1.5', '9007199254740992', '99999999999999999999999', '1e3', '0x10', '%205', '+5', '007x']) {
    test(`when petId is "${id}", then 400 invalid_request`, async () => {
      await expectError('GET', `/v1/pets/${id}`, {}, 400, 'invalid_request', /petId/);
    });
  }

  test('when petId is well-formed but unknown, then 404 not_found', async () => {
    await expectError('GET', '/v1/pets/123456789', {}, 404, 'not_found', /No pet with id 123456789/);
  });
});
});
