// Start step "open listeners": the control socket, /metrics, and (every role but an edge)
// the account port with the dashboard, and the reporting port; TLS on the last two.
import type { Config } from '../base/config.ts';
import { explainLookup, mountExplainRoute } from '../account/explain-route.ts';
import { mountFeedbackRoutes } from '../account/feedback-routes.ts';
import { startAccountApi } from '../account/api.ts';
import { mountDashboard } from '../dashboard/static.ts';
import { mountOpenApi } from '../openapi/documents.ts';
import type { Fleet } from '../fleet/fleet.ts';
import { EDGE_PROVISIONING_REFUSAL } from '../fleet/edge.ts';
import { tlsFromConfig, type TlsCredentials, type TlsPair } from '../http/tls.ts';
import { log } from '../base/log.ts';
import { startMetricsListener, type ServiceMetrics } from '../ops/metrics.ts';
import type { LookupEngine } from '../prebid/pipeline.ts';
import type { ReloadOutcome } from '../provisioning/operations.ts';
import { startControlServer } from '../provisioning/control.ts';
import { mountReportRoute } from '../reporting/api.ts';
import type { Reporting } from '../reporting/service.ts';
import type { Store } from '../store/db.ts';
import type { Cleanup } from './cleanup.ts';
import { watchOpenFiles } from './open-files.ts';
import type { Pushes } from './pushes.ts';

export interface Ports {
  prebid: number;
  api: number;
  reporting: number;
  metrics: number;
}

export interface ListenerParts {
  config: Config;
  store: Store;
  pushes: Pushes;
  reporting: Reporting;
  metrics: ServiceMetrics;
  fleet: Fleet | null;
  /** The main thread's engine (the admin explain; feedback teaches its history). */
  engine: LookupEngine;
  /** The lookup ids' secret (feedback checks each lid). */
  lidSecret: Uint8Array;
  prebidPort: number;
  /** `data.reload` and `ivtd reload` over the control socket. */
  reloadData(): Promise<{ ok: boolean; errors: string[] }>;
  reload(): Promise<ReloadOutcome>;
}

/** Opens every listener, each closed by `cleanup`; a bad TLS pair or a taken port stops the start. */
export async function openListeners(p: ListenerParts, cleanup: Cleanup): Promise<{ ports: Ports; tls: TlsCredentials | null }> {
  const { config, store, pushes } = p;
  // A fleet edge has no customers of its own: no account or reporting port, no provisioning.
  const edge = config.role === 'edge';
  const control = await startControlServer({
    dataDir: config.dataDir,
    store,
    onKeysChanged: pushes.refreshKeysSoon,
    onReloadData: p.reloadData,
    onReload: p.reload,
    policies: pushes.policies,
    onExplain: async (query, body) => explainLookup(p.engine, query, body),
    refuse: edge ? EDGE_PROVISIONING_REFUSAL : undefined,
  });
  cleanup.add(() => control.close());
  p.fleet?.registerMetrics(p.metrics.registry);

  const metricsListener = await startMetricsListener(config.metricsHost, config.metricsPort, p.metrics);
  cleanup.add(() => metricsListener.close());
  // Out of file descriptors: logged once an episode, never an uncaught listener error (open-files.ts).
  const files = watchOpenFiles();
  cleanup.add(files.stop);
  files.take(metricsListener.server);
  // The dashboard learns the bound ports at request time (ephemeral ports in tests).
  const ports: Ports = { prebid: p.prebidPort, api: edge ? 0 : config.apiPort, reporting: edge ? 0 : config.reportingPort, metrics: metricsListener.port };
  if (edge) return { ports, tls: null };

  // TLS on the account and reporting ports: a bad pair stops the start here.
  const tls = tlsFromConfig(config);
  if (tls) logTlsPair(tls.pair, 'TLS on the account and reporting ports');
  const api = await startAccountApi({
    config,
    store,
    mount: (router, sessions) => {
      mountOpenApi(router, 'account');
      mountDashboard(router, { config, ports: () => ports });
      mountReportRoute(router, p.reporting.engine, sessions, p.reporting.limiter, p.reporting.impressions.engine, p.reporting.calibration);
      mountExplainRoute(router, { store, sessions, engine: () => p.engine });
      mountFeedbackRoutes(router, { store, sessions, lidSecret: p.lidSecret, history: p.engine.sources.history });
    },
    onKeysChanged: pushes.refreshKeysNow,
    policies: pushes.policies,
    tls,
  });
  cleanup.add(() => api.close());
  const reportingApi = await p.reporting.listen(tls);
  cleanup.add(() => reportingApi.close());
  Object.assign(ports, { api: api.port, reporting: reportingApi.port });
  files.take(api.server, reportingApi.server);
  return { ports, tls };
}

export function logTlsPair(p: TlsPair, msg: string): void {
  const fields = { cert: p.certPath, key: p.keyPath, subject: p.subject, validTo: p.validTo };
  if (p.expired) log.warn(fields, `${msg}; the certificate has EXPIRED: clients will refuse it`);
  else log.info(fields, msg);
}
