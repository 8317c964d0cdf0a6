// Which PostgreSQL driver setup, for the service's hot read: a getPet-shaped query from 50
// concurrent callers, 3 s per setup, two rounds: queries/s, this process's CPU and the
// PostgreSQL backends' CPU per query. On a scratch database, dropped after.
//   node bench/pg-drivers.mjs
// postgres.js and pg-native are not dependencies: `npm install --no-save postgres@3.4.9 pg-native`
// (pg-native needs libpq-dev) to include them; setups whose package is missing are skipped.
import fs from 'node:fs';
import pg from 'pg';
const postgres = await import('postgres').then((m) => m.default, () => undefined);
const native = (() => { try { return pg.native; } catch { return undefined; } })();
const admin = process.env.PETSTORE_BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const db = `drv_${process.pid}`;
const a = new pg.Client(admin); await a.connect(); await a.query(`CREATE DATABASE ${db}`); await a.end();
const target = new URL(admin); target.pathname = `/${db}`; const url = target.toString();
const s = new pg.Client(url); await s.connect();
await s.query(`CREATE TABLE pets (account_id text COLLATE "C", id bigint, name text, category_id bigint, status text, PRIMARY KEY (account_id, id))`);
await s.query(`INSERT INTO pets SELECT 'acc_1', g, 'Rex ' || g, g % 25, 'available' FROM generate_series(1, 100000) g`);
await s.query('VACUUM ANALYZE pets');
const ticks = 100;
const cpuOf = (pid) => { try { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8'); const x = f.slice(f.lastIndexOf(')') + 2).split(' '); return (Number(x[11]) + Number(x[12])) / ticks; } catch { return NaN; } };
const backends = async () => (await s.query('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db])).rows.map((r) => r.pid);
const TEXT = 'SELECT id, name, category_id, status FROM pets WHERE account_id = $1 AND id = $2';

function pipelined(n) {
  const lanes = Array.from({ length: n }, () => { const c = new pg.Client({ connectionString: url, pipeline: true }); c.connect(); return c; });
  let i = 0, cur;
  return { q: (id) => { if (!cur) { cur = lanes[i++ % n]; const st = cur.connection.stream; st.cork(); const l = cur; setImmediate(() => { cur = undefined; l.connection.stream.uncork(); }); } return cur.query({ name: 'g', text: TEXT, values: ['acc_1', id] }).then((r) => r.rows); }, end: () => Promise.all(lanes.map((c) => c.end())) };
}
const setups = {
  'pg Pool(10), unnamed': () => { const p = new pg.Pool({ connectionString: url, max: 10 }); return { q: (id) => p.query(TEXT, ['acc_1', id]).then((r) => r.rows), end: () => p.end() }; },
  'pg Pool(10), named': () => { const p = new pg.Pool({ connectionString: url, max: 10 }); return { q: (id) => p.query({ name: 'g', text: TEXT, values: ['acc_1', id] }).then((r) => r.rows), end: () => p.end() }; },
  'pg pipeline mode, 1 conn, cork per turn (ours)': () => pipelined(1),
  'pg pipeline mode, 2 conns, cork per turn': () => pipelined(2),
  'pg-native Pool(10), named': native && (() => { const p = new pg.native.Pool({ connectionString: url, max: 10 }); return { q: (id) => p.query({ name: 'g', text: TEXT, values: ['acc_1', id] }).then((r) => r.rows), end: () => p.end() }; }),
  'postgres.js max 1': postgres && (() => { const sql = postgres(url, { max: 1 }); return { q: (id) => sql`SELECT id, name, category_id, status FROM pets WHERE account_id = ${'acc_1'} AND id = ${id}`, end: () => sql.end() }; }),
  'postgres.js max 10': postgres && (() => { const sql = postgres(url, { max: 10 }); return { q: (id) => sql`SELECT id, name, category_id, status FROM pets WHERE account_id = ${'acc_1'} AND id = ${id}`, end: () => sql.end() }; }),
};
for (let round = 0; round < 2; round++) for (const [name, make] of Object.entries(setups)) {
  if (!make) { if (round === 0) console.log(`${name.padEnd(48)} skipped: package not installed`); continue; }
  const d = make();
  // warm-up
  await Promise.all(Array.from({ length: 50 }, async () => { for (let k = 0; k < 40; k++) await d.q(1 + Math.floor(Math.random() * 100000)); }));
  const pids = await backends();
  const pg0 = pids.map(cpuOf); const c0 = process.cpuUsage(); const t0 = performance.now();
  let n = 0; const until = t0 + 3000;
  await Promise.all(Array.from({ length: 50 }, async () => { while (performance.now() < until) { const rows = await d.q(1 + Math.floor(Math.random() * 100000)); if (rows.length !== 1) throw new Error('bad'); n++; } }));
  const ms = performance.now() - t0; const c = process.cpuUsage(c0); const pgc = pids.map(cpuOf).reduce((s, v, i) => s + (v - pg0[i]), 0);
  console.log(`${name.padEnd(48)} ${Math.round(n / ms * 1000).toString().padStart(6)} q/s  client ${((c.user + c.system) / n).toFixed(1).padStart(5)} µs/q  PostgreSQL ${(pgc * 1e6 / n).toFixed(1).padStart(5)} µs/q`);
  await d.end();
}
await s.end();
const z = new pg.Client(admin); await z.connect(); await z.query(`DROP DATABASE ${db} WITH (FORCE)`); await z.end();
