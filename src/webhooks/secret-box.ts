// Webhook signing secrets sealed at rest: AES-256-GCM (node:crypto) under a 32-byte key, the
// endpoint id as associated data (a sealed secret copied to another row does not open), and
// the key's id stored beside each sealed value (NULL: plain text, as before migration 13 or on
// PostgreSQL without PETSTORE_SECRET_KEY). Written once; the webhook repository seals what it
// writes and opens what the delivery worker needs, on both backends.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export interface SecretKey {
  /** 16 hex characters derived from the key: the same key has the same id on every instance. */
  readonly id: string;
  readonly key: Buffer;
}

/** A sealed value and the id of the key that opens it; keyId null: stored plain. */
export interface Sealed {
  value: string;
  keyId: string | null;
}

/** A sealed secret that cannot be opened here (no key with its id, or it fails authentication). */
export class SecretUnavailableError extends Error {}

export interface SecretBox {
  /** The key new secrets are sealed under; undefined: they are stored plain. */
  readonly current: SecretKey | undefined;
  seal(plain: string, context: string): Sealed;
  open(sealed: Sealed, context: string): string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A key from its base64 (or base64url) form: exactly 32 bytes, else undefined. */
export function secretKeyFrom(encoded: string): SecretKey | undefined {
  const text = encoded.trim();
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) return undefined;
  const key = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (key.length !== 32) return undefined;
  return { id: createHash('sha256').update('petstore secret key id\0').update(key).digest('hex').slice(0, 16), key };
}

export const newSecretKey = (): string => randomBytes(32).toString('base64');

function seal(key: SecretKey, plain: string, context: string): Sealed {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return { value: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url'), keyId: key.id };
}

function open(key: SecretKey, value: string, context: string): string {
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new SecretUnavailableError(`the sealed value under key ${key.id} is truncated`);
  const decipher = createDecipheriv('aes-256-gcm', key.key, bytes.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretUnavailableError(`key ${key.id} does not open it (a different key with the same id, or the value was altered)`);
  }
}

/**
 * Seals under `current` (plain when undefined); opens with `current` or `previous`, by the
 * stored key id. `previous` only ever opens: it is the key being rotated away from.
 */
export function createSecretBox(current: SecretKey | undefined, previous?: SecretKey): SecretBox {
  const keys = new Map<string, SecretKey>();
  if (previous) keys.set(previous.id, previous);
  if (current) keys.set(current.id, current);
  return {
    current,
    seal: (plain, context) => (current ? seal(current, plain, context) : { value: plain, keyId: null }),
    open({ value, keyId }, context) {
      if (keyId === null) return value;
      const key = keys.get(keyId);
      if (!key) {
        const known = [...keys.keys()];
        throw new SecretUnavailableError(
          `it is sealed under key ${keyId}, and this process has ${known.length === 0 ? 'no key (PETSTORE_SECRET_KEY is unset)' : `only key ${known.join(' and ')}`}`,
        );
      }
      return open(key, value, context);
    },
  };
}

/** Stores plain text and opens only plain text: tests and tools that build a store without keys. */
export const PLAIN_SECRETS: SecretBox = createSecretBox(undefined);
