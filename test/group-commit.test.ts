// The group commit's scheduling, with a writer we control: one batch's transaction at a time,
// and with `overlap` the next batch starting before the previous batch's callers hear back.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createGroupCommit } from '../src/store/core/group-commit.js';
import { StoreUnavailableError } from '../src/store/errors.js';

/** A writer whose batches finish when the test says so (batch n fails as the database being away when `away(n)`); it logs what happens in order. */
function controlledWriter(log: string[], away: (batch: number) => boolean = () => false) {
  const open: Array<() => void> = [];
  let writing = 0;
  let batches = 0;
  return {
    open,
    writeBatch: async (items: readonly number[]) => {
      const n = ++batches;
      writing++;
      assert.equal(writing, 1, 'two batches were written at once');
      log.push(`write ${n} [${items.join(',')}]`);
      await new Promise<void>((resolve) => open.push(resolve));
      writing--;
      if (away(n)) {
        log.push(`refused ${n}`);
        throw new StoreUnavailableError('PostgreSQL is unavailable');
      }
      log.push(`committed ${n}`);
      return items.map((item) => item * 10);
    },
    writeOne: async (item: number) => item * 10,
  };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function twoBatches(overlap: boolean, away?: (batch: number) => boolean) {
  const log: string[] = [];
  const writer = controlledWriter(log, away);
  const commits = createGroupCommit<number, number>({ max: 10, overlap, writeBatch: writer.writeBatch, writeOne: writer.writeOne });
  const answered = (p: Promise<number>) => p.then(
    (value) => log.push(`answer ${value}`),
    (error: Error) => log.push(`error ${error.name}`),
  );
  const first = [answered(commits.submit(1)), answered(commits.submit(2))];
  await turn();
  // Submitted while batch 1 is being written: they wait for the next batch.
  const second = [answered(commits.submit(3))];
  writer.open.shift()!();
  while (writer.open.length === 0) await turn();
  // Batch 2 is being written: batch 1's callers hear back meanwhile (overlap) or have already.
  await turn();
  await turn();
  writer.open.shift()!();
  await commits.drain();
  await Promise.all([...first, ...second]);
  return log;
}

describe('group commit', () => {
  test('when items are submitted in one turn, then one transaction writes them and each caller gets its own result', async () => {
    const log: string[] = [];
    const writer = controlledWriter(log);
    const commits = createGroupCommit<number, number>({ max: 10, writeBatch: writer.writeBatch, writeOne: writer.writeOne });
    const results = Promise.all([commits.submit(1), commits.submit(2), commits.submit(3)]);
    while (writer.open.length === 0) await turn();
    writer.open.shift()!();
    assert.deepEqual(await results, [10, 20, 30]);
    assert.deepEqual(log, ['write 1 [1,2,3]', 'committed 1']);
  });

  test('without overlap, when a batch commits, then its callers hear back before the next batch starts', async () => {
    assert.deepEqual(await twoBatches(false), ['write 1 [1,2]', 'committed 1', 'answer 10', 'answer 20', 'write 2 [3]', 'committed 2', 'answer 30']);
  });

  test('with overlap, when a batch commits, then the next batch starts before its callers hear back, one transaction at a time', async () => {
    assert.deepEqual(await twoBatches(true), ['write 1 [1,2]', 'committed 1', 'write 2 [3]', 'answer 10', 'answer 20', 'committed 2', 'answer 30']);
  });

  test('with overlap, when the database refused a batch for being away, then its callers hear back before the next batch starts', async () => {
    assert.deepEqual(await twoBatches(true, (batch) => batch === 1), [
      'write 1 [1,2]',
      'refused 1',
      'error StoreUnavailableError',
      'error StoreUnavailableError',
      'write 2 [3]',
      'committed 2',
      'answer 30',
    ]);
  });

  test('with overlap, when drain resolves, then every caller has heard back', async () => {
    const log: string[] = [];
    const writer = controlledWriter(log);
    const commits = createGroupCommit<number, number>({ max: 1, overlap: true, writeBatch: writer.writeBatch, writeOne: writer.writeOne });
    let answered = 0;
    for (const item of [1, 2, 3]) void commits.submit(item).then(() => answered++);
    const drained = commits.drain().then(() => answered);
    for (let batch = 0; batch < 3; batch++) {
      while (writer.open.length === 0) await turn();
      writer.open.shift()!();
    }
    assert.equal(await drained, 3);
  });
});
