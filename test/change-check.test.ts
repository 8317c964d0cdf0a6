// The cross-connection change check behind the SQLite read cache and key cache
// (src/store/sqlite/change-check.ts): exact like PRAGMA data_version, but settled by the
// wal-index header when nothing was committed.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { createChangeCheck } from '../src/store/sqlite/change-check.js';

function open(t: TestContext, file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE IF NOT EXISTS t (v INTEGER)');
  t.after(() => db.close());
  return db;
}

/** A WAL database file with two connections: `db`, which the check watches, and `other`. */
function fixture(t: TestContext) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-change-check-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'test.db');
  const db = open(t, file);
  const other = open(t, file);
  const check = createChangeCheck(db, file);
  t.after(() => check.close());
  return { db, other, check };
}

test('when nothing is committed, then the answer stays the same and comes from the header alone', (t) => {
  const { check } = fixture(t);
  const first = check.current();
  for (let i = 0; i < 5; i++) assert.equal(check.current(), first);
  assert.deepEqual(check.stats, { header: 5, pragma: 1 });
});

test('when another connection commits, then the answer changes on the next call', (t) => {
  const { db, other, check } = fixture(t);
  const before = check.current();
  other.prepare('INSERT INTO t (v) VALUES (1)').run();
  const after = check.current();
  assert.notEqual(after, before);
  assert.equal(check.current(), after, 'and stays until the next commit');
  other.prepare('INSERT INTO t (v) VALUES (2)').run();
  assert.notEqual(check.current(), after);
});

test('when this connection commits, then the answer stays the same (data_version ignores own commits), after one look at data_version', (t) => {
  const { db, check } = fixture(t);
  const before = check.current();
  db.prepare('INSERT INTO t (v) VALUES (1)').run();
  assert.equal(check.current(), before);
  assert.equal(check.stats.pragma, 2, 'the header changed, so data_version was asked');
  assert.equal(check.current(), before);
  assert.equal(check.stats.pragma, 2, 'then the new header is known');
});

test('when another connection commits many times, then no commit is missed', (t) => {
  const { db, other, check } = fixture(t);
  let last = check.current();
  for (let i = 0; i < 50; i++) {
    other.prepare('INSERT INTO t (v) VALUES (?)').run(i);
    if (i % 3 === 0) db.prepare('INSERT INTO t (v) VALUES (?)').run(-i);
    const now = check.current();
    assert.notEqual(now, last, `commit ${i}`);
    last = now;
  }
});

test('when the database is in memory, then every call asks data_version', (t) => {
  const db = new Database(':memory:');
  t.after(() => db.close());
  const check = createChangeCheck(db, ':memory:');
  const first = check.current();
  assert.equal(check.current(), first);
  assert.deepEqual(check.stats, { header: 0, pragma: 2 });
});
