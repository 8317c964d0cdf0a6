// The CLI's own errors, in a module that loads nothing else: a usage error (exit 2) or a
// command that could not be done (exit 1), both printed as their message alone.
export class UsageError extends Error {}
export class CommandError extends Error {}

/** `serve --workers` accepts 1 to this many processes. */
export const MAX_WORKERS = 64;
