// Store-level cost of the outbox on SQLite (node --import tsx bench/outbox-micro.ts): createPet
// in group-commit batches of 100, events off, on, and on with one endpoint; CPU per pet.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSqliteStore } from '../src/store/sqlite/index.js';
import { createPet } from '../test/helpers/store.js';

async function run(events: boolean, endpoint: boolean) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'outbox-'));
  const store = createSqliteStore(path.join(dir, 'p.db'), { events });
  await store.migrate();
  await store.accounts.create({ id: 'acct_a', name: 'a', createdAt: new Date().toISOString() });
  if (endpoint) await store.webhooks.createEndpoint('acct_a', { id: 'we_x', url: 'https://example.com', eventMask: -1, description: undefined, secret: 's', createdAt: new Date().toISOString() }, 16);
  const N = 20000;
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < N; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => createPet(store, 'acct_a', { name: `p${i + j}`, categoryId: 1, status: 'available' }, new Date().toISOString())));
  }
  const cpu = process.cpuUsage(cpu0);
  const ms = performance.now() - start;
  console.log(`events=${events} endpoint=${endpoint}: ${(N / ms * 1000).toFixed(0)} pets/s, ${((cpu.user + cpu.system) / N).toFixed(1)} µs CPU/pet`);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
for (let r = 0; r < 2; r++) {
  await run(false, false);
  await run(true, false);
  await run(true, true);
}
