// The README's configuration table is generated from the config schema (scripts/config-table.ts):
// it must be exactly the generated one, so a variable added, renamed or with a new default shows here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { ConfigSchema, loadConfig } from '../src/config.js';
import { envTable, replaceTable, TABLE_END, TABLE_START, tableBetweenMarkers } from '../src/env.js';

describe('configuration table', () => {
  test("when the README's table between the config-table markers is compared with the schema's, then they are equal", () => {
    const readme = readFileSync('README.md', 'utf8');
    const table = tableBetweenMarkers(readme);
    assert.ok(table !== undefined, `README.md has no ${TABLE_START} … ${TABLE_END} markers around its configuration table`);
    assert.equal(table, envTable(ConfigSchema), 'README.md is out of date: run `npx tsx scripts/config-table.ts --write README.md`');
  });

  test('when the table is generated, then it has one row per variable, each with the default the code applies', () => {
    const rows = envTable(ConfigSchema).split('\n').slice(2);
    assert.equal(rows.length, Object.keys(ConfigSchema.properties).length);
    const defaults = loadConfig({});
    assert.ok(rows.includes(`| \`PETSTORE_PG_POOL_MAX\` | \`${defaults.database.pgPoolMax}\` | PostgreSQL connections per process for writes and transactions |`));
    assert.ok(rows.some((row) => row.startsWith(`| \`PETSTORE_WEBHOOK_RETRY_SCHEDULE\` | \`${defaults.webhooks.retrySchedule.join(',')}\` |`)));
    assert.ok(rows.some((row) => row.startsWith('| `PETSTORE_REDIS_URL` | (none: in memory) |')));
  });

  test('when a document is rewritten, then only the text between the markers changes, and a document without them is refused', () => {
    const document = `# Title\n\n${TABLE_START}\nold\n${TABLE_END}\n\nAfter.\n`;
    assert.equal(replaceTable(document, '| new |'), `# Title\n\n${TABLE_START}\n| new |\n${TABLE_END}\n\nAfter.\n`);
    assert.equal(tableBetweenMarkers(replaceTable(document, '| new |')), '| new |');
    assert.throws(() => replaceTable('# No markers\n', '| new |'), /config-table:start/);
  });
});

describe('configuration errors', () => {
  for (const [env, message] of [
    [{ PORT: '70000' }, 'PORT must be an integer from 0 to 65535, got "70000"'],
    [{ PETSTORE_PG_POOL_MAX: '1.5' }, 'PETSTORE_PG_POOL_MAX must be an integer from 1 to 1000, got "1.5"'],
    [{ PETSTORE_READ_CACHE: 'sometimes' }, 'PETSTORE_READ_CACHE must be true or false, got "sometimes"'],
    [{ PETSTORE_ENV: 'dev' }, 'PETSTORE_ENV must be "production" or "staging", got "dev"'],
    [{ PETSTORE_PRODUCTION_URL: 'localhost/v1' }, 'PETSTORE_PRODUCTION_URL must be an absolute URL ending in /v1, got "localhost/v1"'],
    [{ PETSTORE_EXAMPLE_API_URL: 'http://localhost:8080/v1' }, 'PETSTORE_EXAMPLE_API_URL must end in /example/v1 (the version segment), got "http://localhost:8080/v1"'],
    [{ PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0,,5' }, 'PETSTORE_WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of 1 to 50 delays in seconds (0 to 604800 each), got "0,,5"'],
    [{ PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/33' }, 'PETSTORE_WEBHOOK_ALLOWED_NETWORKS: "127.0.0.1/33" has an invalid prefix length; an IPv4 prefix is 0 to 32'],
    [
      { PETSTORE_EVENT_RETENTION_DAYS: '3' }, // the default schedule's attempts span 3.2 days, 3.8 with jitter
      'PETSTORE_EVENT_RETENTION_DAYS=3 is too short for PETSTORE_WEBHOOK_RETRY_SCHEDULE, whose last attempt may come 3.8 days after its event: a delivery still being retried would be pruned with it. Keep events at least 4 days, or shorten the schedule.',
    ],
    [
      { PETSTORE_EVENT_RETENTION_DAYS: '7', PETSTORE_WEBHOOK_RETRY_SCHEDULE: '604800' },
      'PETSTORE_EVENT_RETENTION_DAYS=7 is too short for PETSTORE_WEBHOOK_RETRY_SCHEDULE, whose last attempt may come 8.4 days after its event: a delivery still being retried would be pruned with it. Keep events at least 9 days, or shorten the schedule.',
    ],
  ] as const) {
    test(`when ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')}, then loading fails naming the variable`, () => {
      assert.throws(() => loadConfig(env), (error: Error) => error.name === 'ConfigError' && error.message === message);
    });
  }

  test('when events are kept longer than the retry schedule lasts, then the configuration loads (1 day with a schedule of hours)', () => {
    assert.equal(loadConfig({ PETSTORE_EVENT_RETENTION_DAYS: '4' }).events.retentionDays, 4);
    assert.equal(loadConfig({ PETSTORE_EVENT_RETENTION_DAYS: '1', PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0,60,3600' }).events.retentionDays, 1);
  });

  test('when values are given, then they arrive typed in their slices, final (networks parsed, URLs without a trailing slash)', () => {
    const config = loadConfig({
      PORT: '9000',
      PETSTORE_READ_CACHE: 'off',
      PETSTORE_WEBHOOK_RETRY_SCHEDULE: ' 1, 2 ',
      PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32, ::1/128',
      PETSTORE_STAGING_URL: 'https://staging.example/v1/',
      PETSTORE_MESSAGE_WORKER: 'no',
    });
    assert.equal(config.http.port, 9000);
    assert.equal(config.database.readCache, false);
    assert.deepEqual(config.webhooks.retrySchedule, [1, 2]);
    assert.deepEqual(config.webhooks.allowedNetworks.entries, ['127.0.0.1/32', '::1/128']);
    assert.equal(config.webhooks.allowedNetworks.includes('127.0.0.1'), true);
    assert.equal(config.docs.stagingUrl, 'https://staging.example/v1');
    assert.equal(config.docs.productionUrl, 'http://localhost:9000/v1', 'the published URL follows PORT');
    assert.equal(config.workers.messages, false);
    assert.equal(config.workers.port, 9465);
  });
});
