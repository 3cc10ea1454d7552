// What an edge (--role edge) serves besides the pre-bid port: GET /metrics alone, on
// --api-port (9899 by default, where a full instance serves it too). No account API,
// dashboard or reporting listener; provisioning commands are refused with a pointer to
// the full instance.
import { Router, listen, type Listener } from '../http/router.ts';
import { log } from '../log.ts';
import type { ServiceMetrics } from '../ops/metrics.ts';

export const EDGE_PROVISIONING_REFUSAL =
  'this ivtd is a fleet edge (--role edge): customers, users and keys are managed on the full instance (--role all) and reach the edges through ClickHouse';

/** Starts the edge's /metrics listener on --api-port. */
export async function startEdgeMetrics(host: string, port: number, metrics: ServiceMetrics): Promise<Listener> {
  const router = new Router();
  metrics.mount(router);
  const listener = await listen(router, host, port, 'metrics');
  log.info({ host, port: listener.port }, 'fleet edge: /metrics listening (no account API, dashboard or reporting on an edge)');
  return listener;
}
