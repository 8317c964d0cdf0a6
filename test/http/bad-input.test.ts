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

describe('unknown query parameters on operations that declare none', () => {
  // Every /v1 and /example/v1 operation refuses query parameters it does not declare, before it
  // does anything: each request below succeeds without its parameter (the second test).
  type Ids = { petId: number; sparePetId: number; orderId: number; messageId: string };
  const casesFor = ({ petId, sparePetId, orderId, messageId }: Ids): Array<{ method: string; path: string; name: string; body?: unknown }> => [
    { method: 'POST', path: '/v1/pets', name: 'dryRun', body: { name: 'Rex', categoryId: 1 } },
    { method: 'PATCH', path: `/v1/pets/${petId}`, name: 'dryRun', body: { name: 'Renamed' } },
    { method: 'DELETE', path: `/v1/pets/${petId}`, name: 'dryRun' },
    { method: 'GET', path: `/v1/pets/${petId}`, name: 'fields' },
    { method: 'GET', path: '/v1/store/inventory', name: 'status' },
    { method: 'PUT', path: '/v1/categories/41', name: 'upsert', body: { name: 'Query dogs' } },
    { method: 'GET', path: '/v1/categories/1', name: 'fields' },
    { method: 'DELETE', path: '/v1/categories/1', name: 'force' },
    { method: 'POST', path: '/v1/store/orders', name: 'dryRun', body: { petId: sparePetId } },
    { method: 'GET', path: `/v1/store/orders/${orderId}`, name: 'expand' },
    { method: 'POST', path: `/v1/store/orders/${orderId}/cancel`, name: 'reason' },
    { method: 'POST', path: '/example/v1/messages', name: 'priority', body: { message: 'Hello' } },
    { method: 'GET', path: `/example/v1/messages/${messageId}`, name: 'fields' },
  ];
  let ids: Ids;
  const snapshot = async () => {
    const read = async (path: string) => (await app.request('GET', path, { key })).body;
    const lists = await Promise.all(['/v1/pets', '/v1/store/orders', '/v1/categories'].map((list) => read(`${list}?limit=100`)));
    // Messages by id only: the worker moves their status meanwhile.
    const messages = (await read('/example/v1/messages?limit=100')) as Array<{ id: string }>;
    return [...lists, messages.map((message) => message.id)];
  };

  before(async () => {
    const pet = await app.request('POST', '/v1/pets', { key, body: { name: 'Query', categoryId: 1, status: 'available' } });
    const ordered = await app.request('POST', '/v1/pets', { key, body: { name: 'Ordered', categoryId: 1, status: 'available' } });
    const order = await app.request('POST', '/v1/store/orders', { key, body: { petId: (ordered.body as { id: number }).id } });
    const spare = await app.request('POST', '/v1/pets', { key, body: { name: 'Spare', categoryId: 1, status: 'available' } });
    const message = await app.request('POST', '/example/v1/messages', { key, body: { message: 'Hi' } });
    const idOf = (res: { body: unknown }) => (res.body as { id: number }).id;
    ids = { petId: idOf(pet), sparePetId: idOf(spare), orderId: idOf(order), messageId: (message.body as { id: string }).id };
  });

  test('when an operation that takes no query parameters gets one, then 400 invalid_request naming it, and nothing changes', async () => {
    const before = await snapshot();
    for (const { method, path, name, body } of casesFor(ids)) {
      await expectError(method, `${path}?${name}=true`, { body }, 400, 'invalid_request', new RegExp(`^Query parameter "${name}" is not allowed: this operation takes no query parameters`));
    }
    assert.deepEqual(await snapshot(), before);
  });

  test('when the same requests come without the parameter, then they are answered as usual (2xx)', async () => {
    for (const { method, path, body } of casesFor(ids).filter((c) => c.method !== 'DELETE')) {
      const res = await app.request(method, path, { key, body });
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
    }
    assert.equal((await app.request('DELETE', '/v1/categories/41', { key })).status, 204);
    assert.equal((await app.request('DELETE', `/v1/pets/${ids.petId}`, { key })).status, 204);
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
