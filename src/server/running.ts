// What startServer hands back: the running server's parts, its reload and its stop.
import type { Config } from '../base/config.ts';
import type { DataBundle } from '../prebid/thread-bundle.ts';
import type { DataRefresher } from '../data/refresh.ts';
import type { HttpGetOptions } from '../data/http-get.ts';
import type { Fleet } from '../fleet/fleet.ts';
import type { TlsCredentials } from '../http/tls.ts';
import type { ServiceMetrics } from '../ops/metrics.ts';
import type { PolicyService } from '../policy/service.ts';
import type { LookupServer } from './lookup-threads.ts';
import type { LookupEngine } from '../prebid/pipeline.ts';
import type { ReloadOutcome } from '../provisioning/operations.ts';
import type { Store } from '../store/db.ts';
import type { CountSink } from './lookups.ts';

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
  countSinks: CountSink[];
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

export interface StartOptions {
  /** Print the first customer's credentials to stdout (serve does; tests don't). */
  announceFirstCustomer?: boolean;
  /** Fleet bot-IP exchange period in ms (tests; default one minute). */
  botIpIntervalMs?: number;
  /** Fleet seen-lid exchange period in ms (tests; default 10 s). */
  seenLidIntervalMs?: number;
  /** Fleet activity exchange period in ms (the bench; default 1 s). */
  activityIntervalMs?: number;
  /** Tests: where the data refresher connects for a URL (a local server playing every host). */
  dataConnect?: HttpGetOptions['connect'];
  /** `ivtd reload` over the control socket (serve: the SIGHUP reload; else the data files only). */
  reload?: (s: RunningServer) => Promise<ReloadOutcome>;
}
