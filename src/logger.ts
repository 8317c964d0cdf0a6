import pino, { type Logger } from 'pino';
import type { Config } from './config.js';

/** Paths that may carry secrets; pino replaces them before anything is written. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'key',
  '*.key',
];

/** Anything key-shaped, wherever a client put it (URL, a field, a header), becomes a harmless marker. */
export const scrubSecrets = (line: string) => line.replace(/psk_(live|test)_[0-9A-Za-z]*/gi, 'psk_$1_[redacted]');

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      hooks: { streamWrite: scrubSecrets },
    },
    destination,
  );
}
