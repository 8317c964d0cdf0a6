// The one interface every repository runs SQL through. SQL text is the backend's own (its
// placeholders, its dialect); what this names is how statements run: on the database, or in a
// transaction that a service opens and passes to each repository it touches.

/** Positional (`?` / `$1`) or, on SQLite, named (`@name`) parameters. */
export type Params = readonly unknown[] | Readonly<Record<string, unknown>>;

/** A database or a transaction on it. */
export interface Sql {
  all<R>(sql: string, params?: Params): Promise<R[]>;
  get<R>(sql: string, params?: Params): Promise<R | undefined>;
  /** Runs a statement; resolves with the number of rows it changed. */
  run(sql: string, params?: Params): Promise<number>;
}

export interface SqlDatabase extends Sql {
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
   * SQLite takes the write lock first (BEGIN IMMEDIATE); PostgreSQL runs it on one pooled
   * connection (rows it reads and means to change, it locks with FOR UPDATE).
   */
  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
