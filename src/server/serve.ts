// `ivtd serve`: the main thread. `startServer` is the start, one named step after another
// (each in its room under src/server/), in the order docs/architecture.md's "Start, in
// order" gives; `serve` lives until a signal: SIGHUP reloads, SIGTERM/SIGINT drain, flush
// and exit 0.
import type { Config } from '../base/config.ts';
import { log } from '../base/log.ts';
import { wasmUnavailable } from '../runtime/wasm.ts';
import { haltsWithoutPolling } from '../runtime/halt-poll.ts';
import { MALLOC_ARENAS, startupArenaLimit } from '../runtime/malloc-arenas.ts';
import { versionInfo } from '../ops/version.ts';
import { LookupEngine } from '../prebid/pipeline.ts';
import type { LookupServer } from './lookup-threads.ts';
import type { ReloadOutcome } from '../provisioning/operations.ts';
import { openReporting } from '../reporting/service.ts';
import { Store } from '../store/db.ts';
import { announce } from './announce.ts';
import { Cleanup } from './cleanup.ts';
import { holdClockFloor } from './clock.ts';
import { ServedData, openRefresher, startRefresher } from './served-data.ts';
import { lidSecretFor, wireFleet } from './wire-fleet.ts';
import { historySeedFor, tupleSeedFor } from '../prebid/lid.ts';
import { loadOrCreateLidSecret } from './lid-secret.ts';
import { TupleArchive } from '../reporting/tuple-archive.ts';
import { TYPICAL_ENTRY_BYTES } from '../counts/tuple-dictionary.ts';
import { openListeners } from './listeners.ts';
import { lookupThreads, openPrebidPort, type CountSink } from './lookups.ts';
import { logMemoryPlan, planServerMemory } from './memory.ts';
import { serverMetrics } from './metric-sources.ts';
import { Pushes } from './pushes.ts';
import { reloadAll } from './reload.ts';
import type { RunningServer, StartOptions } from './running.ts';
import { startCrawlerDns } from './start-crawler-dns.ts';
import { checkFilters } from './check-filters.ts';
import { createFirstCustomer, markShown, printOnFailure, type FirstCustomer } from './first-customer.ts';

export type { RunningServer, StartOptions } from './running.ts';

export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  log.level = config.logLevel;
  const store = await Store.open(config.dataDir);
  const cleanup = new Cleanup(() => store.close());
  // Made by later steps, read by earlier steps' callbacks (none runs before its step did).
  const later = {} as { lookups: LookupServer; pushes: Pushes; data: ServedData; engine: LookupEngine; running: RunningServer };
  let first: FirstCustomer | null = null;
  try {
    log.info({ path: store.path, schema: await store.schemaVersion() }, 'store opened');
    // A fleet edge has no customers of its own: its keys come from ClickHouse.
    await checkFilters(config, store);

    // Reporting tuples hashed with a seed from lid.key (this host's copy; a fleet's agreed
    // secret replaces it from the next start on), the same in every run on this data dir: a
    // lid answered before a restart names a tuple the next run can find on disk.
    const localLidSecret = loadOrCreateLidSecret(config.dataDir);
    const memory = planServerMemory(config, { tupleSeed: tupleSeedFor(localLidSecret) });
    const fleet = await wireFleet(config, store, memory, {
      engine: () => later.engine,
      keysPulled: () => later.pushes?.refreshKeysSoon(),
      policiesPulled: () => later.pushes?.refreshPoliciesSoon(),
    }, { botIpMs: opts.botIpIntervalMs, seenLidMs: opts.seenLidIntervalMs, activityMs: opts.activityIntervalMs });
    // Closed after the writer's last flush.
    if (fleet) cleanup.add(() => fleet.fleet.close());

    // The writer's final flush must run after lookups.stop (which delivers the last counts)
    // and before store.close: added here, it stays behind all later steps.
    const reporting = await openReporting(config, store, {
      pendingBytes: Math.floor(memory.plan.pendingCountsBytes / 3),
      storeBytes: memory.plan.storeBytes,
      tupleSeed: memory.lookup.counts.seed,
      source: memory.drainCounts,
      // A fleet's impressions writer drains them itself (src/server/wire-fleet.ts).
      ...(fleet ? {} : { impressionSource: memory.drainImpressions }),
      backend: fleet ? { writer: fleet.fleet.writer, source: fleet.fleet.reportSource, impressions: fleet.fleet.impressions } : undefined,
    });
    cleanup.add(() => reporting.writer.close());
    // The tuples announced are kept on disk for the impressions of the next run: written at
    // each flush interval and last after the threads' final reports (it closes after
    // lookups.stop, before the store).
    // Tuples waiting to be written (small records pointing at the dictionary's strings, and
    // only while the store refuses them), ids looked up per hour, and tuples found on disk
    // (entries like the dictionary's): each at most a sixteenth of the pending-counts share.
    const archiveTuples = Math.max(10_000, Math.floor(memory.plan.pendingCountsBytes / TYPICAL_ENTRY_BYTES / 16));
    const archive = new TupleArchive(store, {
      impTtlMs: config.impTtl * 1000,
      flushIntervalMs: config.flushInterval * 1000,
      maxPending: archiveTuples,
    });
    memory.impressionTuples.restoredMax = archiveTuples;
    memory.tupleArchive = archive;
    memory.impressionTuples.resolver = archive;
    archive.onFound = (found) => memory.impressionTuples.restore(found);
    archive.start();
    cleanup.add(() => archive.close());
    // Runs before the lookups' writer closes (the last added runs first), after the threads'
    // last counts: its drain reads the tuple dictionary, which that flush prunes.
    cleanup.add(() => reporting.impressions.writer.close());
    const countSinks: CountSink[] = [(rows) => reporting.writer.add(rows)];

    const refresher = openRefresher(config, () => later.running?.reload() ?? notStarted(), opts.dataConnect);
    const versionFloorMs = holdClockFloor();
    const metrics = serverMetrics(config, versionFloorMs, memory, reporting, refresher, countSinks, {
      lookups: () => later.lookups,
      bundle: () => later.data.bundle,
      engine: () => later.engine,
      policyBytes: () => later.pushes.policies.bytes,
    });

    const lidSecret = await lidSecretFor(config, fleet, cleanup, localLidSecret);
    // History keys from the lid secret: the same on every host of a fleet and across
    // restarts, so the keys a lid carries name the same IP, uid and IFA wherever and
    // whenever its beacon lands (before any thread or engine reads the history).
    memory.lookup = { ...memory.lookup, history: { ...memory.lookup.history, seed: historySeedFor(lidSecret) } };
    // A fleet's hosts also hash UAs alike: the fleet's activity maps carry UA bits (src/signals/fleet-activity.ts).
    if (fleet) memory.lookup = { ...memory.lookup, uaCache: { ...memory.lookup.uaCache, seed: historySeedFor(lidSecret) ^ 0x7a11ce } };
    const lookups = (later.lookups = lookupThreads(config, memory, countSinks, fleet, refresher, metrics, versionFloorMs, lidSecret));
    const pushes = new Pushes(store, lookups, fleet?.fleet ?? null, memory.plan.policyBytes, memory.lookup.uaCache.seed);
    await pushes.policies.refresh();
    later.pushes = pushes; // from here on, a fleet pull pushes its keys and policies
    const prebidPort = await openPrebidPort(config, lookups, await pushes.firstKeys());
    cleanup.add(() => lookups.stop());

    // A bad data file stops the start here.
    const data = (later.data = ServedData.load(config));
    const engine = (later.engine = new LookupEngine(data.data, memory.lookup));
    pushes.attach(engine);
    logMemoryPlan(memory, engine);
    cleanup.add(startCrawlerDns(config, memory.lookup.crawlerDns, () => data.bundle.bots.specs));
    cleanup.add(pushes.startTimer());

    const { ports, tls } = await openListeners({
      config,
      store,
      pushes,
      reporting,
      metrics,
      fleet: fleet?.fleet ?? null,
      engine,
      lidSecret,
      prebidPort,
      reloadData: () => later.running?.reload() ?? notStarted(),
      reload: () => (later.running ? reloadRequest(later.running, opts) : stillStarting()),
    }, cleanup);

    // Only now that every listener is open: a start that fails before creates no customer
    // whose credentials nobody sees. A fleet edge has none of its own (its keys come from ClickHouse).
    first = config.role === 'edge' ? null : await createFirstCustomer(store, config.dataDir, opts.announceFirstCustomer === true);
    if (first) await pushes.refreshKeys();

    // Last: the data push is what turns /health-check to 200, so health means every listener is open.
    await data.pushTo(lookups);
    log.info({ host: config.host, port: prebidPort, threads: config.threads, warmUpMs: lookups.warmUpMs }, 'pre-bid lookups listening');
    for (const f of config.filters) log.info({ filter: f.name, host: config.host, port: lookups.filterPorts[f.name], upstream: f.upstream, mode: f.mode, nobid: f.nobid, timeoutMs: f.timeoutMs }, 'filter listening');

    const running: RunningServer = (later.running = {
      config,
      store,
      ports,
      countSinks,
      get bundle() {
        return data.bundle;
      },
      reporting: { flush: () => reporting.writer.flush(), flushImpressions: () => reporting.impressions.writer.flush() },
      metrics,
      refresher,
      lookups,
      fleet: fleet?.fleet ?? null,
      policies: pushes.policies,
      explainEngine: () => engine,
      refreshKeys: () => pushes.refreshKeys(),
      tls,
      async reload(nextConfig = config) {
        // Files written by `ivtd data update` in another process: status follows them.
        refresher?.syncFromDisk();
        const result = await data.reload(nextConfig, lookups);
        // Same swap as the lookup threads: new data, same keys and history.
        if (result.ok) engine.data = data.data;
        return result;
      },
      stop: () => cleanup.stop(),
    });
    startRefresher(config, refresher, cleanup);

    if (first && opts.announceFirstCustomer) {
      announce(first, running);
      markShown(config.dataDir);
    }
    return running;
  } catch (e) {
    if (first && opts.announceFirstCustomer) printOnFailure(first, config.dataDir);
    await cleanup.undo();
    throw e;
  }
}

const notStarted = async () => ({ ok: false, errors: ['not started yet'] });
const stillStarting = async (): Promise<ReloadOutcome> => ({ ok: false, errors: ['the server is still starting'], changed: [], restart: [] });

/** `ivtd reload` over the control socket: serve's SIGHUP reload, else the data files only. */
async function reloadRequest(s: RunningServer, opts: StartOptions): Promise<ReloadOutcome> {
  return opts.reload ? opts.reload(s) : { ...(await s.reload()), changed: [], restart: [] };
}

/**
 * `ivtd serve`: start, then live until SIGTERM/SIGINT. SIGHUP re-reads the config (through
 * `reread`, the same flags/env/file resolution as at start) and reloads the data files.
 */
export async function serve(config: Config, reread?: () => Promise<Config>): Promise<void> {
  log.level = config.logLevel;
  log.info({ dataDir: config.dataDir, host: config.host, threads: config.threads, version: versionInfo().version }, 'ivtd starting');
  // (Every module this process's lookups use is imported by now: the engine, its query scanner,
  // its lid codec and the OpenRTB parser. Without them the lookups are as correct, slower.)
  const noWasm = wasmUnavailable();
  const arenas = startupArenaLimit;
  if (arenas.by !== null) log.info({ arenas: arenas.arenas, setBy: arenas.by }, 'malloc arenas limited (MALLOC_ARENA_MAX in the environment overrides what ivtd sets)');
  else log.warn({ why: arenas.why }, `malloc arenas not limited: under a flood of new keys expect about 50 MB more RSS; set MALLOC_ARENA_MAX=${MALLOC_ARENAS} to limit them`);
  if (haltsWithoutPolling()) {
    log.info({ cpuidle: 'haltpoll', guestHaltPollNs: 0 }, 'guest halt-polling is off on this VM: an answer that wakes a client idle on another vCPU costs the lookup thread about 12 µs (turned on, the development VM served 1.1x the GET and 1.4x the OpenRTB lookups); docs/operations.md, "On a virtual machine"');
  }
  if (noWasm.length > 0) log.warn({ modules: noWasm }, 'WebAssembly parts are unavailable: their work takes the slower JavaScript paths (OpenRTB bodies the reference parser)');
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
