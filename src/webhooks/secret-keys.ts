// Where the sealing key comes from: PETSTORE_SECRET_KEY; else, on SQLite, a key file beside the
// database file, made with mode 0600 on first start (so `npm start` needs nothing); else none
// (PostgreSQL without the variable: secrets stay plain text, with a warning at start and on
// /readyz). PETSTORE_SECRET_KEY_PREVIOUS only opens: the key a rotation moves away from.
import fs from 'node:fs';
import path from 'node:path';
import { createSecretBox, newSecretKey, type SecretBox, type SecretKey, secretKeyFrom } from './secret-box.js';

export interface SecretsConfig {
  key: SecretKey | undefined;
  previousKey: SecretKey | undefined;
}

export interface Sealing {
  box: SecretBox;
  /** Where the sealing key came from; 'none': new secrets are stored plain. */
  source: 'environment' | 'key file' | 'memory' | 'none';
  /** Said at start (a warning) and on /readyz while secrets are stored plain. */
  warning: string | undefined;
}

export const PLAIN_TEXT_WARNING =
  'Webhook signing secrets are stored in plain text: set PETSTORE_SECRET_KEY (32 random bytes, base64: `openssl rand -base64 32`), ' +
  'restart, then run `petstore secrets seal`.';

/** The key file of a SQLite database file. */
export const keyFileOf = (databaseFile: string): string => `${databaseFile}.secret-key`;

/** Reads the key file, or makes it (0600) when there is none; another process making it at the same time wins alike. */
export function keyFromFile(file: string): SecretKey {
  try {
    return parsedKeyFile(file, fs.readFileSync(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  // Written whole under another name, then linked: a reader never sees a half-written file, and
  // link fails if another process linked first (then its key is the key).
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  fs.writeFileSync(temporary, `${newSecretKey()}\n`, { mode: 0o600, flag: 'wx' });
  try {
    fs.chmodSync(temporary, 0o600);
    fs.linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    fs.rmSync(temporary, { force: true });
  }
  return parsedKeyFile(file, fs.readFileSync(file, 'utf8'));
}

function parsedKeyFile(file: string, text: string): SecretKey {
  const key = secretKeyFrom(text);
  if (!key) throw new Error(`${file} does not hold a sealing key (32 bytes, base64). Restore it from a backup, or set PETSTORE_SECRET_KEY.`);
  return key;
}

/** The sealing of a store: `databaseFile` is the SQLite file (':memory:' keeps a key in memory), undefined on PostgreSQL. */
export function sealingFor(secrets: SecretsConfig | undefined, databaseFile: string | undefined): Sealing {
  const previous = secrets?.previousKey;
  if (secrets?.key) return { box: createSecretBox(secrets.key, previous), source: 'environment', warning: undefined };
  if (databaseFile === ':memory:') return { box: createSecretBox(secretKeyFrom(newSecretKey()), previous), source: 'memory', warning: undefined };
  if (databaseFile !== undefined) return { box: createSecretBox(keyFromFile(keyFileOf(databaseFile)), previous), source: 'key file', warning: undefined };
  return { box: createSecretBox(undefined, previous), source: 'none', warning: PLAIN_TEXT_WARNING };
}
