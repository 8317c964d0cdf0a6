// `petstore` operator CLI. Uses the same config, store and services as the server.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { systemClock } from '../clock.js';
import { ConfigError, loadConfig, type Environment } from '../config.js';
import { ApiError } from '../errors.js';
import { DatabaseWaitError } from '../store/errors.js';
import { SCOPES } from '../schemas/api-keys.js';
import type { Services } from '../services/index.js';
import type { KeyCommandOptions } from './keys.js';
import { SECRETS_HELP, type SecretsCommand } from './secrets.js';
import { CommandError, MAX_WORKERS, UsageError } from './usage.js';
// Each command imports what it runs when it runs: a usage error or `keys list` does not load
// the HTTP server, and every test that spawns the CLI starts faster.

const HELP: Record<string, string> = {
  ...SECRETS_HELP,
  root: `Usage: petstore <command> [options]

Commands:
  serve [--workers <n>]          Run the HTTP server (what \`npm start\` runs)
  worker                         Run only the background workers (no API)
  migrate                        Apply pending database migrations
  accounts create --name <name>  Create an account
  keys create --account <id>     Create an API key (the secret is shown once)
  keys list --account <id>       List an account's keys (never shows secrets)
  keys roll <keyId>              Replace a key; the old one works for a while
  keys revoke <keyId>            Revoke a key
  secrets seal                   Seal webhook signing secrets stored in plain text
  secrets rotate-key             Re-seal them under a new key (PETSTORE_SECRET_KEY)
  listen --api-key <key> --forward-to <url>   Forward your events to a local URL, signed
  mcp --api-key <key> [--base-url <url>]      The API as MCP tools over stdio (AI agents)

Every command but listen reads PETSTORE_DATABASE_URL (default ./data/petstore.db) and PETSTORE_ENV.
Run \`petstore <command> --help\` for a command's options.`,
  serve: `Usage: petstore serve [--workers <n>]

Runs the server on HOST:PORT (default 127.0.0.1:8080). Applies pending migrations
first unless PETSTORE_MIGRATE_ON_START=false. A database that takes no connection
yet is retried for up to PETSTORE_DATABASE_WAIT_MS (default 30 s), then it exits 1.

Options:
  --workers <n>  Run n worker processes (1-${MAX_WORKERS}) sharing HOST:PORT (node:cluster).
                 The primary applies migrations once, then starts the workers and
                 restarts any that dies (after a growing delay). SIGTERM or SIGINT
                 stops every worker gracefully; the exit code is 0 once all have.
                 Each worker has its own PostgreSQL pool (PETSTORE_PG_POOL_MAX) and,
                 without PETSTORE_REDIS_URL, its own rate-limit buckets.
                 Default 1: a single process, no cluster.`,
  worker: `Usage: petstore worker

Runs the background workers without the API: message delivery (PETSTORE_MESSAGE_WORKER)
and webhook delivery (PETSTORE_WEBHOOK_WORKER), plus the hourly pruning of expired
idempotency keys and old events. Applies pending migrations first unless
PETSTORE_MIGRATE_ON_START=false. Waits for the database like \`serve\`.

Serves /metrics, /healthz and /readyz on HOST:PETSTORE_WORKER_PORT (default 9465).
SIGTERM or SIGINT finishes the deliveries in hand, then exits 0.

Pair it with \`petstore serve\` run with PETSTORE_MESSAGE_WORKER=false and
PETSTORE_WEBHOOK_WORKER=false; any number of workers can share one database.`,
  migrate: `Usage: petstore migrate [--json]

Applies pending migrations to PETSTORE_DATABASE_URL and prints what it applied.
Waits for the database like \`serve\` (PETSTORE_DATABASE_WAIT_MS).`,
  'accounts create': `Usage: petstore accounts create --name <name> [--json]

Creates an account and prints its id. With --json, prints {"id","name","createdAt"}.`,
  'keys create': `Usage: petstore keys create --account <accountId> [--env production|staging]
                           [--scopes <scope,…>] [--expires-in <30d>] [--name <name>] [--json]

Creates an API key for the account. The secret is printed once and never stored;
keep it safe. --env defaults to PETSTORE_ENV (production).
  --scopes      restrict the key, e.g. pets:read,orders:read (default: full access);
                scopes: ${SCOPES.join(', ')}
  --expires-in  the key stops working after this long: 45s, 90m, 12h, 30d, 2w (at most a year)
  --name        a label shown in listings
With --json, prints {"id","key","accountId","name","scopes","environment","hint","createdAt","expiresAt",…}.
The audit log (GET /v1/audit-log) records it with actor "cli".`,
  'keys list': `Usage: petstore keys list --account <accountId> [--json]

Lists the account's keys with their hint, name, scopes, expiry and last use
(to within a minute). Secrets are never shown.`,
  'keys roll': `Usage: petstore keys roll <keyId> [--expires-in <24h>] [--json]

Creates a key with the same name, scopes and expiry, prints its secret once, and
makes the old key stop working after --expires-in (default 24h, 0 at once, at most 7d).`,
  listen: `Usage: petstore listen --api-key <key> --forward-to <url> [--base-url <url>]
                      [--events <type,…>] [--secret <whsec_…>] [--after <sequence>]

Follows your account's events (GET /v1/events/stream) and POSTs each to --forward-to,
signed exactly like a real webhook delivery (Standard Webhooks headers), printing one
line per event with the receiver's status and time. Needs only the API over HTTP.
  --base-url    the API, ending in /v1 (default http://127.0.0.1:8080/v1)
  --events      only these kinds, e.g. pet.created,order.placed
  --secret      the signing secret (default: a new whsec_ one, printed at start)
  --after       start after this event sequence (default: with the next event)
A lost connection is reopened after the last event forwarded: none is skipped.
Ctrl-C stops it.`,
  mcp: `Usage: petstore mcp --api-key <key> [--base-url <url>]

Serves the API as Model Context Protocol tools over stdio (one tool per operation of the
server's OpenAPI documents), for desktop MCP clients. Calls the API over HTTP with the key.
  --base-url    the API, ending in /v1 (default http://127.0.0.1:8080/v1)`,
  'keys revoke': `Usage: petstore keys revoke <keyId> [--json]

Revokes the key. Requests with it are refused from then on.`,
};

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean' },
  name: { type: 'string' },
  account: { type: 'string' },
  env: { type: 'string' },
  workers: { type: 'string' },
  scopes: { type: 'string' },
  'expires-in': { type: 'string' },
  'api-key': { type: 'string' },
  'base-url': { type: 'string' },
  'forward-to': { type: 'string' },
  events: { type: 'string' },
  secret: { type: 'string' },
  after: { type: 'string' },
} satisfies ParseArgsConfig['options'];

function print(json: boolean, value: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

async function withServices<T>(run: (services: Services) => Promise<T>): Promise<T> {
  const [{ createStore }, { createServices }] = await Promise.all([import('../store/index.js'), import('../services/index.js')]);
  const config = loadConfig();
  const store = await createStore(config);
  try {
    await store.migrate();
    return await run(await createServices({ store, clock: systemClock, environment: config.environment }));
  } finally {
    await store.close();
  }
}

/** The --workers value: an integer from 1 to MAX_WORKERS (1 when absent). */
function parseWorkers(raw: string | undefined): number {
  if (raw === undefined) return 1;
  const workers = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(workers >= 1 && workers <= MAX_WORKERS)) {
    throw new UsageError(`--workers must be an integer from 1 to ${MAX_WORKERS}, got "${raw}".\n\n${HELP.serve}`);
  }
  return workers;
}

function required(value: string | undefined, flag: string, command: string): string {
  if (!value) throw new UsageError(`${flag} is required.\n\n${HELP[command]}`);
  return value;
}

/** `petstore listen` until Ctrl-C or SIGTERM. */
async function runListen(values: { [K in 'api-key' | 'base-url' | 'forward-to' | 'events' | 'secret' | 'after']?: string | undefined }): Promise<void> {
  const after = values.after;
  if (after !== undefined && !/^[0-9]{1,15}$/.test(after)) throw new UsageError(`--after must be an event sequence (a non-negative integer), got "${after}".`);
  const { listen } = await import('./listen.js');
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  await listen({
    apiKey: required(values['api-key'], '--api-key', 'listen'),
    baseUrl: values['base-url'] ?? 'http://127.0.0.1:8080/v1',
    forwardTo: required(values['forward-to'], '--forward-to', 'listen'),
    events: values.events,
    secret: values.secret,
    after: after === undefined ? undefined : Number(after),
    out: (line) => process.stdout.write(`${line}\n`),
    signal: controller.signal,
  });
}

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [group, action, ...rest] = positionals;
  const command = group === 'accounts' || group === 'keys' || group === 'secrets' ? `${group} ${action ?? ''}`.trim() : (group ?? 'root');
  const json = values.json === true;

  if (values.help || command === 'root') {
    const help = HELP[command] ?? HELP[group ?? 'root'] ?? HELP.root;
    process.stdout.write(`${help}\n`);
    return values.help ? 0 : 1;
  }

  if (values.workers !== undefined && command !== 'serve') {
    throw new UsageError(`--workers is an option of \`petstore serve\` only.`);
  }

  switch (command) {
    case 'serve': {
      const workers = parseWorkers(values.workers);
      const config = loadConfig();
      const [{ isClusterWorker, runPrimary, runWorker }, { startServer }, { isPostgresUrl }, { sqlitePath }] = await Promise.all([
        import('../cluster.js'), import('../server.js'), import('../store/index.js'), import('../store/sqlite/index.js'),
      ]);
      if (isClusterWorker()) {
        await runWorker(config);
      } else if (workers > 1) {
        if (!isPostgresUrl(config.database.url) && sqlitePath(config.database.url) === ':memory:') {
          throw new UsageError('--workers needs a database the workers can share; an in-memory SQLite database would be one per worker.');
        }
        await runPrimary(config, workers);
      } else {
        await startServer(config);
      }
      return -1; // keep running
    }
    case 'mcp': {
      const { runMcpStdio } = await import('./mcp.js');
      await runMcpStdio(required(values['api-key'], '--api-key', 'mcp'), values['base-url'] ?? 'http://127.0.0.1:8080/v1');
      return 0;
    }
    case 'listen':
      await runListen(values);
      return 0;
    case 'worker': {
      const { startWorkerProcess } = await import('../worker.js');
      await startWorkerProcess(loadConfig());
      return -1; // keep running
    }
    case 'migrate': {
      const { openStoreWhenReachable, printedWait } = await import('../store/wait.js');
      const config = loadConfig();
      const store = await openStoreWhenReachable(config, {}, printedWait((line) => process.stderr.write(line), config.database.url));
      try {
        const applied = await store.migrate();
        print(json, { applied }, applied.length ? `Applied migrations: ${applied.join(', ')}` : 'No pending migrations.');
      } finally {
        await store.close();
      }
      return 0;
    }
    case 'accounts create': {
      const name = required(values.name, '--name', command);
      const account = await withServices((s) => s.accounts.create(name));
      print(json, account, `Created account ${account.id} (${account.name}).\nNext: petstore keys create --account ${account.id}`);
      return 0;
    }
    case 'keys create':
    case 'keys list':
    case 'keys roll':
    case 'keys revoke': {
      const env = values.env;
      if (env !== undefined && env !== 'production' && env !== 'staging') {
        throw new UsageError('--env must be "production" or "staging".');
      }
      const keyCommand = command as 'keys create' | 'keys list' | 'keys roll' | 'keys revoke';
      const byId = keyCommand === 'keys roll' || keyCommand === 'keys revoke';
      const options: KeyCommandOptions = {
        account: byId ? undefined : required(values.account, '--account', command),
        keyId: byId ? required(rest[0] ?? positionals[2], '<keyId>', command) : undefined,
        env: env as Environment | undefined,
        scopes: values.scopes,
        expiresIn: values['expires-in'],
        name: values.name,
      };
      const { runKeyCommand } = await import('./keys.js');
      const { value, text } = await withServices((s) => runKeyCommand(s, keyCommand, options, systemClock.now()));
      print(json, value, text);
      return 0;
    }
    case 'secrets seal':
    case 'secrets rotate-key': {
      const { runSecretsCommand } = await import('./secrets.js');
      const { value, text, code } = await runSecretsCommand(command as SecretsCommand, loadConfig());
      print(json, value, text);
      return code;
    }
    default:
      throw new UsageError(`Unknown command "${positionals.join(' ')}".\n\n${HELP.root}`);
  }
}

export async function run(argv: string[]): Promise<void> {
  try {
    const code = await main(argv);
    if (code >= 0) process.exitCode = code;
  } catch (err) {
    const message =
      err instanceof UsageError || err instanceof CommandError || err instanceof ConfigError || err instanceof ApiError || err instanceof DatabaseWaitError
        ? err.message
        : err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS')
          ? `${err.message}\n\nRun \`petstore --help\` for usage.`
          : `Unexpected error: ${err instanceof Error ? err.message : String(err)}`;
    process.stderr.write(`petstore: ${message}\n`);
    process.exitCode = err instanceof UsageError || (err instanceof TypeError && 'code' in err) ? 2 : 1;
  }
}
