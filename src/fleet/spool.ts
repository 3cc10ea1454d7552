// The fleet's rollup writer: the count sink of a host with --clickhouse-url. Every flush
// interval the pending counts become batches written to the spool (the host's DuckDB,
// table fleet_spool; the impressions' writer has its own, fleet_imp_spool) in one transaction; then the spool is delivered to ClickHouse in
// order, each batch exactly once per table (./delivery.ts), and deleted when both tables
// have it. Spooling never waits on ClickHouse: a ClickHouse that is down or hanging only
// delays delivery, and `kill -9` loses at most the counts of one flush interval (the ones
// still in memory), as with DuckDB alone. During a long outage the batches never attempted
// are merged (one row per tuple), so the spool grows with the distinct tuples, not with
// the number of flush intervals.
import { randomUUID } from 'node:crypto';
import { log } from '../base/log.ts';
import { TupleCounts, tupleKey, type CountRow } from '../counts/tuple.ts';
import type { Store } from '../store/db.ts';
import { CountsLostError } from '../reporting/writer.ts';
import { GRANULARITIES, LOOKUP_FLEET_ROLLUPS, toBatches, type Batch, type FleetRollups } from '../reporting/batches.ts';
import { FleetError, type ClickHouse } from './clickhouse.ts';
import { BatchDelivery, certainlyNotSent } from './delivery.ts';

/** Pending-count bytes when no memory plan sets them (tests, tools). */
const DEFAULT_PENDING_BYTES = 64 << 20;
/** Batches never attempted, beyond which a delivery run first merges them. */
export const MERGE_AFTER_BATCHES = 12;
/** Rows one merge pass reads at most (bounds its memory). */
const MERGE_ROWS = 200_000;

/**
 * The rows of a spooled batch, or null when its text is not a batch's rows. DuckDB's
 * checksummed WAL drops a transaction torn by a crash whole, so this is a damaged file or
 * a hand edit, not a kill: such a batch can never be delivered, and is dropped (logged and
 * counted) rather than blocking every batch behind it.
 */
export function spooledRows(json: string): CountRow[] | null {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    return null;
  }
  if (!Array.isArray(v)) return null;
  const count = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  for (const r of v as unknown[]) {
    if (typeof r !== 'object' || r === null) return null;
    const row = r as Record<string, unknown>;
    if (typeof row.customerId !== 'string' || !count(row.hour) || !count(row.total) || !count(row.givt) || !count(row.sivt)) return null;
    if (!Array.isArray(row.dims) || !row.dims.every((d) => typeof d === 'string')) return null;
  }
  return v as CountRow[];
}

export interface FleetWriterOptions {
  /** Milliseconds between flushes (config.flushInterval × 1000). */
  flushIntervalMs: number;
  /** Bytes the pending counts may take before new tuples fold into the overflow value. */
  maxPendingBytes?: number;
  /** Most milliseconds close() spends delivering before it leaves the rest in the spool. */
  closeDeliveryMs?: number;
  /** Rows per batch (default BATCH_ROWS). */
  batchRows?: number;
  /** False while the ClickHouse schema is not known to exist: delivery waits (default: always ready). */
  ready?: () => boolean;
  /** The process's tuple hash seed, so folded ids agree with the lookup threads'. */
  tupleSeed?: number;
  /** Rows to spool at each flush besides those added: the shared counts, drained. */
  source?: (final: boolean) => CountRow[];
  /** What the rows are and where they go (default: the lookups' rollups, spool fleet_spool). */
  rollups?: FleetRollups;
}

export interface FleetWriterStats {
  pendingTuples: number;
  foldedTuples: number;
  /** Flushes into the spool that succeeded / failed. */
  flushes: number;
  failedFlushes: number;
  /** Rows (at hourly granularity) that reached ClickHouse. */
  rowsWritten: number;
  /** Epoch ms of the last successful flush into the spool; null before the first. */
  lastFlushAt: number | null;
  spoolBatches: number;
  spoolRows: number;
  batchesDelivered: number;
  deliveryFailures: number;
  /** Batch-table pairs found already in ClickHouse when a retry asked (not sent twice). */
  foundOnRetry: number;
  /** Spooled batches merged into fewer during outages. */
  batchesMerged: number;
  /** Epoch ms of the last delivery that emptied the spool; null before the first. */
  lastDeliveredAt: number | null;
  /** Spooled batches (and their rows) dropped because their text was not a batch's rows. */
  droppedBatches: number;
  droppedRows: number;
}

export class FleetWriter {
  private readonly pending: TupleCounts;
  private readonly delivery: BatchDelivery;
  private readonly kind: FleetRollups;
  /** The DuckDB table of this writer's spool (a name of this code, never of a request). */
  private readonly spoolTable: string;
  /** `${batchId}:${g}` pairs ClickHouse confirmed in this run, for batches still spooled. */
  private readonly confirmed = new Set<string>();
  private readonly timers: NodeJS.Timeout[] = [];
  private spoolChain: Promise<unknown> = Promise.resolve();
  private deliveryRun: Promise<void> | null = null;
  private closed = false;
  private seq = 0;
  private readonly counters = {
    flushes: 0,
    failedFlushes: 0,
    rowsWritten: 0,
    lastFlushAt: null as number | null,
    spoolBatches: 0,
    spoolRows: 0,
    batchesDelivered: 0,
    deliveryFailures: 0,
    batchesMerged: 0,
    lastDeliveredAt: null as number | null,
    droppedBatches: 0,
    droppedRows: 0,
  };
  /** Last delivery failure message, logged once per outage rather than every interval. */
  private lastFailure = '';

  private constructor(
    private readonly store: Store,
    private readonly ch: ClickHouse,
    private readonly opts: FleetWriterOptions,
  ) {
    this.pending = new TupleCounts(opts.maxPendingBytes ?? DEFAULT_PENDING_BYTES, { seed: opts.tupleSeed ?? 0 });
    this.kind = opts.rollups ?? LOOKUP_FLEET_ROLLUPS;
    this.spoolTable = this.kind.spoolTable;
    this.delivery = new BatchDelivery(ch, this.kind);
  }

  /** Reads the spool left by an earlier run (delivered first, in order) and starts the flush timer. */
  static async open(store: Store, ch: ClickHouse, opts: FleetWriterOptions): Promise<FleetWriter> {
    const w = new FleetWriter(store, ch, opts);
    const r = await store.one<{ seq: bigint | null; n: bigint; rows: bigint | null }>(
      `SELECT max(seq) AS seq, count(*) AS n, sum(row_count) AS rows FROM ${w.spoolTable}`,
    );
    w.seq = Number(r?.seq ?? 0);
    w.counters.spoolBatches = Number(r?.n ?? 0);
    w.counters.spoolRows = Number(r?.rows ?? 0);
    if (w.counters.spoolBatches > 0) {
      log.info({ rollups: w.kind.name, batches: w.counters.spoolBatches, rows: w.counters.spoolRows }, 'fleet: spooled rollups from an earlier run will be delivered first');
    }
    const t = setInterval(() => {
      w.flush().catch(() => undefined); // logged inside
    }, opts.flushIntervalMs);
    t.unref();
    w.timers.push(t);
    return w;
  }

  /** Count sink: merges deltas in memory; never touches a database. */
  add(rows: CountRow[]): void {
    if (rows.length > 0) this.pending.addRows(rows);
  }

  stats(): FleetWriterStats {
    return {
      ...this.counters,
      pendingTuples: this.pending.size,
      foldedTuples: this.pending.folded,
      foundOnRetry: this.delivery.found,
    };
  }

  /** Moves the pending counts into the spool (one DuckDB transaction). */
  spool(): Promise<void> {
    const next = this.spoolChain.then(() => this.spoolNow());
    this.spoolChain = next.catch(() => undefined);
    return next;
  }

  private async spoolNow(): Promise<void> {
    const rows = this.pending.take();
    const drained = this.opts.source?.(this.closed);
    if (drained && drained.length > 0) for (const r of drained) rows.push(r);
    if (rows.length === 0) {
      this.counters.lastFlushAt = Date.now();
      return;
    }
    const batches = toBatches(rows, randomUUID, this.opts.batchRows);
    const first = this.seq + 1;
    try {
      await this.store.tx(async (q) => {
        for (const [i, b] of batches.entries()) {
          await q.run(`INSERT INTO ${this.spoolTable} (batch_id, seq, rows_json, row_count) VALUES ($1, $2, $3, $4)`, [
            b.batchId,
            first + i,
            JSON.stringify(b.rows),
            b.rows.length,
          ]);
        }
      });
    } catch (e) {
      this.pending.addRows(rows);
      this.counters.failedFlushes++;
      log.error({ rollups: this.kind.name, err: (e as Error).message, tuples: rows.length }, 'fleet: could not write the spool; keeping the counts for the next flush');
      throw e;
    }
    this.seq += batches.length;
    this.counters.flushes++;
    this.counters.lastFlushAt = Date.now();
    this.counters.spoolBatches += batches.length;
    this.counters.spoolRows += rows.length;
  }

  /**
   * Spools the pending counts, then delivers the spool. Rejects when the spool could not
   * be written or ClickHouse did not take everything (the rest stays spooled).
   */
  async flush(): Promise<void> {
    await this.spool();
    await this.deliver();
  }

  /** Delivers spooled batches in order until the spool is empty or one fails. One run at a time. */
  deliver(): Promise<void> {
    if (this.deliveryRun) return this.deliveryRun;
    const run = this.deliverAll().finally(() => {
      if (this.deliveryRun === run) this.deliveryRun = null;
    });
    this.deliveryRun = run;
    return run;
  }

  private async deliverAll(): Promise<void> {
    // Runs here, where no delivery can be under way, so it never merges a batch in flight.
    await this.mergeUnattempted().catch((e: Error) => log.error({ rollups: this.kind.name, err: e.message }, 'fleet: could not merge spooled batches; will retry'));
    if (this.opts.ready && !this.opts.ready()) {
      throw new FleetError('ClickHouse schema not checked yet (is ClickHouse reachable?); rollups stay in the spool', null, false);
    }
    for (;;) {
      const entries = await this.store.all<{ batch_id: string }>(`SELECT batch_id FROM ${this.spoolTable} ORDER BY seq LIMIT 100`);
      if (entries.length === 0) {
        this.counters.lastDeliveredAt = Date.now();
        if (this.lastFailure) log.info('fleet: ClickHouse takes rollups again; the spool is empty');
        this.lastFailure = '';
        return;
      }
      for (const e of entries) {
        try {
          await this.deliverEntry(e.batch_id);
        } catch (err) {
          this.counters.deliveryFailures++;
          const msg = (err as Error).message;
          if (msg !== this.lastFailure) {
            log.warn({ rollups: this.kind.name, err: msg, spooledBatches: this.counters.spoolBatches }, 'fleet: rollup delivery failed; counts stay in the spool and are retried each flush');
          }
          this.lastFailure = msg;
          throw err;
        }
      }
    }
  }

  private async deliverEntry(batchId: string): Promise<void> {
    const r = await this.store.one<{ rows_json: string; attempted: boolean; row_count: number }>(
      `SELECT rows_json, attempted, row_count FROM ${this.spoolTable} WHERE batch_id = $1`,
      [batchId],
    );
    if (!r) return;
    const rows = spooledRows(r.rows_json);
    if (rows === null) {
      await this.drop(batchId, r.row_count, r.rows_json.length, r.attempted);
      return;
    }
    const batch: Batch = { batchId, rows };
    // Recorded before the first INSERT: from then on every attempt asks ClickHouse first.
    if (!r.attempted) await this.store.run(`UPDATE ${this.spoolTable} SET attempted = true WHERE batch_id = $1`, [batchId]);
    let sentHere = false;
    try {
      for (const g of GRANULARITIES) {
        const key = `${batchId}:${g}`;
        if (this.confirmed.has(key)) continue;
        sentHere = true;
        await this.delivery.deliver(g, batch, r.attempted);
        this.confirmed.add(key);
      }
    } catch (e) {
      // Refused at connect on its very first INSERT: nothing left the host, it may still be merged.
      const untouched = !r.attempted && !GRANULARITIES.some((g) => this.confirmed.has(`${batchId}:${g}`));
      if (untouched && sentHere && certainlyNotSent(e)) {
        await this.store.run(`UPDATE ${this.spoolTable} SET attempted = false WHERE batch_id = $1`, [batchId]).catch(() => undefined);
      }
      throw e;
    }
    await this.store.run(`DELETE FROM ${this.spoolTable} WHERE batch_id = $1`, [batchId]);
    for (const g of GRANULARITIES) this.confirmed.delete(`${batchId}:${g}`);
    this.counters.batchesDelivered++;
    this.counters.rowsWritten += batch.rows.length;
    this.counters.spoolBatches = Math.max(0, this.counters.spoolBatches - 1);
    this.counters.spoolRows = Math.max(0, this.counters.spoolRows - batch.rows.length);
  }

  /** Removes a batch whose text is not rows (see spooledRows): logged at level 50 and counted. */
  private async drop(batchId: string, rowCount: number, bytes: number, attempted: boolean): Promise<void> {
    await this.store.run(`DELETE FROM ${this.spoolTable} WHERE batch_id = $1`, [batchId]);
    this.counters.droppedBatches++;
    this.counters.droppedRows += rowCount;
    this.counters.spoolBatches = Math.max(0, this.counters.spoolBatches - 1);
    this.counters.spoolRows = Math.max(0, this.counters.spoolRows - rowCount);
    log.error(
      { rollups: this.kind.name, batchId, rows: rowCount, bytes, attempted, table: this.spoolTable },
      'fleet: a spooled batch is unreadable (damaged spool); dropped, its counts are lost',
    );
  }

  /**
   * Merges batches never attempted into as few as their distinct tuples allow, when more
   * than MERGE_AFTER_BATCHES wait (an outage): one DuckDB transaction, oldest first, at most
   * MERGE_ROWS rows per pass. Counts are summed, never dropped; the merged batches take the
   * place (sequence) of the oldest one.
   */
  private async mergeUnattempted(): Promise<void> {
    const waiting = await this.store.all<{ batch_id: string; seq: bigint; row_count: number }>(
      `SELECT batch_id, seq, row_count FROM ${this.spoolTable} WHERE NOT attempted ORDER BY seq`,
    );
    if (waiting.length <= MERGE_AFTER_BATCHES) return;
    const take: typeof waiting = [];
    let rows = 0;
    for (const w of waiting) {
      if (take.length >= 2 && rows + w.row_count > MERGE_ROWS) break;
      take.push(w);
      rows += w.row_count;
    }
    const merged = new Map<string, CountRow>();
    // An unreadable batch stays where it is, for deliverEntry to drop (logged and counted).
    let left = 0;
    let leftRows = 0;
    const made = await this.store.tx(async (q) => {
      for (const w of take) {
        const r = await q.one<{ rows_json: string }>(`SELECT rows_json FROM ${this.spoolTable} WHERE batch_id = $1 AND NOT attempted`, [w.batch_id]);
        if (!r) throw new Error(`spooled batch ${w.batch_id} changed while merging`);
        const batchRows = spooledRows(r.rows_json);
        if (batchRows === null) {
          left++;
          leftRows += w.row_count;
          continue;
        }
        for (const row of batchRows) {
          const key = tupleKey(row.customerId, row.hour, row.dims);
          const m = merged.get(key);
          if (m) {
            m.total += row.total;
            m.givt += row.givt;
            m.sivt += row.sivt;
          } else {
            merged.set(key, row);
          }
        }
        await q.run(`DELETE FROM ${this.spoolTable} WHERE batch_id = $1`, [w.batch_id]);
      }
      const batches = toBatches([...merged.values()], randomUUID, this.opts.batchRows);
      for (const b of batches) {
        await q.run(`INSERT INTO ${this.spoolTable} (batch_id, seq, rows_json, row_count) VALUES ($1, $2, $3, $4)`, [
          b.batchId,
          Number(take[0]!.seq),
          JSON.stringify(b.rows),
          b.rows.length,
        ]);
      }
      return batches.length;
    });
    this.counters.batchesMerged += take.length - left;
    this.counters.spoolBatches += made - (take.length - left);
    this.counters.spoolRows += merged.size - (rows - leftRows);
    log.info({ rollups: this.kind.name, batches: take.length - left, rows: rows - leftRows, into: merged.size }, 'fleet: spooled batches merged while ClickHouse is away');
  }

  /**
   * The SIGTERM path: stops the timer, spools everything pending (nothing is lost), then
   * delivers for at most closeDeliveryMs; what is left waits in the spool for the next start.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    // Spooling is local (DuckDB): a failure here is a disk problem; two more tries, then give up.
    for (const pause of [0, 200, 400]) {
      if (this.pending.size === 0) break;
      await new Promise((r) => setTimeout(r, pause));
      await this.spool().catch(() => undefined); // logged inside
    }
    // Never a quiet loss: the stop fails (serve exits 1) once delivery below had its chance.
    let lost: CountsLostError | null = null;
    if (this.pending.size > 0) {
      const tuples = this.pending.size;
      log.fatal({ rollups: this.kind.name, tuples }, 'fleet: final spool write failed; these counts are lost');
      lost = new CountsLostError(`${tuples} counted tuples could not be written to the spool (${this.spoolTable} in ${this.store.path})`);
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((r) => {
      timer = setTimeout(() => r('late'), this.opts.closeDeliveryMs ?? 5000);
    });
    const outcome = await Promise.race([this.deliver().then(() => 'done' as const, () => 'failed' as const), deadline]);
    clearTimeout(timer);
    if (outcome !== 'done') {
      log.warn({ rollups: this.kind.name, batches: this.counters.spoolBatches, rows: this.counters.spoolRows }, 'fleet: rollups left in the spool; they are delivered after the next start');
    }
    // A delivery still in flight ends with the connection (closed by the caller); the
    // batch it carried is resolved by its marker after the next start.
    if (lost) throw lost;
  }

  /** Resolves when a delivery run in progress has ended (after close, before the store closes). */
  async settled(): Promise<void> {
    await this.deliveryRun?.catch(() => undefined);
  }
}
