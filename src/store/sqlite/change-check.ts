// Has another connection (another process, the CLI, a --workers sibling) committed since we
// last looked? SQLite answers that exactly with PRAGMA data_version, but the pragma opens a
// read transaction: file locks and about 6 µs of CPU, more than the rest of a cached read.
//
// In WAL mode every commit, by any connection, rewrites the header of the wal-index (the
// -shm file, https://www.sqlite.org/walformat.html#the_wal_index_file_format) with a new
// change counter, frame count and checksum. So header bytes equal to those we saw prove
// nothing was committed, at the cost of one pread. When they differ (our own commits too,
// a checkpoint restart, or a torn read during someone's commit) we ask data_version, which
// has the final word. Order matters: the header is read before the pragma, so a commit
// that lands between the two is either counted by the pragma now or shows as a changed
// header next time; it can never be hidden in the header we keep.
import fs from 'node:fs';
import os from 'node:os';
import type Database from 'better-sqlite3';

/** One copy of the wal-index header; the file starts with two identical copies. */
const HEADER_BYTES = 48;
/** WalIndexHdr.iVersion for every SQLite since 3.7.0. */
const WALINDEX_VERSION = 3007000;

export interface ChangeCheck {
  /** A number that changes exactly when another connection has committed since the last call. */
  current(): number;
  /** How many calls were settled by the header alone, and how many asked data_version. */
  readonly stats: { header: number; pragma: number };
  close(): void;
}

export function createChangeCheck(db: Database.Database, file: string): ChangeCheck {
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  const stats = { header: 0, pragma: 0 };
  const fd = openWalIndex(db, file);
  const buf = Buffer.alloc(2 * HEADER_BYTES);
  const seen = Buffer.alloc(HEADER_BYTES);
  let seenValid = false;
  let version = 0;
  const readVersion = os.endianness() === 'LE' ? () => buf.readUInt32LE(0) : () => buf.readUInt32BE(0);

  /** Reads both header copies; true when they agree and describe an initialised wal-index. */
  function readHeader(): boolean {
    if (fd === undefined) return false;
    try {
      if (fs.readSync(fd, buf, 0, buf.length, 0) !== buf.length) return false;
    } catch {
      return false;
    }
    return buf[12] === 1 && readVersion() === WALINDEX_VERSION && buf.compare(buf, HEADER_BYTES, 2 * HEADER_BYTES, 0, HEADER_BYTES) === 0;
  }

  return {
    stats,
    current() {
      const clean = readHeader();
      if (clean && seenValid && buf.compare(seen, 0, HEADER_BYTES, 0, HEADER_BYTES) === 0) {
        stats.header++;
        return version;
      }
      stats.pragma++;
      version = dataVersion.get()!;
      seenValid = clean;
      if (clean) buf.copy(seen, 0, 0, HEADER_BYTES);
      return version;
    },
    close() {
      if (fd !== undefined) fs.closeSync(fd);
    },
  };
}

/** A read-only descriptor of the -shm file when the database is in WAL mode, else undefined. */
function openWalIndex(db: Database.Database, file: string): number | undefined {
  if (file === '' || file === ':memory:' || db.pragma('journal_mode', { simple: true }) !== 'wal') return undefined;
  try {
    return fs.openSync(`${file}-shm`, 'r');
  } catch {
    return undefined;
  }
}
