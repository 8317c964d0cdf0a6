// The webhook repository's side of sealed secrets (src/webhooks/secret-box.ts), once for both
// backends: opening a claimed delivery's secrets, and re-sealing stored rows under the current
// key (`petstore secrets seal` and `rotate-key`), online: each row is changed only if its secrets
// are still the ones read (a secret rotation meanwhile makes it read again).
import type { Sql } from './core/sql.js';
import type { NewWebhookEndpointRecord, ResealReport } from './webhooks.js';
import { type Sealed, type SecretBox, SecretUnavailableError } from '../webhooks/secret-box.js';

/** An endpoint as inserted: its secret sealed (or plain, with a null key id). */
export type SealedEndpointRecord = Omit<NewWebhookEndpointRecord, 'secret'> & { secret: Sealed };

interface StoredSecrets {
  secret: string;
  secret_key_id: string | null;
  previous_secret: string | null;
  previous_secret_key_id: string | null;
}

/** The secrets to sign with, or why there are none (for the server's log; never a secret). */
export function openedSecrets(secrets: SecretBox, row: StoredSecrets, endpointId: string): { secret: string | undefined; previousSecret: string | undefined; secretProblem?: string } {
  try {
    const secret = secrets.open({ value: row.secret, keyId: row.secret_key_id }, endpointId);
    const previous = row.previous_secret === null ? undefined : secrets.open({ value: row.previous_secret, keyId: row.previous_secret_key_id }, endpointId);
    return { secret, previousSecret: previous };
  } catch (error) {
    if (!(error instanceof SecretUnavailableError)) throw error;
    return { secret: undefined, previousSecret: undefined, secretProblem: `The endpoint's signing secret cannot be opened: ${error.message}.` };
  }
}

const BATCH = 200;

/** Rows to (re)seal after `id`, in id order. */
const selectFor = (scope: 'plain' | 'other-keys') =>
  `SELECT id, secret, secret_key_id, previous_secret, previous_secret_key_id FROM webhook_endpoints
   WHERE id > ? AND ${
     scope === 'plain'
       ? '(secret_key_id IS NULL OR (previous_secret IS NOT NULL AND previous_secret_key_id IS NULL))'
       : '(secret_key_id IS NULL OR secret_key_id <> ? OR (previous_secret IS NOT NULL AND (previous_secret_key_id IS NULL OR previous_secret_key_id <> ?)))'
   }
   ORDER BY id LIMIT ${BATCH}`;

// Compare-and-set on the values read: a rotation of the endpoint's secret meanwhile wins.
const UPDATE = `UPDATE webhook_endpoints SET secret = ?, secret_key_id = ?, previous_secret = ?, previous_secret_key_id = ?
  WHERE id = ? AND secret = ? AND COALESCE(previous_secret, '') = ?`;

/** One row: true when it was re-sealed; false when it changed meanwhile (read again); throws SecretUnavailableError. */
async function resealRow(db: Pick<Sql, 'run'>, secrets: SecretBox, row: StoredSecrets & { id: string }): Promise<boolean> {
  const current = secrets.seal(secrets.open({ value: row.secret, keyId: row.secret_key_id }, row.id), row.id);
  const previous =
    row.previous_secret === null ? { value: null, keyId: null } : secrets.seal(secrets.open({ value: row.previous_secret, keyId: row.previous_secret_key_id }, row.id), row.id);
  const changed = await db.run(UPDATE, [current.value, current.keyId, previous.value, previous.keyId, row.id, row.secret, row.previous_secret ?? '']);
  return changed === 1;
}

export async function resealSecrets(db: Pick<Sql, 'all' | 'run'>, secrets: SecretBox, scope: 'plain' | 'other-keys'): Promise<ResealReport> {
  const key = secrets.current;
  if (!key) throw new Error('No sealing key: set PETSTORE_SECRET_KEY.');
  const report: ResealReport = { resealed: 0, unopenable: [] };
  const sql = selectFor(scope);
  let after = '';
  for (;;) {
    const rows = await db.all<StoredSecrets & { id: string }>(sql, scope === 'plain' ? [after] : [after, key.id, key.id]);
    for (const row of rows) {
      try {
        // A row changed meanwhile is read again; gone from the selection, a writer sealed it already.
        let done = await resealRow(db, secrets, row);
        while (!done) {
          const again = (await db.all<StoredSecrets & { id: string }>(sql.replace('id > ?', 'id = ?'), scope === 'plain' ? [row.id] : [row.id, key.id, key.id]))[0];
          if (!again) break;
          done = await resealRow(db, secrets, again);
        }
        if (done) report.resealed++;
      } catch (error) {
        if (!(error instanceof SecretUnavailableError)) throw error;
        report.unopenable.push(row.id);
      }
    }
    if (rows.length < BATCH) return report;
    after = rows[rows.length - 1]!.id;
  }
}
