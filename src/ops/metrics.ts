// GET /metrics on a listener of its own (--metrics-host, loopback by default, and
// --metrics-port; every role, never on the lookup or account ports): Prometheus text from
// prom-client. Lookup figures arrive as the lookup threads' per-second LookupStats (a
// count sink, main thread); everything else is read from its owner at scrape time.
import { Counter, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { DataBundle, DataFile } from '../data/bundle.ts';
import type { RefreshStatus } from '../data/refresh.ts';
import { Router, listen, type Listener } from '../http/router.ts';
import { log } from '../base/log.ts';
import { LATENCY_BUCKETS_US, type LookupStats } from '../prebid/messages.ts';
import type { FlushStats } from '../reporting/service.ts';
import { versionInfo } from './version.ts';
import { FAIL_OPEN_REASONS, UPSTREAM_BUCKETS_US, type FilterStats } from '../prebid/filter/filter-stats.ts';

export const METRICS_PATH = '/metrics';

export interface MetricsSources {
  /** The data the lookups serve now (replaced on reload). */
  bundle(): DataBundle;
  threads: number;
  /** Lookup threads listening now, and replacement threads started since start (supervision). */
  liveThreads?(): number;
  threadRestarts?(): number;
  /** Pre-bid keys the lookup threads accept now. */
  keysLoaded(): number;
  /** The reporting writer, once reporting runs. */
  flushStats?(): FlushStats | null;
  /** The data refresher's view of its sources (DataRefresher.status()), when there is one. */
  refreshStatus?: (() => RefreshStatus) | undefined;
  /** Bytes of each part of the memory budget (fixed at start), and how full each shared table is (0..1). */
  memory?(): { parts: Record<string, number>; occupancy: Record<string, number> };
  /** The latest time this build and its embedded data provably exist at (ms; knownCurrentMs). */
  knownCurrentMs?: number;
  /** The on-disk tuple archive's counters (src/reporting/tuple-archive.ts), when it runs. */
  tupleArchive?(): { written: number; dropped: number; failedWrites: number; found: number } | null;
}

interface Sample {
  value: number;
  labels?: Record<string, string>;
  /** For histogram series: name_bucket, name_sum, name_count. */
  metricName?: string;
}

/**
 * A metric whose samples are computed at scrape time from state someone else owns (a
 * cumulative histogram, a writer's counters). prom-client registers any object with
 * name/help/type/get(); its TypeScript union lists only its own classes, hence the cast.
 */
function register(registry: Registry, name: string, help: string, type: 'counter' | 'gauge' | 'histogram', samples: () => Sample[]): void {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum',
    collect: () => undefined,
    reset: () => undefined,
    get: async () => ({ name, help, type, aggregator: 'sum', values: samples().map((s) => ({ labels: {}, ...s })) }),
  };
  registry.registerMetric(metric as unknown as Metric);
}

const seconds = (iso: string | null | undefined): number | null => {
  if (!iso) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms / 1000;
};

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'status'>;
  private readonly bands: Counter<'band'>;
  private readonly overflowed: Counter;
  private readonly cacheLookups: Counter<'cache' | 'result'>;
  /** Each lookup thread's last report: its V8 heap (used, reserved), its busy share, the filter it runs ('' for the pre-bid port's). */
  private readonly threadReports = new Map<number, { heapUsed: number; heapTotal: number; busy: number; filter: string }>();
  private readonly lockTimeouts: Counter;
  private readonly beacons: Counter<'outcome'>;
  private readonly seenEvictedLive: Counter;
  private readonly heldUnsent: Counter;
  /** Lookup latency: per-bucket (not cumulative) counts, last slot is +Inf. */
  private readonly latency = new Array<number>(LATENCY_BUCKETS_US.length + 1).fill(0);
  private latencySumUs = 0;
  private readonly reportBounds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
  private readonly reportBuckets = new Array<number>(this.reportBounds.length + 1).fill(0);
  private reportSum = 0;
  /** Filters (src/filter/): requests by outcome, fail-opens by reason, and the upstream's answer times (per-bucket counts, last +Inf), by filter. */
  private readonly filterRequests: Counter<'filter' | 'outcome'>;
  private readonly filterFailOpen: Counter<'filter' | 'reason'>;
  private readonly filterLatency = new Map<string, { buckets: number[]; sumUs: number }>();
  /** Filters' refusals for memory (`request`: over the held-bytes cap; `connection`: over their connection limit), and their held bytes (now, peak of the last second). */
  private readonly filterOverCap: Counter<'filter' | 'what'>;
  private readonly filterHeld = new Map<string, [number, number]>();

  constructor(private readonly sources: MetricsSources) {
    const r = this.registry;
    collectDefaultMetrics({ register: r }); // process_resident_memory_bytes, heap, event-loop lag, fds …

    this.requests = new Counter({ name: 'ivtd_lookup_requests_total', help: 'Requests on the pre-bid port by HTTP status (health checks excluded).', labelNames: ['status'], registers: [r] });
    this.bands = new Counter({ name: 'ivtd_lookups_total', help: 'Answered lookups by botRisk band.', labelNames: ['band'], registers: [r] });
    this.overflowed = new Counter({ name: 'ivtd_lookup_overflow_transactions_total', help: 'Transactions whose free-text dimensions were folded into __overflow__ (too many distinct tuples).', registers: [r] });
    this.cacheLookups = new Counter({ name: 'ivtd_verdict_cache_lookups_total', help: 'Shared UA and IP verdict cache lookups by result (a miss parses the UA or reads the IP databases).', labelNames: ['cache', 'result'], registers: [r] });
    this.beacons = new Counter({ name: 'ivtd_impression_beacons_total', help: 'Impression beacons (GET /api/v1/ivt/imp) by outcome: valid, replay, mismatch, expired; refused (a garbled or forged lid, 400/405), unavailable (503), internal (500).', labelNames: ['outcome'], registers: [r] });
    this.seenEvictedLive = new Counter({ name: 'ivtd_impression_seen_evictions_total', help: 'Lids still within --imp-ttl dropped from the seen-lids table for room (a replay of one passes as valid): raise --memory-budget if it grows.', registers: [r] });
    this.heldUnsent = new Counter({ name: 'ivtd_answers_held_unsent_total', help: 'Pre-bid answers held because their connection still had unsent answers (a client not reading them); a connection that sends again while one is held is closed.', registers: [r] });
    this.lockTimeouts = new Counter({ name: 'ivtd_shared_lock_timeouts_total', help: 'Shared-table updates that went ahead after waiting the spin limit for a bucket lock (should stay near 0).', registers: [r] });
    register(r, 'ivtd_lookup_thread_heap_bytes', 'V8 heap of each lookup thread (state used or reserved), reported once a second.', 'gauge', () =>
      [...this.threadReports].flatMap(([thread, { heapUsed: used, heapTotal: total }]) => [
        { value: used, labels: { thread: String(thread), state: 'used' } },
        { value: total, labels: { thread: String(thread), state: 'reserved' } },
      ]),
    );
    register(r, 'ivtd_lookup_thread_busy_ratio', "Share of the last second each lookup thread's event loop spent working rather than waiting (0-1): near 1, that thread is the bottleneck (more --threads, or for a filter's thread, labelled filter, more filters: docs/filter.md, Sizing).", 'gauge', () =>
      [...this.threadReports].map(([thread, { busy, filter }]): Sample => ({ value: busy, labels: filter === '' ? { thread: String(thread) } : { thread: String(thread), filter } })),
    );
    register(r, 'ivtd_clock_behind_seconds', 'How far the system clock reads earlier than the build or its newest embedded data (0 when it does not): fix the clock (NTP); UA version checks hold at the build date meanwhile.', 'gauge', () => [
      { value: Math.max(0, ((sources.knownCurrentMs ?? 0) - Date.now()) / 1000) },
    ]);
    register(r, 'ivtd_tuple_archive_tuples_total', 'Reporting tuples the archive of the last --imp-ttl handled, by outcome: written to reporting_tuple_ids, dropped (too many waiting while writes failed: their impressions count as __overflow__ after a restart), found for an impression of an earlier run.', 'counter', () => {
      const a = sources.tupleArchive?.();
      return a ? [{ value: a.written, labels: { outcome: 'written' } }, { value: a.dropped, labels: { outcome: 'dropped' } }, { value: a.found, labels: { outcome: 'found' } }] : [];
    });
    register(r, 'ivtd_tuple_archive_write_failures_total', 'Writes to reporting_tuple_ids that failed (a full disk; retried at the next flush): should stay 0.', 'counter', () => {
      const a = sources.tupleArchive?.();
      return a ? [{ value: a.failedWrites }] : [];
    });
    register(r, 'ivtd_memory_budget_bytes', 'The memory budget (--memory-budget) by part: fixed at start, whatever the traffic.', 'gauge', () => {
      const m = sources.memory?.();
      return m ? Object.entries(m.parts).map(([part, value]) => ({ value, labels: { part } })) : [];
    });
    register(r, 'ivtd_shared_table_occupancy_ratio', 'Share of the slots of each shared table in use (history and verdict caches; sampled).', 'gauge', () => {
      const m = sources.memory?.();
      return m ? Object.entries(m.occupancy).map(([table, value]) => ({ value, labels: { table } })) : [];
    });

    const bucketSamples = (name: string, boundsSec: readonly number[], counts: readonly number[], sum: number): Sample[] => {
      const out: Sample[] = [];
      let cumulative = 0;
      for (let i = 0; i < counts.length; i++) {
        cumulative += counts[i]!;
        const le = i < boundsSec.length ? String(boundsSec[i]) : '+Inf';
        out.push({ metricName: `${name}_bucket`, labels: { le }, value: cumulative });
      }
      out.push({ metricName: `${name}_sum`, value: sum }, { metricName: `${name}_count`, value: cumulative });
      return out;
    };
    const latencyBounds = LATENCY_BUCKETS_US.map((us) => us / 1e6);
    register(r, 'ivtd_lookup_duration_seconds', 'Time to answer a request on the pre-bid port, measured in the lookup thread.', 'histogram', () =>
      bucketSamples('ivtd_lookup_duration_seconds', latencyBounds, this.latency, this.latencySumUs / 1e6),
    );
    this.filterRequests = new Counter({ name: 'ivtd_filter_requests_total', help: 'Requests through each filter (docs/filter.md) by outcome: forwarded, blocked (no-bid for the verdict), would_block (monitor mode: forwarded, counted), upstream_error and upstream_timeout (answered no-bid), refused (body over the limit, 413).', labelNames: ['filter', 'outcome'], registers: [r] });
    this.filterFailOpen = new Counter({ name: 'ivtd_filter_fail_open_total', help: 'Requests a filter sent on without a verdict (fail open), by reason: not_ready, unknown_partner, media_type, unparseable, refused (the ortb lookup refused it), internal.', labelNames: ['filter', 'reason'], registers: [r] });
    this.filterOverCap = new Counter({ name: 'ivtd_filter_over_cap_total', help: "Refused for memory by each filter: what=request (answered no-bid as an upstream error: holding it or its upstream's answer would pass the filter's held-bytes cap, the memory budget's filter_held part), what=connection (closed as it came: the filter had its most client connections open).", labelNames: ['filter', 'what'], registers: [r] });
    register(r, 'ivtd_filter_held_bytes', "Bytes of requests and upstream answers each filter holds (state=now at its last report, state=peak over the second before it), against its cap (ivtd_memory_budget_bytes{part=\"filter_held\"} / filters).", 'gauge', () =>
      [...this.filterHeld].flatMap(([filter, [now, peak]]) => [
        { value: now, labels: { filter, state: 'now' } },
        { value: peak, labels: { filter, state: 'peak' } },
      ]),
    );
    const upstreamBounds = UPSTREAM_BUCKETS_US.map((us) => us / 1e6);
    register(r, 'ivtd_filter_upstream_duration_seconds', 'Time from a filter sending a request to the upstream to its whole answer.', 'histogram', () =>
      [...this.filterLatency].flatMap(([filter, h]) => bucketSamples('ivtd_filter_upstream_duration_seconds', upstreamBounds, h.buckets, h.sumUs / 1e6).map((x) => ({ ...x, labels: { ...x.labels, filter } }))),
    );
    register(r, 'ivtd_report_query_duration_seconds', 'Time of a reporting query (reporting API and dashboard).', 'histogram', () =>
      bucketSamples('ivtd_report_query_duration_seconds', this.reportBounds, this.reportBuckets, this.reportSum),
    );

    register(r, 'ivtd_lookup_threads', 'Lookup worker threads (--threads).', 'gauge', () => [{ value: sources.threads }]);
    register(r, 'ivtd_lookup_threads_live', 'Lookup threads listening now (below ivtd_lookup_threads while a failed one is being replaced).', 'gauge', () => [
      { value: sources.liveThreads?.() ?? sources.threads },
    ]);
    register(r, 'ivtd_lookup_thread_restarts_total', 'Lookup threads started to replace one that failed.', 'counter', () => [{ value: sources.threadRestarts?.() ?? 0 }]);
    register(r, 'ivtd_prebid_keys_loaded', 'Pre-bid API keys the lookup threads accept.', 'gauge', () => [{ value: sources.keysLoaded() }]);

    const info = versionInfo();
    register(r, 'ivtd_build_info', 'Version and build date of this ivtd (value is always 1).', 'gauge', () => [
      { value: 1, labels: { version: info.version, built_at: info.builtAt, node: info.node } },
    ]);
    const embeddedAsn = seconds(info.data.asn?.builtAt);
    register(r, 'ivtd_data_loaded_timestamp_seconds', 'When the data in use was loaded (start or last successful reload).', 'gauge', () => [
      { value: seconds(sources.bundle().loadedAt) ?? 0 },
    ]);
    register(r, 'ivtd_data_age_seconds', 'Seconds since the data in use was loaded.', 'gauge', () => [
      { value: Math.max(0, Date.now() / 1000 - (seconds(sources.bundle().loadedAt) ?? 0)) },
    ]);
    register(r, 'ivtd_data_file_timestamp_seconds', 'Date of each data file in use: its modified time, or for the embedded ASN table its build date.', 'gauge', () =>
      dataFiles(sources.bundle()).flatMap((f) => {
        const embedded = f.modified === null;
        const ts = embedded ? (f.name === 'asn.bin' ? embeddedAsn : null) : seconds(f.modified);
        return ts === null ? [] : [{ value: ts, labels: { file: f.name, origin: embedded ? 'embedded' : 'file' } }];
      }),
    );

    this.registerRefresh();

    const flush = () => sources.flushStats?.() ?? null;
    register(r, 'ivtd_reporting_pending_tuples', 'Counted tuples waiting in memory for the next reporting flush.', 'gauge', () => {
      const f = flush();
      return f ? [{ value: f.pendingTuples }] : [];
    });
    register(r, 'ivtd_reporting_flushes_total', 'Reporting flushes to the store, by result.', 'counter', () => {
      const f = flush();
      return f ? [{ value: f.flushes, labels: { result: 'ok' } }, { value: f.failedFlushes, labels: { result: 'failed' } }] : [];
    });
    register(r, 'ivtd_reporting_rows_written_total', 'Rollup rows written to the store.', 'counter', () => {
      const f = flush();
      return f ? [{ value: f.rowsWritten }] : [];
    });
    register(r, 'ivtd_reporting_rows_quarantined_total', 'Rollup rows the store refused for their own content (a constraint, a conversion): logged once each and dropped, the rest of their flush written.', 'counter', () => {
      const f = flush();
      return f?.rowsQuarantined === undefined ? [] : [{ value: f.rowsQuarantined }];
    });
    register(r, 'ivtd_reporting_flush_lag_seconds', 'How far reporting is behind: seconds since the last successful flush while counts are pending, else 0.', 'gauge', () => {
      const f = flush();
      if (!f || f.lastFlushAt === undefined) return [];
      if (f.pendingTuples === 0) return [{ value: 0 }];
      // Before the first flush, lag counts from when this process started.
      const since = f.lastFlushAt ?? Date.now() - process.uptime() * 1000;
      return [{ value: Math.max(0, (Date.now() - since) / 1000) }];
    });
  }

  /** Per-source freshness of the refreshed data (ivtd data update / --data-refresh). */
  private registerRefresh(): void {
    const r = this.registry;
    const status = () => this.sources.refreshStatus?.() ?? null;
    const now = () => Date.now() / 1000;
    const perSource = (pick: (s: RefreshStatus['sources'][number]) => number | null) => (): Sample[] =>
      (status()?.sources ?? []).flatMap((s) => {
        const v = pick(s);
        return v === null ? [] : [{ value: v, labels: { source: s.name, kind: s.kind } }];
      });
    register(r, 'ivtd_data_source_up', 'Whether the last fetch of each data source succeeded (1) or failed and its previous data stays in use (0).', 'gauge',
      perSource((s) => (s.status === 'never' ? null : s.status === 'ok' ? 1 : 0)));
    register(r, 'ivtd_data_source_age_seconds', 'Seconds since each data source was last fetched or confirmed current (304).', 'gauge',
      perSource((s) => (s.successAt === null ? null : Math.max(0, now() - s.successAt / 1000))));
    register(r, 'ivtd_data_source_last_success_timestamp_seconds', 'When each data source last succeeded.', 'gauge',
      perSource((s) => (s.successAt === null ? null : s.successAt / 1000)));
    register(r, 'ivtd_data_source_failures', 'Consecutive failed fetches of each data source.', 'gauge', perSource((s) => s.failures));
    register(r, 'ivtd_data_source_entries', 'Ranges (or database bytes, for MaxMind) in the last good copy of each data source.', 'gauge', perSource((s) => s.entries));
    register(r, 'ivtd_sellers_json_domains', 'sellers.json files kept current by the refresher, by last result.', 'gauge', () => {
      const s = status()?.sellers;
      return s ? (['ok', 'failed', 'never'] as const).map((k) => ({ value: s[k], labels: { status: k } })) : [];
    });
    register(r, 'ivtd_sellers_json_oldest_age_seconds', 'Age of the least recently confirmed sellers.json file.', 'gauge', () => {
      const at = status()?.sellers.oldestSuccessAt;
      return at ? [{ value: Math.max(0, now() - at / 1000) }] : [];
    });
    register(r, 'ivtd_ads_txt_domains', 'Domains of the ads.txt (site) and app-ads.txt (app) crawl, by status.', 'gauge', () => {
      const a = status()?.adsTxt;
      if (!a?.enabled) return [];
      return (['site', 'app'] as const).flatMap((kind) => Object.entries(a[kind]).map(([st, n]) => ({ value: n, labels: { kind, status: st } })));
    });
    register(r, 'ivtd_ads_txt_oldest_age_seconds', 'Age of the least recently confirmed ads.txt / app-ads.txt copy in use.', 'gauge', () => {
      const at = status()?.adsTxt.oldestGoodAt;
      return at ? [{ value: Math.max(0, now() - at / 1000) }] : [];
    });
  }

  /** Count sink for RunningServer.countSinks: one call per lookup thread per second. */
  /** A lookup the main thread's listener answered 503 while no lookup thread was alive. */
  recordUnavailable(): void {
    this.requests.inc({ status: '503' });
  }

  recordLookups(stats: LookupStats): void {
    for (const status in stats.byStatus) this.requests.inc({ status }, stats.byStatus[status]!);
    for (const band in stats.byBand) this.bands.inc({ band }, stats.byBand[band]!);
    for (let i = 0; i < this.latency.length; i++) this.latency[i]! += stats.latency[i] ?? 0;
    this.latencySumUs += stats.latencySumUs;
    if (stats.overflowed > 0) this.overflowed.inc(stats.overflowed);
    this.cacheLookups.inc({ cache: 'ua', result: 'hit' }, stats.uaHits);
    this.cacheLookups.inc({ cache: 'ua', result: 'miss' }, stats.uaMisses);
    this.cacheLookups.inc({ cache: 'ip', result: 'hit' }, stats.ipHits);
    this.cacheLookups.inc({ cache: 'ip', result: 'miss' }, stats.ipMisses);
    if (stats.contended > 0) this.lockTimeouts.inc(stats.contended);
    for (const outcome in stats.beacons) this.beacons.inc({ outcome }, stats.beacons[outcome]!);
    if (stats.seenEvictedLive > 0) this.seenEvictedLive.inc(stats.seenEvictedLive);
    if (stats.heldUnsent > 0) this.heldUnsent.inc(stats.heldUnsent);
    if (stats.heapTotal > 0) this.threadReports.set(stats.thread, { heapUsed: stats.heapUsed, heapTotal: stats.heapTotal, busy: stats.busy, filter: stats.filter?.name ?? '' });
    if (stats.filter) this.recordFilter(stats.filter);
  }

  /** A thread that ended for good (a filter a reload removed): its heap gauge goes. */
  forgetThread(thread: number): void {
    this.threadReports.delete(thread);
  }

  private recordFilter(f: FilterStats): void {
    const filter = f.name;
    const outcomes: Array<[string, number]> = [['forwarded', f.forwarded], ['blocked', f.blocked], ['would_block', f.wouldBlock], ['upstream_error', f.upstreamErrors], ['upstream_timeout', f.timeouts], ['refused', f.refused]];
    // Every outcome appears from the first report on, at 0 when none happened (rate() needs the series).
    for (const [outcome, n] of outcomes) this.filterRequests.inc({ filter, outcome }, n);
    for (const reason of FAIL_OPEN_REASONS) this.filterFailOpen.inc({ filter, reason }, f.failOpen[reason] ?? 0);
    this.filterOverCap.inc({ filter, what: 'request' }, f.overCap);
    this.filterOverCap.inc({ filter, what: 'connection' }, f.droppedConnections);
    this.filterHeld.set(filter, [f.heldBytes, f.heldPeakBytes]);
    let h = this.filterLatency.get(filter);
    if (h === undefined) this.filterLatency.set(filter, (h = { buckets: new Array<number>(UPSTREAM_BUCKETS_US.length + 1).fill(0), sumUs: 0 }));
    for (let i = 0; i < h.buckets.length; i++) h.buckets[i]! += f.upstreamLatency[i] ?? 0;
    h.sumUs += f.upstreamLatencySumUs;
  }

  /** Hook for the reporting engine: one call per query. */
  observeReportQuery(durationSeconds: number): void {
    let b = 0;
    while (b < this.reportBounds.length && durationSeconds > this.reportBounds[b]!) b++;
    this.reportBuckets[b]!++;
    this.reportSum += durationSeconds;
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** Adds GET /metrics to a main-thread router. */
  mount(router: Router): void {
    router.get(METRICS_PATH, async (ctx) => {
      const body = await this.text();
      ctx.res.writeHead(200, { 'Content-Type': this.registry.contentType, 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body) });
      ctx.res.end(ctx.method === 'HEAD' ? undefined : body);
    });
  }
}

/** The /metrics listener: GET/HEAD /metrics and nothing else (404 for any other path). */
export async function startMetricsListener(host: string, port: number, metrics: ServiceMetrics): Promise<Listener> {
  const router = new Router();
  metrics.mount(router);
  const listener = await listen(router, host, port, 'metrics');
  log.info({ host, port: listener.port }, 'metrics listening');
  return listener;
}

function dataFiles(b: DataBundle): Array<Pick<DataFile, 'name' | 'modified'>> {
  const all = [b.asnBin, b.asnMmdb, b.countryMmdb, b.anonymousIpMmdb, b.hostingAsns, b.vpnAsns, b.hostingOrgPatterns, b.badIfas, ...b.sellers];
  return [...all.filter((f): f is DataFile => f !== null), ...b.ipRanges.files];
}
