// The rollup writer's last resort on a stop: when the final flush into DuckDB fails (a full
// disk, a store that will not open), the pending counts go to a spool file in the data dir,
// and the next start writes them into the rollups, then removes the file.
//
// One JSON object per line. The first line is the header; every other line is one part, a
// batch as the fleet's spool keeps them (src/reporting/batches.ts: an id and its count rows, all
// in one UTC month). The next start writes each part in one transaction together with the
// part's row in reporting_spool_applied, so a replay cut short never writes a part twice.
// The file is written under a temporary name, synced, then renamed: a file with the final
// name is whole.
import { randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { TUPLE_DIMENSIONS } from '../base/enums.ts';
import { toBatches, type Batch } from './batches.ts';
import type { CountRow } from '../counts/tuple.ts';

export const SPOOL_FORMAT = 'ivtd-reporting-spool';
export const SPOOL_VERSION = 1;
const PREFIX = 'reporting-spool-';
const SUFFIX = '.jsonl';
/** A spool file that could not be read whole is renamed with this suffix and kept. */
export const UNREADABLE_SUFFIX = '.unreadable';

export interface SpoolHeader {
  format: typeof SPOOL_FORMAT;
  version: number;
  spoolId: string;
  written: string;
  tuples: number;
  transactions: number;
}

export interface SpoolFile {
  path: string;
  header: SpoolHeader;
  parts: Batch[];
  /** Lines that are not a valid part (1-based line numbers, with why). */
  bad: Array<{ line: number; why: string }>;
}

export class SpoolFileError extends Error {}

/** The transactions (total) in `rows`. */
export function transactionsIn(rows: readonly CountRow[]): number {
  let n = 0;
  for (const r of rows) n += r.total;
  return n;
}

/** Spool files in `dir` waiting for a replay, oldest first (their names sort by time). */
export function listSpoolFiles(dir: string, prefix = PREFIX): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix) && n.endsWith(SUFFIX))
    .sort()
    .map((n) => join(dir, n));
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `rows` to a new spool file in `dir` (durably: written, synced, renamed, the folder
 * synced) and returns its path. Throws if any step fails; nothing is left under the final name then.
 */
export function writeSpoolFile(dir: string, rows: readonly CountRow[], partRows?: number, prefix = PREFIX): { path: string; header: SpoolHeader } {
  const spoolId = randomUUID();
  const written = new Date().toISOString();
  const header: SpoolHeader = { format: SPOOL_FORMAT, version: SPOOL_VERSION, spoolId, written, tuples: rows.length, transactions: transactionsIn(rows) };
  const path = join(dir, `${prefix}${written.replace(/[:.]/g, '-')}-${spoolId.slice(0, 8)}${SUFFIX}`);
  const tmp = `${path}.tmp`;
  let fd: number | null = null;
  try {
    fd = openSync(tmp, 'wx', 0o600);
    writeSync(fd, JSON.stringify(header) + '\n');
    for (const part of toBatches(rows, randomUUID, partRows)) {
      // Plain rows (a drained row's toJSON), without the process-local tuple id.
      const plain = part.rows.map((r) => ({ customerId: r.customerId, hour: r.hour, dims: r.dims, total: r.total, givt: r.givt, sivt: r.sivt }));
      writeSync(fd, JSON.stringify({ batchId: part.batchId, rows: plain }) + '\n');
    }
    fsyncSync(fd);
    closeSync(fd);
    fd = null;
    renameSync(tmp, path);
    fsyncDir(dir);
    return { path, header };
  } catch (e) {
    if (fd !== null) {
      try {
        closeSync(fd);
      } catch {
        // the write's own error is the one to report
      }
    }
    try {
      rmSync(tmp, { force: true });
    } catch {
      // the write's own error is the one to report
    }
    throw e;
  }
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function rowProblem(r: unknown): string | null {
  if (typeof r !== 'object' || r === null) return 'a row is not an object';
  const o = r as Record<string, unknown>;
  if (typeof o.customerId !== 'string' || o.customerId === '') return 'a row has no customerId';
  if (typeof o.hour !== 'number' || !Number.isSafeInteger(o.hour)) return 'a row has no valid hour';
  if (!Array.isArray(o.dims) || o.dims.length !== TUPLE_DIMENSIONS.length || !o.dims.every((d) => typeof d === 'string')) {
    return `a row's dims are not ${TUPLE_DIMENSIONS.length} strings`;
  }
  if (!isCount(o.total) || !isCount(o.givt) || !isCount(o.sivt)) return 'a row has counts that are not whole numbers ≥ 0';
  return null;
}

/**
 * Reads a spool file. Throws SpoolFileError when its header is unusable (nothing in it can
 * be trusted); a part line that is not valid is reported in `bad` and left out.
 */
export function readSpoolFile(path: string): SpoolFile {
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  let header: SpoolHeader;
  try {
    header = JSON.parse(lines[0] ?? '') as SpoolHeader;
  } catch (e) {
    throw new SpoolFileError(`${path}: line 1 is not a spool header: ${(e as Error).message}`);
  }
  if (header?.format !== SPOOL_FORMAT || header.version !== SPOOL_VERSION || typeof header.spoolId !== 'string' || header.spoolId === '') {
    throw new SpoolFileError(`${path}: line 1 is not a ${SPOOL_FORMAT} version ${SPOOL_VERSION} header`);
  }
  const parts: Batch[] = [];
  const bad: SpoolFile['bad'] = [];
  for (let i = 1; i < lines.length; i++) {
    let part: { batchId?: unknown; rows?: unknown };
    try {
      part = JSON.parse(lines[i]!) as typeof part;
    } catch (e) {
      bad.push({ line: i + 1, why: `not JSON: ${(e as Error).message}` });
      continue;
    }
    if (typeof part?.batchId !== 'string' || part.batchId === '' || !Array.isArray(part.rows)) {
      bad.push({ line: i + 1, why: 'not a part (batchId and rows)' });
      continue;
    }
    const problem = part.rows.map(rowProblem).find((p) => p !== null);
    if (problem) {
      bad.push({ line: i + 1, why: problem });
      continue;
    }
    parts.push({ batchId: part.batchId, rows: part.rows as CountRow[] });
  }
  return { path, header, parts, bad };
}

/** Removes a replayed spool file for good (the folder synced, so the removal outlives a crash). */
export function removeSpoolFile(path: string, dir: string): void {
  rmSync(path);
  fsyncDir(dir);
}

/** Renames a spool file that could not be read whole, so it is kept but not replayed again. */
export function setAsideSpoolFile(path: string): string {
  const to = path + UNREADABLE_SUFFIX;
  renameSync(path, to);
  return to;
}
