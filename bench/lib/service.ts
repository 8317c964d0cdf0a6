// What every bench gives the service it measures: a fresh PostgreSQL database (created on the
// server of PETSTORE_BENCH_POSTGRES_URL and dropped after) and the environment of a production
// service on 127.0.0.1 with the rate limit lifted.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** The admin URL of the bench's PostgreSQL server. */
export const benchAdminUrl = (): string => process.env.PETSTORE_BENCH_POSTGRES_URL || DEFAULT_ADMIN_URL;

/** A fresh database on the server of `adminUrl`, and how to drop it. */
export async function createPostgresDatabase(adminUrl: string): Promise<BenchDatabase> {
  const name = `petstore_bench_${randomBytes(6).toString('hex')}`;
  const quoted = pg.escapeIdentifier(name);
  const adminQuery = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await adminQuery(`CREATE DATABASE ${quoted}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => adminQuery(`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`) };
}

/** The service's environment: only our PETSTORE_* settings (a developer's shell must not change what is measured). */
/** PETSTORE_BENCH_SERVICE_SETTINGS="PETSTORE_FAST_PATH=false,…": settings for the measured service (say, a path off). */
const extraSettings = (): NodeJS.ProcessEnv =>
  Object.fromEntries((process.env.PETSTORE_BENCH_SERVICE_SETTINGS ?? '').split(',').filter((pair) => pair.includes('=')).map((pair) => pair.split('=', 2) as [string, string]));

export function serviceEnv(port: number, databaseUrl: string, settings: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PETSTORE_')));
  return {
    ...baseEnv,
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    PETSTORE_ENV: 'production',
    PETSTORE_DATABASE_URL: databaseUrl,
    PETSTORE_RATE_LIMIT_PER_SECOND: '1000000',
    PETSTORE_RATE_LIMIT_BURST: '1000000',
    ...settings,
    ...extraSettings(),
  };
}
