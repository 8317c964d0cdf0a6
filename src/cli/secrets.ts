// `petstore secrets seal` and `petstore secrets rotate-key`: webhook signing secrets brought
// under the current sealing key, online (servers keep delivering meanwhile).
import type { Config } from '../config.js';
import { UsageError } from './usage.js';

export type SecretsCommand = 'secrets seal' | 'secrets rotate-key';

export class SecretsUsageError extends UsageError {}

export const SECRETS_HELP = {
  'secrets seal': `Usage: petstore secrets seal [--json]

Seals every webhook signing secret stored in plain text (rows written before sealing, or on
PostgreSQL while PETSTORE_SECRET_KEY was unset) under the current key: PETSTORE_SECRET_KEY, or on
SQLite without it the key file beside the database. Safe while servers run, and to run again.
Servers must have the same key before (restart them with PETSTORE_SECRET_KEY first).`,
  'secrets rotate-key': `Usage: petstore secrets rotate-key [--json]

Re-seals every webhook signing secret under PETSTORE_SECRET_KEY (the new key), opening those
sealed under PETSTORE_SECRET_KEY_PREVIOUS (the old one). Safe while servers run: give every
server both keys first, run this, then drop PETSTORE_SECRET_KEY_PREVIOUS (docs/operations.md).
Exits 1 if some secret opens with neither key (their endpoints' deliveries fail until fixed).`,
};

export async function runSecretsCommand(command: SecretsCommand, config: Config): Promise<{ value: unknown; text: string; code: number }> {
  if (command === 'secrets rotate-key' && !config.secrets.key) {
    throw new SecretsUsageError('rotate-key re-seals under PETSTORE_SECRET_KEY: set it to the new key, and PETSTORE_SECRET_KEY_PREVIOUS to the key in use (on SQLite without a key set: the content of the database\'s .secret-key file).');
  }
  const { createStore } = await import('../store/index.js'); // loaded by the command, not by `petstore --help`
  const store = await createStore(config);
  try {
    await store.migrate();
    if (command === 'secrets seal' && store.secretsWarning) throw new SecretsUsageError(`Nothing to seal with. ${store.secretsWarning}`);
    const report = await store.webhooks.resealSecrets(command === 'secrets seal' ? 'plain' : 'other-keys');
    const lines = [`${command === 'secrets seal' ? 'Sealed' : 'Re-sealed'} the secrets of ${report.resealed} webhook endpoint(s).`];
    // The replaced values must not stay readable in SQLite's free pages or WAL.
    const compacted = store.compact ? await store.compact() : true;
    if (!compacted) lines.push('The SQLite WAL could not be emptied (a reader held it), so replaced values may remain in it: run this command again.');
    if (report.unopenable.length > 0) {
      lines.push(`${report.unopenable.length} endpoint(s) have secrets no key given opens (left as they are): ${report.unopenable.join(', ')}. Set PETSTORE_SECRET_KEY_PREVIOUS to the key they were sealed under and run this again.`);
    }
    return { value: { ...report, compacted }, text: lines.join('\n'), code: report.unopenable.length > 0 || !compacted ? 1 : 0 };
  } finally {
    await store.close();
  }
}
