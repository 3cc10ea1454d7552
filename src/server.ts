// `ivtd serve`: the main thread. Opens the store, loads the data, starts the lookup
// threads and the control socket (and the account/reporting listeners), and handles
// SIGHUP (reload) and SIGTERM/SIGINT (drain, flush, exit 0).
import { mountFeedbackRoutes } from './account/feedback-routes.ts';
import { ImpressionDictionary } from './reporting/impression-dictionary.ts';
import { loadOrCreateLidSecret, saveLidSecret } from './prebid/lid-secret.ts';
import { diffConfig, type Config } from './config.ts';
import { knownCurrentMs, versionInfo } from './ops/version.ts';
import { setVersionFloor } from './signals/ua-analysis.ts';
import { describeBundle, loadBundle, type DataBundle } from './data/bundle.ts';
import { log } from './log.ts';
import { describePlan, planMemory } from './memory/budget.ts';
import { allocateLookupMemory } from './lookup-memory.ts';
import { SharedCounts } from './reporting/shared-counts.ts';
import { TupleDictionary } from './reporting/tuple-dictionary.ts';
import { buildLookupData } from './prebid/data.ts';
import type { CountRow } from './reporting/tuple.ts';
import { LookupEngine } from './prebid/pipeline.ts';
import type { LookupStats, SeenValues } from './prebid/messages.ts';
import { mountExplainRoute } from './account/explain-route.ts';
import { LookupServer } from './prebid/lookup-threads.ts';
import { startControlServer } from './provisioning/control.ts';
import type { ReloadOutcome } from './provisioning/operations.ts';
import { startAccountApi } from './account/api.ts';
import { mountDashboard } from './dashboard/static.ts';
import { mountReportRoute } from './reporting/api.ts';
import { openReporting } from './reporting/service.ts';
import { CountsLostError } from './reporting/writer.ts';
import { ServiceMetrics, startMetricsListener } from './ops/metrics.ts';
import { Store } from './store/db.ts';
import { activePrebidKeys } from './store/api-keys.ts';
import { ensureFirstCustomer } from './store/customers.ts';
import { startFleet, type Fleet } from './fleet/fleet.ts';
import type { BotIpRow } from './prebid/bot-ip-tracker.ts';
import { BotIpTally } from './prebid/bot-ip-tracker.ts';
import { EDGE_PROVISIONING_REFUSAL } from './fleet/edge.ts';
import { refresherFor, type DataRefresher } from './data/refresh.ts';
import { SourcesError } from './data/sources.ts';
import type { HttpGetOptions } from './data/http-get.ts';
import { PolicyService, type PolicySource, type PolicyUpdate } from './policy/service.ts';
import { policyVersions, readPolicy } from './store/policies.ts';
import { planTlsReload, tlsFromConfig, type TlsCredentials, type TlsPair } from './http/tls.ts';

export interface RunningServer {
  config: Config;
  store: Store;
  /** Bound ports; 0 for a listener this role does not open (an edge has no api or reporting). */
  ports: { prebid: number; api: number; reporting: number; metrics: number };
  /** Main-thread engine over the same data and shared state, for the admin-side explain tool. */
  explainEngine(): LookupEngine;
  /** Re-reads the data files (with `next`'s paths when given); on failure the old data keeps serving. */
  reload(next?: Config): Promise<{ ok: boolean; errors: string[] }>;
  refreshKeys(): Promise<void>;
  stop(): Promise<void>;
  /** Hooks later parts register: each receives count deltas from the lookup threads. */
  countSinks: Array<(rows: CountRow[], stats: LookupStats) => void>;
  bundle: DataBundle;
  /** Reporting rollups: flush() writes the pending counts now (tests, benchmarks). */
  /** flush: the lookups' counts; flushImpressions: the impressions' (tests). */
  reporting?: { flush(): Promise<void>; flushImpressions(): Promise<void> };
  /** Prometheus metrics, served as GET /metrics on --metrics-host:--metrics-port. */
  metrics: ServiceMetrics;
  /** The lookup threads' supervisor (thread counts, fault injection in tests). */
  lookups: LookupServer;
  /** This host's part in a fleet (--clickhouse-url), else null. */
  fleet: Fleet | null;
  /**
   * The data refresher (null when there is no usable sources file). Its timers run only
   * with --data-refresh; noteDomainsSeen / noteAppsSeen / noteSellersSeen feed the crawl.
   */
  refresher: DataRefresher | null;
  /** Customers' compiled policies (src/policy). */
  policies: PolicyService;
  /** The TLS pair of the account and reporting ports (null: plain HTTP). */
  tls: TlsCredentials | null;
}

/** How long the start waits for the fleet's lookup-id secret before signing with its own. */
const LID_SECRET_WAIT_MS = 5000;
const LID_SECRET_RETRY_MS = 30_000;

/**
 * The fleet's lookup-id secret (src/fleet/lid-secret.ts), kept in this host's lid.key. While
 * ClickHouse is away the host signs with its own and keeps asking; a secret agreed later is
 * saved for the next start (the running threads keep theirs: the log says to restart).
 */
async function fleetLidSecret(fleet: Fleet, dataDir: string, local: Uint8Array, cleanup: Array<() => Promise<void> | void>): Promise<Uint8Array> {
  const agree = async (): Promise<Uint8Array> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        fleet.lidSecret(local),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('no answer from ClickHouse')), LID_SECRET_WAIT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
  const keep = (secret: Uint8Array): boolean => {
    if (Buffer.from(secret).equals(Buffer.from(local))) return false;
    saveLidSecret(dataDir, secret);
    return true;
  };
  try {
    const secret = await agree();
    keep(secret);
    return secret;
  } catch (e) {
    log.warn({ err: (e as Error).message }, "fleet: the fleet's lookup-id secret is not known yet; this host signs lids with its own (other hosts refuse their beacons) and keeps asking");
    const timer = setInterval(() => {
      agree()
        .then((secret) => {
          clearInterval(timer);
          if (keep(secret)) log.warn({}, "fleet: the fleet's lookup-id secret is now in lid.key; restart this host to sign with it");
        })
        .catch(() => undefined);
    }, LID_SECRET_RETRY_MS);
    timer.unref();
    cleanup.unshift(() => clearInterval(timer));
    return local;
  }
}

/** Values the lookup threads saw, to the refresher's bounded crawl lists. */
function noteSeen(r: DataRefresher, seen: SeenValues): void {
  if (seen.sites.length > 0) r.noteDomainsSeen(seen.sites);
  if (seen.apps.length > 0) r.noteAppsSeen(seen.apps);
  if (seen.systems.length > 0) r.noteSellersSeen(seen.systems);
}

export interface StartOptions {
  /** Print the first customer's credentials to stdout (serve does; tests don't). */
  announceFirstCustomer?: boolean;
  /** Fleet bot-IP exchange period in ms (tests; default one minute). */
  botIpIntervalMs?: number;
  /** Tests: where the data refresher connects for a URL (a local server playing every host). */
  dataConnect?: HttpGetOptions['connect'];
  /** `ivtd reload` over the control socket (serve: the SIGHUP reload; else the data files only). */
  reload?: (s: RunningServer) => Promise<ReloadOutcome>;
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  log.level = config.logLevel;
  const store = await Store.open(config.dataDir);
  const cleanup: Array<() => Promise<void> | void> = [() => store.close()];
  try {
    log.info({ path: store.path, schema: await store.schemaVersion() }, 'store opened');
    // A fleet edge has no customers of its own: its keys come from ClickHouse.
    const edge = config.role === 'edge';
    const first = edge ? null : await ensureFirstCustomer(store);

    // Assigned once the data is loaded (below), before anything reads them.
    let bundle: DataBundle;
    let built: ReturnType<typeof buildLookupData>;
    let engine: LookupEngine;

    // One budget for everything that grows with traffic, allocated once (src/memory/budget.ts).
    const plan = planMemory(config.memoryBudget, config.threads);
    const memory = allocateLookupMemory(plan);
    // Each load of the data files is numbered; the shared IP verdict cache keys on it.
    let dataGeneration = 1;

    // Fleet mode (--clickhouse-url, src/fleet): counts and reports through ClickHouse, keys
    // published (role all) or pulled (role edge). Closed after the writer's last flush.
    // Reporting counts live in the shared table; the dictionary knows each tuple's values,
    // and whichever writer flushes (DuckDB rollups, or the fleet's spool) drains them.
    const tuples = new TupleDictionary();
    const sharedCounts = new SharedCounts(memory.counts);
    const drainSharedCounts = () => tuples.drain(sharedCounts, Date.now());
    // Impressions (the beacon) count the same way in their own table; their rows name their
    // lookup's tuple, whose values the dictionary above knows (impression-dictionary.ts).
    const impressionTuples = new ImpressionDictionary(tuples);
    const impressionCounts = new SharedCounts(memory.impressions.counts);
    const drainImpressions = () => impressionTuples.drain(impressionCounts, Date.now());
    let onFleetKeys = () => {};
    let onFleetPolicies = () => {};
    const botIpTally = new BotIpTally();
    const fleet = config.clickhouseUrl
      ? await startFleet({
          config,
          store,
          pendingBytes: Math.floor(plan.pendingCountsBytes / 3),
          tupleSeed: memory.counts.seed,
          source: drainSharedCounts,
          readKeys: () => activePrebidKeys(store),
          onKeysPulled: () => onFleetKeys(),
          onPoliciesPulled: () => onFleetPolicies(),
          botIps: {
            // This host's bot-heavy IPs of the last period, from every lookup thread...
            local: () => botIpTally.take(),
            // ...and the fleet's set, keyed as history keys IPs, into shared memory.
            onFleetSet: (ips) => {
              const history = engine.sources.history;
              const keys = ips.map((ip) => {
                const k = history.keysFor({ ip, uid: '', ifa: '', ua: '' });
                return [k.ipHi, k.ipLo] as const;
              });
              engine.sources.fleetBotIps.replace(keys);
            },
            ...(opts.botIpIntervalMs ? { intervalMs: opts.botIpIntervalMs } : {}),
          },
        })
      : null;
    if (fleet) cleanup.unshift(() => fleet.close());
    const readKeys = async () => (edge && fleet ? fleet.edgeKeys() : activePrebidKeys(store));

    const countSinks: RunningServer['countSinks'] = [];
    // The writer's final flush must run after lookups.stop (which delivers the last
    // counts) and before store.close: unshifted here, it stays behind all later steps.
    const reporting = await openReporting(config, store, {
      pendingBytes: Math.floor(plan.pendingCountsBytes / 3),
      storeBytes: plan.storeBytes,
      tupleSeed: memory.counts.seed,
      source: drainSharedCounts,
      impressionSource: drainImpressions,
      backend: fleet ? { writer: fleet.writer, source: fleet.reportSource } : undefined,
    });
    countSinks.push((rows) => reporting.writer.add(rows));
    cleanup.unshift(() => reporting.writer.close());
    // Runs before the lookups' writer closes (cleanup runs the last added first), after the
    // threads' last counts: its drain reads the tuple dictionary, which that flush prunes.
    cleanup.unshift(() => reporting.impressions.writer.close());
    // The data refresher: built whenever the sources file is usable (for `data.reload` and
    // /metrics); it fetches on its own only with --data-refresh. A broken sources file stops
    // the start when a refresh was asked for, and is only logged otherwise.
    let refresher: DataRefresher | null = null;
    let reloadData: () => Promise<{ ok: boolean; errors: string[] }> = async () => ({ ok: false, errors: ['not started yet'] });
    let reloadRequest: () => Promise<ReloadOutcome> = async () => ({ ok: false, errors: ['the server is still starting'], changed: [], restart: [] });
    try {
      refresher = refresherFor(config, { onChanged: () => reloadData(), log, ...(opts.dataConnect ? { connect: opts.dataConnect } : {}) });
    } catch (e) {
      if (!(e instanceof SourcesError) || config.dataRefresh > 0) throw e;
      log.warn({ err: e.message }, 'sources file unusable: no data refresh status until it is fixed');
    }
    // A clock running behind the build or its data would lower the UA version ceilings below
    // versions that already shipped: they are held at that date, and the operator is told.
    const knownCurrent = knownCurrentMs();
    setVersionFloor(knownCurrent);
    if (Date.now() < knownCurrent - 60_000) {
      log.warn(
        { clock: new Date().toISOString(), buildOrData: new Date(knownCurrent).toISOString() },
        'the system clock reads earlier than this build or its embedded data: fix the clock (NTP); UA version checks hold at the build date meanwhile (ivtd_clock_behind_seconds)',
      );
    }
    const metrics = new ServiceMetrics({
      knownCurrentMs: knownCurrent,
      threads: config.threads,
      liveThreads: () => lookups.liveThreads,
      threadRestarts: () => lookups.restarts,
      bundle: () => bundle,
      keysLoaded: () => engine.keys.size,
      flushStats: () => reporting.writer.stats(),
      refreshStatus: refresher ? () => refresher.status() : undefined,
      memory: () => {
        const src = engine.sources;
        return {
          parts: {
            history: plan.historyBytes,
            impressions: plan.impSeenBytes + plan.impCountsBytes,
            ua_cache: plan.uaCacheBytes,
            ip_cache: plan.ipCacheBytes,
            shared_counts: plan.sharedCountsBytes,
            thread_counts: plan.threadCountsBytes * plan.threads,
            pending_counts: plan.pendingCountsBytes,
            store: plan.storeBytes,
            policy: plan.policyBytes,
          },
          occupancy: { ...src.history.occupancy(), policy: policies.bytes / Math.max(1, plan.policyBytes), uas: src.uaCache.occupancy(), ip_verdicts: src.ipCache.occupancy(), tuples: sharedCounts.occupancy() },
        };
      },
    });
    countSinks.push((_rows, stats) => metrics.recordLookups(stats));
    // At most one line per thread per second, never per request.
    countSinks.push((_rows, stats) => {
      if (stats.lastError) log.error({ failed: stats.byStatus[500] ?? 0, err: stats.lastError }, 'lookups failed with an internal error (answered 500)');
    });
    reporting.engine.observers.push((seconds) => metrics.observeReportQuery(seconds));
    // The lookup ids' secret (made once, kept in the data dir; a fleet's hosts share it).
    let lidSecret = loadOrCreateLidSecret(config.dataDir);
    if (fleet) lidSecret = await fleetLidSecret(fleet, config.dataDir, lidSecret, cleanup);
    const lookups = new LookupServer({
      host: config.host,
      port: config.prebidPort,
      threads: config.threads,
      memory,
      onTuples: (announced) => tuples.add(announced),
      onImpressions: (d) => {
        impressionTuples.add(d.announced);
        impressionTuples.addRows(d.rows);
      },
      ...(fleet ? { onBotIps: (rows: BotIpRow[]) => botIpTally.add(rows) } : {}),
      // The crawl of ads.txt and sellers.json follows traffic only when the server refreshes.
      ...(refresher && config.dataRefresh > 0 ? { onSeen: (seen: SeenValues) => noteSeen(refresher!, seen) } : {}),
      onCounts: (rows, stats) => {
        for (const sink of countSinks) sink(rows, stats);
      },
      onWorkerError: (index, err) => log.error({ thread: index, err: err.message }, 'lookup thread failed'),
      onRestart: (index, restarts) => log.warn({ thread: index, restarts }, 'lookup thread replaced and serving again'),
      onUnavailable: () => metrics.recordUnavailable(),
      versionFloorMs: knownCurrent,
      beacon: {
        lidSecret,
        impTtlMs: config.impTtl * 1000,
        trustedProxies: config.trustedProxies.split(',').map((s) => s.trim()),
      },
    });

    // Customers' policies: compiled once each into shared memory, within the budget's policy
    // share; pushed to the threads when the API or the CLI changes one, and checked every 5 s.
    const policySource: PolicySource = {
      versions: () => policyVersions(store),
      read: (customerId) => readPolicy(store, customerId),
    };
    let engineReady = false;
    const policies = new PolicyService(policySource, plan.policyBytes, (updates: PolicyUpdate[]) => {
      const inForce = lookups.pushPolicies(updates);
      if (engineReady) engine.policies.apply(updates);
      fleet?.policiesChanged();
      return inForce;
    }, memory.uaCache.seed);
    await policies.refresh();
    const refreshPoliciesSoon = () => {
      policies.refresh().catch((e: Error) => log.error({ err: e.message }, 'policy refresh failed'));
    };
    onFleetPolicies = refreshPoliciesSoon;

    // Pushed only when the live set changed: a push replaces each thread's key table and
    // empties its memo of verified keys. Expiry itself is checked per lookup.
    let pushedKeys = '';
    const refreshKeys = async () => {
      const keys = await readKeys();
      const fingerprint = JSON.stringify(keys);
      if (fingerprint === pushedKeys) return;
      pushedKeys = fingerprint;
      lookups.pushKeys(keys);
      engine.keys.replace(keys);
    };
    /** Fire-and-forget refresh for hooks (CLI, dashboard rotation, timer); failures are logged. */
    const refreshKeysSoon = () => {
      refreshKeys().catch((e: Error) => log.error({ err: e.message }, 'key refresh failed'));
      fleet?.keysChanged();
    };
    onFleetKeys = refreshKeysSoon;
    const keys = await readKeys();
    pushedKeys = JSON.stringify(keys);
    // The port opens first and answers 503 (lookups and /health-check) until the data is in.
    const prebidPort = await lookups.start(keys);
    cleanup.unshift(() => lookups.stop());
    log.info({ host: config.host, port: prebidPort }, 'pre-bid port open; lookups answer 503 until the data is loaded');

    bundle = loadBundle(config);
    built = buildLookupData(bundle, dataGeneration, { verify: true });
    bundle.sellersIndex = built.data.sellers.index;
    for (const f of describeBundle(bundle)) log.info(f, 'data file loaded');
    for (const w of [...bundle.warnings, ...built.warnings]) log.warn({ warning: w }, 'data warning');
    engine = new LookupEngine(built.data, memory);
    engine.keys.replace(keys);
    engine.policies.apply(policies.all());
    engineReady = true;
    const src = engine.sources;
    log.info(
      describePlan(plan, {
        ...src.history.capacity,
        uas: src.uaCache.capacity,
        ipVerdicts: src.ipCache.capacity,
        tupleSlots: sharedCounts.capacity,
        tuplesPerCustomerHour: sharedCounts.perCustomerHour,
      }),
      'memory budget: history, caches and pending counts stay within it',
    );
    // Drops keys whose grace period ended (the threads also check expiry per lookup).
    const keyTimer = setInterval(() => {
      refreshKeysSoon();
      refreshPoliciesSoon();
    }, 5000);
    keyTimer.unref();
    cleanup.unshift(() => clearInterval(keyTimer));

    const control = await startControlServer({
      dataDir: config.dataDir,
      store,
      onKeysChanged: refreshKeysSoon,
      onReloadData: () => reloadData(),
      onReload: () => reloadRequest(),
      policies,
      refuse: edge ? EDGE_PROVISIONING_REFUSAL : undefined,
    });
    cleanup.unshift(() => control.close());
    fleet?.registerMetrics(metrics.registry);

    const metricsListener = await startMetricsListener(config.metricsHost, config.metricsPort, metrics);
    cleanup.unshift(() => metricsListener.close());
    // The dashboard learns the bound ports at request time (ephemeral ports in tests).
    const boundPorts = { prebid: prebidPort, api: edge ? 0 : config.apiPort, reporting: edge ? 0 : config.reportingPort, metrics: metricsListener.port };
    const dashboardPorts = () => boundPorts;
    // TLS on the account and reporting ports: a bad pair stops the start here.
    const tls = edge ? null : tlsFromConfig(config);
    if (tls) logTlsPair(tls.pair, 'TLS on the account and reporting ports');
    const api = edge ? null : await startAccountApi({
      config,
      store,
      mount: (router, sessions) => {
        mountDashboard(router, { config, ports: () => dashboardPorts() });
        mountReportRoute(router, reporting.engine, sessions, reporting.limiter, reporting.impressions.engine, reporting.calibration);
        mountExplainRoute(router, { store, sessions, engine: () => engine });
        mountFeedbackRoutes(router, { store, sessions, lidSecret, history: engine.sources.history });
      },
      onKeysChanged: refreshKeysSoon,
      policies,
      tls,
    });
    if (api) cleanup.unshift(() => api.close());

    const reportingApi = edge ? null : await reporting.listen(tls);
    if (reportingApi) cleanup.unshift(() => reportingApi.close());

    // Last: the data push is what turns /health-check to 200, so health means every listener is open.
    const failures = await lookups.reload(bundle, dataGeneration);
    if (failures.length) throw new Error(`lookup threads could not load the data: ${failures.join('; ')}`);
    log.info({ host: config.host, port: prebidPort, threads: config.threads }, 'pre-bid lookups listening');

    const running: RunningServer = {
      config,
      store,
      ports: api && reportingApi ? Object.assign(boundPorts, { api: api.port, reporting: reportingApi.port }) : boundPorts,
      countSinks,
      bundle,
      reporting: { flush: () => reporting.writer.flush(), flushImpressions: () => reporting.impressions.writer.flush() },
      metrics,
      refresher,
      lookups,
      fleet,
      policies,
      explainEngine: () => engine,
      refreshKeys,
      tls,
      async reload(nextConfig = config) {
        let next: DataBundle;
        // Files written by `ivtd data update` in another process: status follows them.
        refresher?.syncFromDisk();
        const generation = dataGeneration + 1;
        try {
          next = loadBundle(nextConfig);
          const b = buildLookupData(next, generation, { verify: true });
          next.sellersIndex = b.data.sellers.index;
          for (const w of [...next.warnings, ...b.warnings]) log.warn({ warning: w }, 'data warning');
          built = b;
        } catch (e) {
          const msg = (e as Error).message;
          log.error({ err: msg }, 'reload refused: keeping the data already loaded');
          return { ok: false, errors: [msg] };
        }
        const failures = await lookups.reload(next, generation);
        if (failures.length) {
          for (const f of failures) log.error({ err: f }, 'reload failed on a lookup thread');
          return { ok: false, errors: failures };
        }
        dataGeneration = generation;
        bundle = next;
        running.bundle = next;
        // Same swap as the lookup threads: new data, same keys and history.
        engine.data = built.data;
        for (const f of describeBundle(next)) log.info(f, 'data file reloaded');
        return { ok: true, errors: [] };
      },
      async stop() {
        // Every step runs; counts that could be neither written nor spooled then fail the
        // stop (serve exits 1), after the rest has closed.
        let lost: CountsLostError | null = null;
        for (const fn of cleanup.splice(0)) {
          try {
            await fn();
          } catch (e) {
            log.error({ err: (e as Error).message }, 'error during shutdown');
            if (e instanceof CountsLostError) lost = e;
          }
        }
        if (lost) throw lost;
      },
    };

    reloadData = () => running.reload();
    reloadRequest = opts.reload ? () => opts.reload!(running) : async () => ({ ...(await running.reload()), changed: [], restart: [] });
    if (refresher) {
      const r = refresher;
      // Unshifted: stopped (its requests aborted) before the listeners and the store close.
      cleanup.unshift(() => r.stop());
      if (config.dataRefresh > 0) {
        r.start(config.dataRefresh * 1000);
        log.info({ every: config.dataRefresh, sources: config.dataSources ?? 'data dir sources.json' }, 'data refresh on');
      }
    }

    if (first && opts.announceFirstCustomer) announce(first, running);
    return running;
  } catch (e) {
    // Undo what started, then fail with the start's error. A ref'd timer keeps Node alive
    // while a step still waits on an unref'd one (a retry sleep), so the error is always
    // reported and the exit is never a silent 0; a step still hanging after 10 s is left.
    let guard: NodeJS.Timeout | undefined;
    const undo = (async () => {
      for (const fn of cleanup.splice(0)) await Promise.resolve(fn()).catch(() => undefined);
    })();
    await Promise.race([undo, new Promise((r) => (guard = setTimeout(r, 10_000)))]);
    clearTimeout(guard);
    throw e;
  }
}

function announce(
  c: { customer_id: string; partner_id: string; prebid_key: string; reporting_key: string; username: string; password: string },
  s: RunningServer,
): void {
  const host = s.config.host === '0.0.0.0' || s.config.host === '::' ? '127.0.0.1' : s.config.host;
  const base = `http://${host.includes(':') ? `[${host}]` : host}`;
  const apiBase = s.tls ? base.replace(/^http:/, 'https:') : base;
  const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
  const q =
    `schain=1.0,1!exchange1.example,1234,1&p=${c.partner_id}&k=${c.prebid_key}&pub=pub-1&node=bidder-1` +
    `&ip=81.2.69.142&ua=${ua}&uid=u-1&sid=exchange1.example&adt=1&dvt=2`;
  process.stdout.write(
    [
      '',
      '  First start on this data dir: created a customer. Keep these; they are shown once.',
      `    customer_id    ${c.customer_id}`,
      `    partner_id     ${c.partner_id}`,
      `    username       ${c.username}`,
      `    password       ${c.password}`,
      `    prebid_key     ${c.prebid_key}`,
      `    reporting_key  ${c.reporting_key}`,
      '',
      '  Try a lookup:',
      `    curl '${base}:${s.ports.prebid}/api/v1/ivt/lookup?${q}'`,
      s.ports.api ? `  Dashboard: ${apiBase}:${s.ports.api}/` : '',
      '',
    ].join('\n') + '\n',
  );
}

/**
 * `ivtd serve`: start, then live until SIGTERM/SIGINT. SIGHUP re-reads the config (through
 * `reread`, the same flags/env/file resolution as at start) and reloads the data files.
 */
export async function serve(config: Config, reread?: () => Promise<Config>): Promise<void> {
  log.level = config.logLevel;
  log.info({ dataDir: config.dataDir, host: config.host, threads: config.threads, version: versionInfo().version }, 'ivtd starting');
  let stopping = false;
  // Only a signal (or a fatal error, exit 1) ends `serve`. Should Node's event loop ever run
  // out of work instead (a start-up step waiting on nothing that keeps the loop alive), the
  // process would end with status 0, which systemd's Restart=on-failure reads as a
  // deliberate stop: say so and end with 1, so the host is restarted rather than left dark.
  let ranDry = false;
  process.on('beforeExit', () => {
    if (stopping || ranDry || (process.exitCode ?? 0) !== 0) return;
    ranDry = true;
    log.fatal('the process ran out of work before a signal asked it to stop (a bug: please report it); exiting 1 so a supervisor restarts it');
    process.exitCode = 1;
  });
  const t0 = Date.now();
  // One reload at a time, SIGHUP and `ivtd reload` alike; one asked for during a reload runs after it.
  let reloading: Promise<unknown> = Promise.resolve();
  const reload = (srv: RunningServer, cause: string): Promise<ReloadOutcome> => {
    const next = reloading.then(() => reloadAll(srv, config, reread, cause));
    reloading = next.catch((e: Error) => log.error({ err: e.message }, 'reload refused: keeping the running config and data'));
    return next;
  };
  const s = await startServer(config, { announceFirstCustomer: true, reload: (srv) => reload(srv, 'ivtd reload') });
  log.info({ ms: Date.now() - t0, ports: s.ports }, 'ivtd ready');
  const shutdown = (why: string, code: number) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: why }, 'shutting down: draining lookups and flushing reporting');
    const hard = setTimeout(() => {
      log.error('shutdown took longer than 15 s; exiting');
      process.exit(1);
    }, 15_000);
    hard.unref();
    s.stop()
      .then(() => {
        log.info(code === 0 ? 'stopped cleanly' : 'stopped after a failure; exiting 1');
        process.exit(code);
      })
      .catch((e: Error) => {
        log.error({ err: e.message }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM', 0));
  process.on('SIGINT', () => shutdown('SIGINT', 0));
  // A failure nothing caught on this thread: the process cannot be trusted any more, but
  // exiting at once while lookup threads hold their sockets aborts Node (and drops the
  // pending counts). Log it, take the SIGTERM path, exit 1 for the supervisor to restart.
  const fatal = (kind: string) => (e: unknown) => {
    const err = e instanceof Error ? { message: e.message, stack: e.stack } : { message: String(e) };
    log.fatal({ err }, `${kind} on the main thread; stopping`);
    shutdown(kind, 1);
  };
  process.on('uncaughtException', fatal('uncaught exception'));
  process.on('unhandledRejection', fatal('unhandled promise rejection'));
  process.on('SIGHUP', () => void reload(s, 'SIGHUP').catch(() => undefined));
}

/**
 * SIGHUP: re-reads the config, then the data files with it. All or nothing: a config that
 * does not resolve, a value the logger refuses, a data file that does not load, or any other
 * failure keeps the running config and data, and is logged. Options other than the live
 * ones are named as needing a restart.
 */
async function reloadAll(s: RunningServer, config: Config, reread: (() => Promise<Config>) | undefined, cause: string): Promise<ReloadOutcome> {
  log.info(`${cause}: reloading config and data files`);
  let next: Config = config;
  if (reread) {
    try {
      next = await reread();
    } catch (e) {
      log.error({ err: (e as Error).message }, 'config reload refused: keeping the running config and data');
      return { ok: false, errors: [(e as Error).message], changed: [], restart: [] };
    }
  }
  const { live, restart } = diffConfig(config, next);
  // TLS: the pair is read again (renewed in place?) and checked before anything changes.
  let tlsNext: TlsPair | null;
  try {
    const plan = await planTlsReload(s.tls, next);
    tlsNext = plan.pair;
    // Turning TLS on or off takes a restart: the listeners keep what they serve.
    if (plan.restartOnly) {
      for (const k of ['tlsCert', 'tlsKey'] as const) {
        if (!live.includes(k)) continue;
        live.splice(live.indexOf(k), 1);
        restart.push(k);
      }
    }
  } catch (e) {
    log.error({ err: (e as Error).message }, 'config reload refused: keeping the running config, data and TLS certificate');
    return { ok: false, errors: [(e as Error).message], changed: [], restart: [] };
  }
  const candidate: Config = { ...config };
  for (const key of live) (candidate as unknown as Record<string, unknown>)[key] = next[key];
  const level = log.level;
  try {
    log.level = candidate.logLevel;
  } catch (e) {
    log.error({ err: (e as Error).message }, 'config reload refused: keeping the running config and data');
    return { ok: false, errors: [(e as Error).message], changed: [], restart: [] };
  }
  let result: Awaited<ReturnType<RunningServer['reload']>>;
  try {
    result = await s.reload(candidate);
  } catch (e) {
    result = { ok: false, errors: [(e as Error).message] };
  }
  if (!result.ok) {
    log.level = level;
    if (live.length || restart.length) log.error({ errors: result.errors }, 'config reload refused with the data: keeping the running config');
    return { ok: false, errors: result.errors, changed: [], restart: [] };
  }
  Object.assign(config, candidate);
  if (tlsNext && s.tls) {
    s.tls.use(tlsNext);
    logTlsPair(tlsNext, 'TLS certificate reloaded: new connections use it');
  }
  if (live.length) log.info({ changed: live }, 'config reloaded');
  if (restart.length) log.warn({ changed: restart }, 'config changes that take effect only after a restart');
  return { ok: true, errors: [], changed: live, restart };
}

function logTlsPair(p: TlsPair, msg: string): void {
  const fields = { cert: p.certPath, key: p.keyPath, subject: p.subject, validTo: p.validTo };
  if (p.expired) log.warn(fields, `${msg}; the certificate has EXPIRED: clients will refuse it`);
  else log.info(fields, msg);
}
