import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createCursorCodec } from '../src/services/cursor.js';
import { PET_STATUSES } from '../src/schemas/index.js';

test('when a cursor has verified for one account, then it still fails for another account or another status filter', () => {
  const codec = createCursorCodec('secret-for-this-test', PET_STATUSES);
  const cursor = codec.encode('acct_a', { afterId: 42, status: undefined });
  assert.equal(codec.decode('acct_a', cursor, undefined), 42);
  assert.equal(codec.decode('acct_a', cursor, undefined), 42, 'the second time, from the verified set');
  assert.throws(() => codec.decode('acct_b', cursor, undefined), { code: 'invalid_cursor' });
  assert.throws(() => codec.decode('acct_a', cursor, 'sold'), { code: 'invalid_cursor' });
  const edited = `${cursor.slice(0, -2)}${cursor.at(-2) === 'A' ? 'B' : 'A'}${cursor.at(-1)}`;
  assert.throws(() => codec.decode('acct_a', edited, undefined), { code: 'invalid_cursor' });
});

test('when more cursors are verified than are remembered, then the earliest still verify', () => {
  const codec = createCursorCodec('secret-for-this-test', PET_STATUSES);
  const cursors = Array.from({ length: 5000 }, (_, i) => codec.encode('acct_a', { afterId: i + 1, status: 'available' }));
  cursors.forEach((c, i) => assert.equal(codec.decode('acct_a', c, 'available'), i + 1));
  assert.equal(codec.decode('acct_a', cursors[0]!, 'available'), 1, 'evicted from the set, verified again');
});
