// /metrics' sources on the main thread, and the count sinks that feed it: every figure is
// read from its owner at scrape time (or arrives with the lookup threads' per-second stats).
import type { Config } from '../base/config.ts';
import type { DataBundle } from '../prebid/thread-bundle.ts';
import type { DataRefresher } from '../data/refresh.ts';
import { log } from '../base/log.ts';
import { ServiceMetrics } from '../ops/metrics.ts';
import type { LookupServer } from './lookup-threads.ts';
import type { LookupEngine } from '../prebid/pipeline.ts';
import type { Reporting } from '../reporting/service.ts';
import type { CountSink } from './lookups.ts';
import { memoryFigures, type ServerMemory } from './memory.ts';

/** Parts of the server made after the metrics; read only at scrape time, once they exist. */
export interface MetricsLater {
  lookups(): LookupServer;
  bundle(): DataBundle;
  engine(): LookupEngine;
  policyBytes(): number;
}

export function serverMetrics(
  config: Config,
  knownCurrentMs: number,
  memory: ServerMemory,
  reporting: Reporting,
  refresher: DataRefresher | null,
  countSinks: CountSink[],
  later: MetricsLater,
): ServiceMetrics {
  const metrics = new ServiceMetrics({
    knownCurrentMs,
    threads: config.threads,
    liveThreads: () => later.lookups().liveThreads,
    threadRestarts: () => later.lookups().restarts,
    bundle: later.bundle,
    keysLoaded: () => later.engine().keys.size,
    flushStats: () => reporting.writer.stats(),
    refreshStatus: refresher ? () => refresher.status() : undefined,
    memory: () => memoryFigures(memory, later.engine(), later.policyBytes()),
    tupleArchive: () => memory.tupleArchive?.stats ?? null,
  });
  countSinks.push((_rows, stats) => metrics.recordLookups(stats));
  // By category: the rows the writer drains (memory.drainCounts) and those a thread hands over.
  memory.transactions.register(metrics.registry);
  countSinks.push((rows) => memory.transactions.add(rows));
  // At most one line per thread per second, never per request.
  countSinks.push((_rows, stats) => {
    if (stats.lastError) log.error({ failed: stats.byStatus[500] ?? 0, err: stats.lastError }, 'lookups failed with an internal error (answered 500)');
  });
  reporting.engine.observers.push((seconds) => metrics.observeReportQuery(seconds));
  return metrics;
}
