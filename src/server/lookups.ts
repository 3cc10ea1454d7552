// Start step "start lookups": the lookup threads (src/server/lookup-threads.ts) with what
// they report wired to its consumers, then the pre-bid port, which answers 503 (lookups and
// /health-check) until the data is pushed, the start's last step.
import type { Config } from '../base/config.ts';
import type { DataRefresher } from '../data/refresh.ts';
import { log } from '../base/log.ts';
import type { ServiceMetrics } from '../ops/metrics.ts';
import type { BotIpRow } from '../prebid/bot-ip-tracker.ts';
import { LookupServer } from './lookup-threads.ts';
import type { LookupStats, SeenValues } from '../prebid/messages.ts';
import type { CountRow } from '../counts/tuple.ts';
import type { KeySet } from '../store/api-keys.ts';
import type { FleetWiring } from './wire-fleet.ts';
import type { ServerMemory } from './memory.ts';

/** Hooks that receive count deltas from the lookup threads (RunningServer.countSinks). */
export type CountSink = (rows: CountRow[], stats: LookupStats) => void;

/** Values the lookup threads saw, to the refresher's bounded crawl lists. */
function noteSeen(r: DataRefresher, seen: SeenValues): void {
  if (seen.sites.length > 0) r.noteDomainsSeen(seen.sites);
  if (seen.apps.length > 0) r.noteAppsSeen(seen.apps);
  if (seen.systems.length > 0) r.noteSellersSeen(seen.systems);
}

/** The threads' supervisor, not started yet: what each thread reports goes to `countSinks`, the fleet and the refresher. */
export function lookupThreads(
  config: Config,
  memory: ServerMemory,
  countSinks: CountSink[],
  fleet: FleetWiring | null,
  refresher: DataRefresher | null,
  metrics: ServiceMetrics,
  versionFloorMs: number,
  lidSecret: Uint8Array,
): LookupServer {
  return new LookupServer({
    host: config.host,
    port: config.prebidPort,
    threads: config.threads,
    memory: memory.lookup,
    onTuples: (announced) => {
      memory.tuples.add(announced);
      memory.tupleArchive?.record(announced);
    },
    onImpressions: (d) => {
      memory.impressionTuples.add(d.announced);
      memory.impressionTuples.addRows(d.rows);
      // A fleet: first sights for the other hosts, invalid impressions' IPs for the bot-IP exchange.
      if (d.firstSeen) fleet?.fleet.seenLids?.add(d.firstSeen);
      if (d.badIps) fleet?.beaconIpTally.add(d.badIps);
    },
    ...(fleet ? { onBotIps: (rows: BotIpRow[]) => fleet.botIpTally.add(rows) } : {}),
    // The crawl of ads.txt and sellers.json follows traffic only when the server refreshes.
    ...(refresher && config.dataRefresh > 0 ? { onSeen: (seen: SeenValues) => noteSeen(refresher, seen) } : {}),
    onCounts: (rows, stats) => {
      // Rows a thread kept itself name tuples the dictionary never heard of (before the sinks take them).
      if (rows.length > 0) memory.tupleArchive?.recordRows(rows);
      for (const sink of countSinks) sink(rows, stats);
    },
    onWorkerError: (index, err) => log.error({ thread: index, err: err.message }, 'lookup thread failed'),
    onRestart: (index, restarts, warmUpMs) => log.warn({ thread: index, restarts, warmUpMs }, 'lookup thread replaced and serving again'),
    onFilterHandover: (filter, phase, ms) => log.info({ filter, phase, ms: Math.round(ms * 1000) / 1000 }, phase === 'give' ? "filter's new thread took its port back" : "filter's thread is being replaced: the main thread holds its port, sending requests on unjudged"),
    onWarmUpFailed: (index, message) => log.warn({ thread: index, err: message }, 'lookup thread warm-up failed (a bug: please report it); the thread serves, its first lookups of each kind slower'),
    onUnavailable: () => metrics.recordUnavailable(),
    onRetired: (index) => metrics.forgetThread(index),
    versionFloorMs,
    filters: config.filters,
    plannedFilters: memory.plan.filters,
    beacon: {
      lidSecret,
      impTtlMs: config.impTtl * 1000,
      trustedProxies: config.trustedProxies.split(',').map((s) => s.trim()),
      fleet: fleet !== null,
    },
  });
}

/** Starts the threads with `keys`: the pre-bid port is open (answering 503) when this resolves. */
export async function openPrebidPort(config: Config, lookups: LookupServer, keys: KeySet): Promise<number> {
  const port = await lookups.start(keys.keys, keys.known);
  log.info({ host: config.host, port }, 'pre-bid port open; lookups answer 503 until the data is loaded');
  return port;
}
