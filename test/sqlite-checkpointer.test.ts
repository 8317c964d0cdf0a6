// A server's SQLite store checkpoints its WAL from a thread (src/store/sqlite/checkpointer.ts):
// committed pages reach the database file without a commit having to copy them.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createSqliteStore } from '../src/store/sqlite/index.js';
import { createPet } from './helpers/store.js';

async function writePets(checkpointThread: boolean, t: import('node:test').TestContext) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'petstore-checkpointer-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'petstore.db');
  const store = createSqliteStore(file, { checkpointThread });
  await store.migrate();
  await store.db.run('PRAGMA wal_checkpoint(TRUNCATE)');
  const before = fs.statSync(file).size;
  const account = await store.accounts.create({ id: 'acct_checkpoints', name: 'Checkpoints', createdAt: new Date().toISOString() });
  // 100 commits of a long name each: a few hundred pages, under SQLite's own 1 000-page threshold.
  for (let i = 0; i < 100; i++) await createPet(store, account.id, { name: `Pet ${i} ${'x'.repeat(90)}`, categoryId: 1 }, new Date().toISOString());
  return { store, file, before };
}

const grown = async (file: string, before: number, withinMs: number) => {
  for (const end = Date.now() + withinMs; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    if (fs.statSync(file).size > before) return true;
  }
  return false;
};

test('when a server store commits, then the checkpoint thread copies the pages into the database file within a second', async (t) => {
  const { store, file, before } = await writePets(true, t);
  try {
    assert.ok(await grown(file, before, 2_000), 'the database file grew: pages were checkpointed');
    const pets = await store.pets.list({ accountId: 'acct_checkpoints', limit: 500 });
    assert.equal(pets.length, 100);
  } finally {
    await store.close();
  }
});

test('when a store without the thread commits as much, then nothing is checkpointed before the WAL reaches its threshold', async (t) => {
  const { store, file, before } = await writePets(false, t);
  try {
    assert.equal(await grown(file, before, 500), false, 'no checkpoint ran: the thread is what copied the pages above');
  } finally {
    await store.close();
  }
});
