// What a store reports beyond "this query is wrong": no HTTP here; src/http/plugins/errors.ts
// maps these to responses, in one place.

/** Base class of the errors a store raises on purpose. */
export class StoreError extends Error {
  override name = 'StoreError';
}

/** The database cannot serve now (down, unreachable, locked past the timeout, disk full). */
export class StoreUnavailableError extends StoreError {
  override name = 'StoreUnavailableError';
}

/** At start, the database took no connection within PETSTORE_DATABASE_WAIT_MS (store/wait.ts): the process exits 1. */
export class DatabaseWaitError extends StoreUnavailableError {
  override name = 'DatabaseWaitError';
}

/**
 * The connection was lost while COMMIT was under way (a failover, a crash): the transaction
 * may or may not have been applied. Retrying is safe where the write is idempotent (an
 * Idempotency-Key is completed in the create's own transaction; order moves are checked
 * against the current status).
 */
export class CommitOutcomeUnknownError extends StoreUnavailableError {
  override name = 'CommitOutcomeUnknownError';
}

/**
 * A write lost a race it cannot win and was rolled back (an idempotency key completed by
 * another request meanwhile): nothing of it was written.
 */
export class StoreConflictError extends StoreError {
  override name = 'StoreConflictError';
}

/**
 * A statement issued on a transaction whose work had already settled (committed or rolled back):
 * refused, so that it neither runs alone nor joins the next transaction on the connection.
 */
export class TransactionEndedError extends StoreError {
  override name = 'TransactionEndedError';
  constructor() {
    super('a statement was issued after its transaction ended');
  }
}
