// Reporting as the server wires it: one rollup writer (the count sink), one query engine
// and one per-customer rate limiter, shared by the Basic listener and the Bearer route.
import { availableParallelism } from 'node:os';
import type { Config } from '../base/config.ts';
import type { Listener } from '../http/router.ts';
import type { TlsCredentials } from '../http/tls.ts';
import type { Store } from '../store/db.ts';
import { startReportingApi } from './api.ts';
import { ReportEngine, type ImpressionRow, type ReportSource } from './engine.ts';
import { IMPRESSION_COUNTERS, IMPRESSION_TABLES, INTEGER_DIMENSIONS } from './columns.ts';
import { TUPLE_DIMENSIONS } from '../base/enums.ts';
import { RateLimiter } from './rate-limit.ts';
import type { CountRow } from '../counts/tuple.ts';
import { RollupWriter, type RollupSchema } from './writer.ts';
import { CalibrationReport, type BeaconLabels } from './calibration.ts';

/** The impressions' rollups: the lookup's dimensions, band and imp_status (migration 90). */
export const IMPRESSION_ROLLUPS: RollupSchema = {
  tables: IMPRESSION_TABLES,
  dims: [...TUPLE_DIMENSIONS, 'band', 'imp_status'],
  integerDims: INTEGER_DIMENSIONS as ReadonlySet<string>,
  counters: IMPRESSION_COUNTERS,
  spoolPrefix: 'impressions-spool-',
};

/** What the reporting writer tells about its flushes (RollupWriter.stats() fits). */
export interface FlushStats {
  pendingTuples: number;
  flushes: number;
  failedFlushes: number;
  rowsWritten: number;
  /** Rows the store refused for their own content, logged and dropped. */
  rowsQuarantined?: number;
  /** Epoch ms of the last successful flush; without it no flush lag is exported. */
  lastFlushAt?: number | null;
}

/** The count sink and its flushes: RollupWriter (DuckDB) or the fleet's spool writer. */
export interface CountWriter {
  /** The rows become the writer's (it may keep them as they are). */
  add(rows: CountRow[]): void;
  flush(): Promise<void>;
  close(): Promise<void>;
  stats(): FlushStats;
}

/** Where counts and reports go instead of DuckDB (fleet mode, src/fleet). */
export interface ReportingBackend {
  writer: CountWriter;
  source: ReportSource;
  /** The impressions' writer, report source and calibration labels (ClickHouse in a fleet). */
  impressions?: { writer: CountWriter; source: ReportSource; beacons: BeaconLabels };
}

export interface Reporting {
  writer: CountWriter;
  engine: ReportEngine;
  /**
   * The impressions' rollups (docs/post-bid.md): their writer and report, in the local
   * DuckDB, or through the fleet's spool into ClickHouse (the backend's).
   */
  impressions: { writer: CountWriter; engine: ReportEngine<ImpressionRow> };
  /** Per band, lookups labelled after the fact and the invalid share (calibration.ts). */
  calibration: CalibrationReport;
  limiter: RateLimiter;
  /** Starts the Basic-auth listener on config.reportingPort (HTTPS with `tls`). */
  listen(tls?: TlsCredentials | null): Promise<Listener>;
}

/**
 * DuckDB threads for queries and writes: the cores left after the lookup threads and the
 * main thread, at least one. A report then cannot take the lookup threads' cores.
 */
export function storeThreads(lookupThreads: number, cores = availableParallelism()): number {
  return Math.max(1, cores - lookupThreads - 1);
}

export async function openReporting(
  config: Config,
  store: Store,
  opts: {
    pendingBytes: number;
    storeBytes: number;
    tupleSeed: number;
    source?: (final: boolean) => CountRow[];
    /** The impression rows of each flush (impression-dictionary.ts). */
    impressionSource?: (final: boolean) => CountRow[];
    backend?: ReportingBackend | undefined;
  },
): Promise<Reporting> {
  // Global DuckDB settings: they bound every query of this instance. A query uses the
  // shared pool plus its calling thread, so reports also run one at a time (the engine's
  // default) to stay within these cores.
  // Set through the store, which applies them again if it has to reopen DuckDB.
  await store.set('threads', storeThreads(config.threads));
  // DuckDB's default is 80 % of the machine's RAM; it is part of the memory budget here.
  await store.set('memory_limit', `'${Math.floor(opts.storeBytes / 1048576)}MB'`);
  // Rollup rows have no order to keep; DuckDB then buffers less while inserting.
  await store.set('preserve_insertion_order', 'false');
  const writer =
    opts.backend?.writer ??
    (await RollupWriter.open(store, {
      flushIntervalMs: config.flushInterval * 1000,
      retentionDays: config.retentionDays,
      maxPendingBytes: opts.pendingBytes,
      tupleSeed: opts.tupleSeed,
      ...(opts.source ? { source: opts.source } : {}),
    }));
  const engine = new ReportEngine(opts.backend?.source ?? store, { retentionDays: config.retentionDays });
  const fleetImpressions = opts.backend?.impressions;
  const impressions = {
    writer: fleetImpressions?.writer ?? await RollupWriter.open(store, {
      flushIntervalMs: config.flushInterval * 1000,
      retentionDays: config.retentionDays,
      maxPendingBytes: Math.floor(opts.pendingBytes / 4),
      tupleSeed: opts.tupleSeed ^ 0x1a9e55,
      schema: IMPRESSION_ROLLUPS,
      ...(opts.impressionSource ? { source: opts.impressionSource } : {}),
    }),
    engine: new ReportEngine<ImpressionRow>(fleetImpressions?.source ?? store, { retentionDays: config.retentionDays, kind: 'impressions' }),
  };
  const limiter = new RateLimiter(config.reportRate, config.reportBurst);
  const calibration = new CalibrationReport(store, { retentionDays: config.retentionDays, ...(fleetImpressions ? { beacons: fleetImpressions.beacons } : {}) });
  return {
    writer,
    engine,
    impressions,
    calibration,
    limiter,
    listen: (tls) => startReportingApi({ host: config.host, port: config.reportingPort, store, engine, impressions: impressions.engine, calibration, limiter, tls }),
  };
}
