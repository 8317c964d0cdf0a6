import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixedClock } from '../../src/clock.js';
import { GET_PET_SUNSET_AT } from '../../src/http/deprecation.js';
import { startApp } from '../helpers/app.js';

const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';

function assertDeprecationHeaders(headers: Headers) {
  assert.match(headers.get('deprecation') ?? '', /^@\d+$/);
  const deprecatedAt = Number((headers.get('deprecation') ?? '@0').slice(1)) * 1000;
  assert.equal(headers.get('sunset'), SUNSET);
  assert.ok(deprecatedAt <= Date.parse(SUNSET), 'deprecation is not after the sunset');
  assert.match(headers.get('link') ?? '', /<\/v1\/pets>; rel="successor-version"/);
  assert.match(headers.get('link') ?? '', /rel="deprecation"/);
}

test('when GET /v1/pets/{petId} answers 200, 404, 400 or 401, then every response carries Deprecation, Sunset and Link', async (t) => {
  const app = await startApp(t);
  const { key } = await app.createAccount();
  const pet = (await app.request('POST', '/v1/pets', { key, body: { name: 'Old', categoryId: 1 } })).body as { id: number };
  for (const [path, k, status] of [
    [`/v1/pets/${pet.id}`, key, 200],
    ['/v1/pets/999999', key, 404],
    ['/v1/pets/abc', key, 400],
    [`/v1/pets/${pet.id}`, undefined, 401],
  ] as const) {
    const res = await app.request('GET', path, { key: k });
    assert.equal(res.status, status);
    assertDeprecationHeaders(res.headers);
  }
});

test('when the list and create operations answer, then they carry no Deprecation header', async (t) => {
  const app = await startApp(t);
  const { key } = await app.createAccount();
  assert.equal((await app.request('GET', '/v1/pets', { key })).headers.get('deprecation'), null);
});

test('when the deprecation link is followed, then it explains the replacement', async (t) => {
  const app = await startApp(t);
  const res = await fetch(`${app.url}/docs/deprecations`);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /GET \/v1\/pets<\/code> with the <code>status<\/code> filter/);
});

test('when the clock reaches the sunset instant, then GET /v1/pets/{petId} answers 410 gone, and one millisecond before it still works', async (t) => {
  const clock = fixedClock(GET_PET_SUNSET_AT - 1);
  const app = await startApp(t, { clock });
  const { key } = await app.createAccount();
  const pet = (await app.request('POST', '/v1/pets', { key, body: { name: 'Old', categoryId: 1 } })).body as { id: number };
  assert.equal((await app.request('GET', `/v1/pets/${pet.id}`, { key })).status, 200);
  clock.set(GET_PET_SUNSET_AT);
  const gone = await app.request('GET', `/v1/pets/${pet.id}`, { key });
  assert.equal(gone.status, 410);
  assert.equal((gone.body as { code: string }).code, 'gone');
  assertDeprecationHeaders(gone.headers);
  assert.equal((await app.request('GET', '/v1/pets', { key })).status, 200, 'the successor keeps working');
});
