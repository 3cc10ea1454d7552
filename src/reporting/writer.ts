// The rollup writer on the main thread: merges the lookup threads' count deltas in memory
// and appends them to DuckDB every flush interval, hourly and daily in one transaction,
// off the JS thread (one JSON parameter per chunk, parsed by DuckDB). Later it merges each
// period's delta rows into one row per tuple (compaction) and deletes rows past the
// retention. A failed flush keeps its rows in memory for the next one; nothing here is
// on the lookup path.
//
// A chunk DuckDB refuses for what is in its rows (a constraint, a conversion) would be
// refused again at every flush and hold reporting up for good, so it is split in halves
// until the rows at fault are alone; those are quarantined (logged once with DuckDB's
// reason, counted in ivtd_reporting_rows_quarantined_total, dropped) and the rest is
// written. Any other failure (I/O, memory, a missing table) is the store's: the rows wait.
//
// A store that keeps failing (a full disk) must not wedge reporting for good: after a
// fatal error (DuckDB invalidates its instance) the store is reopened, and every
// REOPEN_AFTER failures in a row the writer takes a fresh connection; the rows wait and are
// written once the store takes them again. On a stop whose final flush fails, the pending
// counts go to a spool file in the data dir (./spool-file.ts) that the next start writes
// into the rollups; if even that fails, close() rejects with CountsLostError (the process
// then exits non-zero).
import { timestampValue } from '@duckdb/node-api';
import { dirname } from 'node:path';
import { TUPLE_DIMENSIONS } from '../base/enums.ts';
import { log } from '../base/log.ts';
import { inTransaction, isInvalidatedError, memoryLimit, withHashParts, type Queryable, type Store } from '../store/db.ts';
import { INTEGER_DIMENSIONS, ROLLUP_TABLES, type Granularity } from './columns.ts';
import { SEP, TupleCounts, withoutSep, type CountRow } from '../counts/tuple.ts';
import { DAY_MS, HOUR_MS, MINUTE_MS, dayStart, hourStart } from '../base/time.ts';
import { oldestKeptDayMs } from './retention-window.ts';
import { WEEKLY_ROLLUPS, buildWeek, readBuiltWeeks, weekStart, weeksToBuild, type WeeklyTables } from './weeks.ts';
import {
  SpoolFileError,
  listSpoolFiles,
  readSpoolFile,
  removeSpoolFile,
  setAsideSpoolFile,
  transactionsIn,
  writeSpoolFile,
} from './spool-file.ts';

/**
 * Rows per chunk, each chunk its own transaction (its hourly and daily rows together): a
 * commit then needs little of DuckDB's memory limit, and the JSON built between awaits
 * stays small.
 */
const CHUNK_ROWS = 2_000;
const CLOSE_ATTEMPTS = 3;
/** Store failures in a row after which (and after every as many more) the writer takes a fresh connection. */
export const REOPEN_AFTER = 3;
/** Quarantined rows logged in full per flush; past it one line counts the rest. */
const QUARANTINE_LOG_ROWS = 20;
/** Characters of DuckDB's reason kept in the log line (its message may quote the input). */
const REASON_MAX = 300;

/**
 * DuckDB error classes that name a fault in the rows themselves (the same rows fail
 * again); other classes (IO, Out of Memory, Catalog, TransactionContext…) are the store's.
 */
const ROW_FAULT = /^(Constraint|Conversion|Invalid Input|Out of Range|Mismatch Type) Error/;

function isRowFault(e: unknown): boolean {
  return e instanceof Error && ROW_FAULT.test(e.message);
}
/** Pending-count bytes when no memory plan sets them (tests, tools). */
const DEFAULT_PENDING_BYTES = 64 << 20;

export interface RollupWriterOptions {
  /** Milliseconds between flushes (config.flushInterval × 1000). */
  flushIntervalMs: number;
  retentionDays: number;
  /** Milliseconds between compaction passes over the hours written since the last one. */
  compactIntervalMs?: number;
  /** Bytes the pending counts may take before new tuples fold into the overflow value. */
  maxPendingBytes?: number;
  /** The process's tuple hash seed (LookupMemory.counts.seed), so folded ids agree with the threads'. */
  tupleSeed?: number;
  /**
   * Rows to write at each flush besides those added: the shared counts, drained
   * (tuple-dictionary.ts). `final` on the stop's flushes: nothing may wait for a later one.
   */
  source?: (final: boolean) => CountRow[];
  /** Clock, for tests of retention. */
  now?: () => number;
  /** The tables and columns written (default LOOKUP_ROLLUPS). */
  schema?: RollupSchema;
}

/**
 * What a writer writes: its two tables, its dimension columns (after customer_id and
 * period_start; integer ones stored as SMALLINT) and its three counters. The lookups'
 * rollups are LOOKUP_ROLLUPS; the impressions' (src/reporting/impressions.ts) have their own.
 */
export interface RollupSchema {
  tables: { hour: string; day: string };
  dims: readonly string[];
  integerDims: ReadonlySet<string>;
  counters: readonly [string, string, string];
  /** File-name prefix of its spool files, so each writer replays only its own. */
  spoolPrefix?: string;
  /** Weekly rows built from the daily ones (./weeks.ts), and their marks; none when absent. */
  weeks?: WeeklyTables;
}

export const LOOKUP_ROLLUPS: RollupSchema = {
  tables: ROLLUP_TABLES,
  dims: TUPLE_DIMENSIONS,
  integerDims: INTEGER_DIMENSIONS as ReadonlySet<string>,
  counters: ['total', 'givt', 'sivt'],
  weeks: WEEKLY_ROLLUPS,
};

/** The statements of one schema, built once per writer. */
interface SchemaSql {
  stage: string;
  hourlyInsert: string;
  dailyInsert: string;
  keyColumns: string;
  sums: string;
  allColumns: string;
  batchJson: (rows: readonly CountRow[]) => string;
}

function schemaSql(schema: RollupSchema): SchemaSql {
  // The batch travels as one JSON object of columns; DuckDB turns it into typed lists. The
  // text values of a row go joined by U+001F as one string, split again in SQL: DuckDB reads
  // a JSON list's elements one value at a time (about 0.3 µs each at its one thread), and a
  // row has many text values, so one list for all of them halves what a new tuple costs to
  // stage (src/counts/tuple.ts keeps U+001F out of the values; this replaces any left).
  const [c1, c2, c3] = schema.counters;
  const numeric = schema.dims.map((d) => schema.integerDims.has(d));
  const structure = JSON.stringify({
    c: ['VARCHAR'],
    h: ['BIGINT'],
    x: ['VARCHAR'],
    ...Object.fromEntries(schema.dims.flatMap((_, i) => (numeric[i] ? [[`d${i}`, ['SMALLINT']]] : []))),
    t: ['BIGINT'],
    g: ['BIGINT'],
    s: ['BIGINT'],
  });
  const columns = ['customer_id', 'period_start', ...schema.dims, ...schema.counters];
  const allColumns = columns.map((c) => `"${c}"`).join(', ');
  const keyColumns = columns.slice(0, -3).map((c) => `"${c}"`).join(', ');
  const sums = `sum("${c1}")::BIGINT AS "${c1}", sum("${c2}")::BIGINT AS "${c2}", sum("${c3}")::BIGINT AS "${c3}"`;
  let textIndex = 0;
  const dimSql = schema.dims.map((d, i) => (numeric[i] ? `d${i} AS "${d}"` : `x[${++textIndex}] AS "${d}"`));
  const lists = [
    'unnest(v.c) AS customer_id',
    'make_timestamp(unnest(v.h)) AS period_start',
    'string_split(unnest(v.x), chr(31)) AS x', // SEP
    ...schema.dims.flatMap((_, i) => (numeric[i] ? [`unnest(v.d${i}) AS d${i}`] : [])),
    `unnest(v.t) AS "${c1}"`,
    `unnest(v.g) AS "${c2}"`,
    `unnest(v.s) AS "${c3}"`,
  ];
  /** One chunk of the batch, unpacked into a temp table both inserts read from. */
  const stage =
    `CREATE TEMP TABLE flush_batch AS SELECT customer_id, period_start, ${dimSql.join(', ')}, "${c1}", "${c2}", "${c3}" ` +
    `FROM (SELECT ${lists.join(', ')} FROM (SELECT from_json($1::JSON, '${structure}') AS v))`;
  return {
    stage,
    hourlyInsert: `INSERT INTO ${schema.tables.hour} (${allColumns}) SELECT ${allColumns} FROM flush_batch`,
    dailyInsert:
      `INSERT INTO ${schema.tables.day} (${allColumns}) SELECT ${keyColumns.replace('"period_start"', "date_trunc('day', period_start)")}, ` +
      `${sums} FROM flush_batch GROUP BY ALL`,
    keyColumns,
    sums,
    allColumns,
    batchJson(rows) {
      const cols: Record<string, unknown[]> = { c: [], h: [], x: [], t: [], g: [], s: [] };
      const numCols: Array<unknown[] | null> = numeric.map((n, i) => (n ? (cols[`d${i}`] = []) : null));
      const text: string[] = [];
      for (const r of rows) {
        cols.c!.push(r.customerId);
        cols.h!.push(r.hour * 1000);
        const dims = r.dims; // once: drained rows split their values on each read
        text.length = 0;
        for (let i = 0; i < numCols.length; i++) {
          const v = dims[i] ?? '';
          const nc = numCols[i];
          if (nc) nc.push(Number(v) || 0);
          else text.push(withoutSep(v));
        }
        cols.x!.push(text.join(SEP));
        cols.t!.push(r.total);
        cols.g!.push(r.givt);
        cols.s!.push(r.sivt);
      }
      return JSON.stringify(cols);
    },
  };
}

function periodParam(ms: number) {
  return timestampValue(BigInt(ms) * 1000n);
}

export interface WriterStats {
  pendingTuples: number;
  flushes: number;
  failedFlushes: number;
  rowsWritten: number;
  /** Rows DuckDB refused for their own content, logged and dropped (never retried). */
  rowsQuarantined: number;
  foldedTuples: number;
  /** Epoch ms of the last flush that succeeded (empty ones too); null before the first. */
  lastFlushAt: number | null;
  /** Spool files of earlier stops still waiting to be written into the rollups. */
  spoolFiles: number;
}

/** The final flush failed and the spool file could not be written: counts were lost. */
export class CountsLostError extends Error {}

/** The key of rows `from`..`from + rows` of a spool file's part in reporting_spool_applied. */
export function spoolPartKey(batchId: string, from: number, rows: number): string {
  return `${batchId}:${from}+${rows}`;
}

/** Where a chunk comes from a spool file: its part, recorded in the chunk's transaction. */
interface SpoolMark {
  spoolId: string;
  batchId: string;
  /** Index of the chunk's first row in the part. */
  from: number;
}

interface Settled {
  settled: number;
  written: number;
  quarantined: Array<{ row: CountRow; reason: string }>;
}

export class RollupWriter {
  private readonly pending: TupleCounts;
  private readonly now: () => number;
  /** Periods (start ms) per granularity that received rows since their last compaction. */
  private readonly touched: Record<Granularity, Set<number>> = { hour: new Set(), day: new Set() };
  private readonly timers: NodeJS.Timeout[] = [];
  // Every database step runs in this chain, one at a time, on the writer's own connection.
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly counters = { flushes: 0, failedFlushes: 0, rowsWritten: 0, rowsQuarantined: 0, lastFlushAt: null as number | null };
  /** Store failures in a row (any step); reset by a step that succeeds. */
  private failuresInRow = 0;
  /** True when the next step should take a fresh connection first. */
  private stale = false;
  /** Spool files of earlier stops not yet written into the rollups. */
  private spools: string[] = [];
  /** The weekly rows' marks as committed (week start → through), when the schema has weeks. */
  private builtWeeks = new Map<number, number>();

  private constructor(
    private readonly store: Store,
    private conn: Queryable & { close(): void; generation: number },
    private readonly opts: RollupWriterOptions,
  ) {
    this.pending = new TupleCounts(opts.maxPendingBytes ?? DEFAULT_PENDING_BYTES, { seed: opts.tupleSeed ?? 0 });
    this.now = opts.now ?? Date.now;
    this.schema = opts.schema ?? LOOKUP_ROLLUPS;
    this.sql = schemaSql(this.schema);
  }

  private readonly schema: RollupSchema;
  private readonly sql: SchemaSql;

  /**
   * Opens the writer's connection, writes the spool files earlier stops left (a failure is
   * logged; they are retried at each flush), starts its timers and a first retention pass.
   */
  static async open(store: Store, opts: RollupWriterOptions): Promise<RollupWriter> {
    const w = new RollupWriter(store, await store.connection(), opts);
    w.spools = listSpoolFiles(store.dataDir, w.schema.spoolPrefix);
    if (w.schema.weeks) w.builtWeeks = await readBuiltWeeks(w.conn, w.schema.weeks);
    if (w.spools.length > 0) await w.serial(() => w.replaySpools()).catch(() => undefined);
    // A crash may have left the last periods uncompacted.
    w.touch(w.now() - HOUR_MS);
    w.touch(w.now());
    w.every(opts.flushIntervalMs, () => w.flush());
    w.every(opts.compactIntervalMs ?? 10 * MINUTE_MS, () => w.compact());
    w.every(DAY_MS, () => w.enforceRetention());
    w.enforceRetention().catch(() => undefined);
    return w;
  }

  private every(ms: number, fn: () => Promise<unknown>): void {
    const t = setInterval(() => {
      fn().catch(() => undefined); // each step logs its own failure
    }, ms);
    t.unref();
    this.timers.push(t);
  }

  private touch(ms: number): void {
    this.touched.hour.add(hourStart(ms));
    this.touched.day.add(dayStart(ms));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** A fresh connection when the store was reopened or the old one kept failing. */
  private async usableConnection(): Promise<void> {
    if (!this.stale && this.conn.generation === this.store.generation) return;
    const conn = await this.store.connection();
    try {
      this.conn.close();
    } catch {
      // a connection of an instance already gone
    }
    this.conn = conn;
    this.stale = false;
    log.info({ failuresInRow: this.failuresInRow }, 'reporting: the rollup writer took a fresh store connection');
  }

  /** A step failed for the store's sake: reopen what needs it before the next step. */
  private async storeFailed(e: unknown): Promise<void> {
    this.failuresInRow++;
    if (isInvalidatedError(e)) {
      // The instance is gone for everyone: reopened once, whichever user saw it first.
      await this.store.reopen(this.conn.generation).catch(() => undefined); // logged by the store
    }
    if (this.failuresInRow % REOPEN_AFTER === 0) this.stale = true;
  }

  private storeWorked(): void {
    if (this.failuresInRow > 0) log.info({ failuresInRow: this.failuresInRow }, 'reporting: the store takes writes again');
    this.failuresInRow = 0;
  }

  /** Count sink: merges deltas in memory (the rows become the writer's); never touches the database. */
  add(rows: CountRow[]): void {
    if (rows.length > 0) this.pending.addRows(rows);
  }

  stats(): WriterStats {
    return { ...this.counters, pendingTuples: this.pending.size, foldedTuples: this.pending.folded, spoolFiles: this.spools.length };
  }

  /**
   * Writes every pending row, a chunk per transaction; rows DuckDB refuses for their own
   * content are quarantined (see the top of this file). On any other failure the rows not
   * yet written stay pending (a chunk is written whole or not at all) and it rejects.
   */
  flush(): Promise<void> {
    return this.serial(async () => {
      const rows = this.pending.take();
      const drained = this.opts.source?.(this.closed);
      if (drained && drained.length > 0) for (const r of drained) rows.push(r);
      if (rows.length === 0 && this.spools.length === 0) {
        this.counters.lastFlushAt = Date.now();
        return;
      }
      // Rows are settled (written or quarantined) in order: a failure leaves a tail to keep.
      const done: Settled = { settled: 0, written: 0, quarantined: [] };
      try {
        await this.usableConnection();
        if (this.spools.length > 0) await this.replaySpools();
        for (let at = 0; at < rows.length; at += CHUNK_ROWS) await this.writeSplitting(rows.slice(at, at + CHUNK_ROWS), done);
      } catch (e) {
        this.pending.addRows(rows.slice(done.settled));
        this.counters.failedFlushes++;
        log.error({ err: (e as Error).message, tuples: rows.length - done.settled }, 'reporting flush failed; keeping the counts for the next flush');
        await this.storeFailed(e);
        throw e;
      } finally {
        this.counters.rowsWritten += done.written;
        this.quarantine(done.quarantined);
      }
      this.storeWorked();
      this.counters.flushes++;
      this.counters.lastFlushAt = Date.now();
    });
  }

  /**
   * Writes `rows` in one transaction; if DuckDB refuses their content, each half on its own,
   * down to single rows. Rows of a spool file (`mark`) record their range of the part in the
   * same transaction, and a range already recorded is skipped (the halves are the same at
   * every try, so a replay cut short resumes without writing anything twice).
   */
  private async writeSplitting(rows: CountRow[], done: Settled, mark?: SpoolMark): Promise<void> {
    let written: boolean;
    try {
      written = await this.writeChunk(rows, mark);
    } catch (e) {
      if (!isRowFault(e)) throw e;
      if (rows.length === 1) {
        done.quarantined.push({ row: rows[0]!, reason: (e as Error).message.slice(0, REASON_MAX) });
        done.settled++;
        return;
      }
      const half = rows.length >> 1;
      await this.writeSplitting(rows.slice(0, half), done, mark);
      await this.writeSplitting(rows.slice(half), done, mark && { ...mark, from: mark.from + half });
      return;
    }
    done.settled += rows.length;
    if (!written) return;
    for (const r of rows) this.touch(r.hour);
    done.written += rows.length;
  }

  /** One chunk in one transaction. False when its spool range was written before (nothing done). */
  private async writeChunk(rows: readonly CountRow[], mark?: SpoolMark): Promise<boolean> {
    const part = mark && spoolPartKey(mark.batchId, mark.from, rows.length);
    const stale = this.weeksHolding(rows);
    const written = await inTransaction(this.conn, async () => {
      if (mark) {
        const seen = await this.conn.one('SELECT 1 AS x FROM reporting_spool_applied WHERE spool_id = $1 AND part = $2', [mark.spoolId, part!]);
        if (seen) return false;
      }
      await this.conn.run(this.sql.stage, [this.sql.batchJson(rows)]);
      await this.conn.run(this.sql.hourlyInsert);
      await this.conn.run(this.sql.dailyInsert);
      await this.conn.run('DROP TABLE flush_batch');
      if (mark) await this.conn.run('INSERT INTO reporting_spool_applied (spool_id, part) VALUES ($1, $2)', [mark.spoolId, part!]);
      // Rows for days a week's rows already hold: the week is read from the daily rows until rebuilt.
      if (stale.length > 0) await this.conn.run(`DELETE FROM ${this.schema.weeks!.built} WHERE week_start IN (${stale.map((w) => `make_timestamp(${w * 1000})`).join(', ')})`);
      return true;
    });
    if (written) for (const w of stale) this.builtWeeks.delete(w);
    return written;
  }

  /** The built weeks (./weeks.ts) whose rows already hold the day of one of `rows`. */
  private weeksHolding(rows: readonly CountRow[]): number[] {
    if (this.builtWeeks.size === 0) return [];
    const stale = new Set<number>();
    let lastDay = NaN;
    for (const r of rows) {
      const day = dayStart(r.hour);
      if (day === lastDay) continue;
      lastDay = day;
      const w = weekStart(day);
      const through = this.builtWeeks.get(w);
      if (through !== undefined && day < through) stale.add(w);
    }
    return [...stale];
  }

  /**
   * Writes the spool files of earlier stops into the rollups, oldest first, and removes each
   * one written whole. Rejects on a store failure (the file stays and is retried at the next
   * flush). A file that cannot be read whole is renamed `*.unreadable` and kept, logged.
   */
  private async replaySpools(): Promise<void> {
    while (this.spools.length > 0) {
      const path = this.spools[0]!;
      let file;
      try {
        file = readSpoolFile(path);
      } catch (e) {
        this.spools.shift();
        const kept = e instanceof SpoolFileError ? this.setAside(path) : path;
        log.error({ file: path, kept, err: (e as Error).message }, 'reporting: could not read a spool file; its counts are not in the reports (the file is kept)');
        continue;
      }
      const done: Settled = { settled: 0, written: 0, quarantined: [] };
      try {
        for (const part of file.parts) {
          for (let at = 0; at < part.rows.length; at += CHUNK_ROWS) {
            await this.writeSplitting(part.rows.slice(at, at + CHUNK_ROWS), done, { spoolId: file.header.spoolId, batchId: part.batchId, from: at });
          }
        }
      } catch (e) {
        log.error({ file: path, err: (e as Error).message }, 'reporting: could not write a spool file into the rollups; it is kept and retried at the next flush');
        throw e;
      } finally {
        this.counters.rowsWritten += done.written;
        this.quarantine(done.quarantined);
      }
      this.spools.shift();
      const rows = file.parts.flatMap((p) => p.rows);
      if (file.bad.length > 0) {
        const kept = this.setAside(path);
        log.error({ file: path, kept, lines: file.bad }, 'reporting: lines of a spool file could not be read; their counts are not in the reports (the file is kept)');
      } else {
        // Removed before its parts are forgotten: a crash in between can never replay it twice.
        removeSpoolFile(path, dirname(path));
      }
      await this.conn.run('DELETE FROM reporting_spool_applied WHERE spool_id = $1', [file.header.spoolId]).catch(() => undefined);
      log.info(
        { file: path, tuples: rows.length, transactions: transactionsIn(rows), writtenBefore: done.settled - done.written - done.quarantined.length },
        'reporting: counts from a spool file written into the rollups',
      );
    }
  }

  private setAside(path: string): string {
    try {
      return setAsideSpoolFile(path);
    } catch {
      return path;
    }
  }

  /** Logs rows DuckDB refused, once each (they are dropped), and counts them. */
  private quarantine(bad: ReadonlyArray<{ row: CountRow; reason: string }>): void {
    if (bad.length === 0) return;
    this.counters.rowsQuarantined += bad.length;
    for (const { row, reason } of bad.slice(0, QUARANTINE_LOG_ROWS)) {
      const dims = row.dims;
      log.error(
        {
          reason,
          customerId: row.customerId,
          hour: Number.isFinite(row.hour) && Math.abs(row.hour) < 8.64e15 ? new Date(row.hour).toISOString() : String(row.hour),
          dims: Object.fromEntries(this.schema.dims.map((d, i) => [d, dims[i] ?? ''])),
          total: row.total,
          givt: row.givt,
          sivt: row.sivt,
        },
        'reporting: the store refused this row; quarantined (dropped, not retried), the rest of the flush is written',
      );
    }
    if (bad.length > QUARANTINE_LOG_ROWS) log.error({ rows: bad.length - QUARANTINE_LOG_ROWS }, 'reporting: more rows quarantined in this flush (not logged one by one)');
  }

  /**
   * Merges the delta rows of every period written since the last pass into one row per
   * tuple, then builds the weekly rows that are missing or behind (./weeks.ts). Returns how
   * many periods (hours and days) were rewritten.
   */
  compact(): Promise<number> {
    return this.serial(async () => {
      let rewritten = 0;
      try {
        await this.usableConnection();
      } catch (e) {
        log.error({ err: (e as Error).message }, 'reporting compaction failed; will retry');
        throw e;
      }
      for (const g of ['hour', 'day'] as const) {
        const periods = [...this.touched[g]].sort((a, b) => a - b);
        this.touched[g].clear();
        for (const p of periods) {
          try {
            if (await this.compactPeriod(g, p)) rewritten++;
          } catch (e) {
            this.touched[g].add(p);
            log.error({ err: (e as Error).message, [g]: new Date(p).toISOString() }, 'reporting compaction failed; will retry');
            await this.storeFailed(e);
          }
        }
      }
      const weeks = this.schema.weeks ? await this.buildWeeks(this.schema.weeks) : 0;
      if (rewritten > 0 || weeks > 0) log.debug({ periods: rewritten, weeks }, 'reporting rollups compacted');
      return rewritten;
    });
  }

  /**
   * One period's compaction; past DuckDB's memory limit (a day of a million tuples at the
   * default budget), redone with its GROUP BY in hash parts (HASH_PARTS), each a fraction of
   * the tuples, which DuckDB can then hold.
   */
  private compactPeriod(g: Granularity, startMs: number): Promise<boolean> {
    return withHashParts(
      (parts) => this.compactPeriodIn(g, startMs, parts),
      async (parts) =>
        log.warn(
          { [g]: new Date(startMs).toISOString(), parts, memoryLimit: await memoryLimit(this.conn) },
          'reporting: compacting a period passed DuckDB\'s memory limit and was done in parts, more slowly: a larger --memory-budget gives DuckDB more memory',
        ),
    );
  }

  /**
   * (Re)builds the weekly rows of the weeks whose marks are missing or behind (./weeks.ts),
   * newest first, a few per pass, each in its own transaction (in hash parts past DuckDB's
   * memory limit). Returns how many were built; a failure is logged and retried next pass.
   */
  private async buildWeeks(weeks: WeeklyTables): Promise<number> {
    let built = 0;
    const now = this.now();
    for (const w of weeksToBuild(now, oldestKeptDayMs(now, this.opts.retentionDays), this.builtWeeks)) {
      const s = { daily: this.schema.tables.day, weeks, keyColumns: this.sql.keyColumns, sums: this.sql.sums, allColumns: this.sql.allColumns };
      try {
        await withHashParts(
          (parts) => inTransaction(this.conn, () => buildWeek(this.conn, s, w.start, w.through, parts)),
          async (parts) =>
            log.warn(
              { week: new Date(w.start).toISOString(), parts, memoryLimit: await memoryLimit(this.conn) },
              "reporting: building a week's rollups passed DuckDB's memory limit and was done in parts, more slowly: a larger --memory-budget gives DuckDB more memory",
            ),
        );
        this.builtWeeks.set(w.start, w.through);
        built++;
      } catch (e) {
        log.error({ err: (e as Error).message, week: new Date(w.start).toISOString() }, "reporting: building a week's rollups failed; its reports read the daily rows, will retry");
        await this.storeFailed(e);
        break;
      }
    }
    return built;
  }

  /** Rewrites one period's rows as one row per tuple, its GROUP BY in `parts` statements (1: one). */
  private compactPeriodIn(g: Granularity, startMs: number, parts: number): Promise<boolean> {
    const table = this.schema.tables[g];
    return inTransaction(this.conn, async () => {
      const p = periodParam(startMs);
      const merge = `SELECT ${this.sql.keyColumns}, ${this.sql.sums} FROM ${table} WHERE period_start = $1`;
      if (parts === 1) await this.conn.run(`CREATE TEMP TABLE rollup_compact AS ${merge} GROUP BY ALL`, [p]);
      else {
        await this.conn.run(`CREATE TEMP TABLE rollup_compact AS ${merge} AND false GROUP BY ALL`, [p]);
        for (let i = 0; i < parts; i++) {
          await this.conn.run(`INSERT INTO rollup_compact ${merge} AND hash(${this.sql.keyColumns}) % ${parts} = ${i} GROUP BY ALL`, [p]);
        }
      }
      try {
        const c = await this.conn.one<{ merged: bigint; stored: bigint }>(
          `SELECT (SELECT count(*) FROM rollup_compact) AS merged, (SELECT count(*) FROM ${table} WHERE period_start = $1) AS stored`,
          [p],
        );
        if (!c || c.merged === c.stored) return false;
        await this.conn.run(`DELETE FROM ${table} WHERE period_start = $1`, [p]);
        await this.conn.run(`INSERT INTO ${table} (${this.sql.allColumns}) SELECT ${this.sql.allColumns} FROM rollup_compact`);
        return true;
      } finally {
        // After a failure the transaction is aborted and ROLLBACK drops the table anyway.
        await this.conn.run('DROP TABLE rollup_compact').catch(() => undefined);
      }
    });
  }

  /** Deletes rows older than the retention window (both tables). Returns how many went. */
  enforceRetention(): Promise<number> {
    return this.serial(async () => {
      const cutoffMs = oldestKeptDayMs(this.now(), this.opts.retentionDays);
      const cutoff = periodParam(cutoffMs);
      try {
        await this.usableConnection();
        let n = 0;
        const weeks = this.schema.weeks;
        if (weeks) {
          // A week that began before the cutoff holds days deleted now: its rows and mark go.
          await this.conn.run(`DELETE FROM ${weeks.built} WHERE week_start < $1`, [cutoff]);
          for (const w of [...this.builtWeeks.keys()]) if (w < cutoffMs) this.builtWeeks.delete(w);
        }
        for (const table of [...Object.values(this.schema.tables), ...(weeks ? [weeks.table] : [])]) {
          const r = await this.conn.one<{ n: bigint }>(`SELECT count(*) AS n FROM ${table} WHERE period_start < $1`, [cutoff]);
          const rows = Number(r?.n ?? 0);
          if (rows === 0) continue;
          await this.conn.run(`DELETE FROM ${table} WHERE period_start < $1`, [cutoff]);
          log.info({ table, rows, before: cutoff.toString() }, 'reporting retention: old rollups deleted');
          n += rows;
        }
        return n;
      } catch (e) {
        log.error({ err: (e as Error).message }, 'reporting retention pass failed; will retry');
        await this.storeFailed(e);
        throw e;
      }
    });
  }

  /**
   * Stops the timers and writes everything still pending (the SIGTERM/SIGINT path). If the
   * store will not take them, they go to a spool file the next start replays; if that
   * cannot be written either, it logs a fatal line and rejects with CountsLostError.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    // The shared counts are drained by the first flush; what fails stays pending and is retried.
    for (let attempt = 1; attempt === 1 || this.pending.size > 0; attempt++) {
      try {
        await this.flush();
      } catch {
        if (attempt >= CLOSE_ATTEMPTS) break;
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
    await this.chain;
    let lost: CountsLostError | null = null;
    if (this.pending.size > 0) lost = this.spoolPending();
    try {
      this.conn.close();
    } catch {
      // a connection of an instance already gone
    }
    if (lost) throw lost;
  }

  /** The final flush failed: the pending counts into a spool file. Returns the error if that fails too. */
  private spoolPending(): CountsLostError | null {
    const rows = this.pending.take();
    const counts = { tuples: rows.length, transactions: transactionsIn(rows) };
    try {
      const { path } = writeSpoolFile(this.store.dataDir, rows, CHUNK_ROWS, this.schema.spoolPrefix);
      log.error({ file: path, ...counts }, 'reporting: final flush failed; the counts were written to a spool file that the next start writes into the rollups');
      return null;
    } catch (e) {
      const err = (e as Error).message;
      log.fatal({ dataDir: this.store.dataDir, err, ...counts }, 'reporting: final flush failed and the spool file could not be written; these counts are lost');
      return new CountsLostError(`${counts.transactions} counted transactions (${counts.tuples} tuples) could not be written to the store or to a spool file in ${this.store.dataDir}: ${err}`);
    }
  }
}
