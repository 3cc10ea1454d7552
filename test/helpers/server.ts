// Starts the real server in-process on ephemeral ports over a fresh data dir.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig, type Config } from '../../src/base/config.ts';
import { startServer, type RunningServer, type StartOptions } from '../../src/server/serve.ts';
import { createCustomer } from '../../src/store/customers.ts';

export interface TestServer {
  server: RunningServer;
  config: Config;
  dataDir: string;
  customer: { customer_id: string; partner_id: string; prebid_key: string; reporting_key: string; username: string; password: string };
  prebid: string;
  /** Base URL of the account API (login, tokens, /v1/project, /v1/account). */
  api: string;
  /** Base URL of the reporting API (GET /v1/report, HTTP Basic). */
  reporting: string;
  /** Base URL of the /metrics listener. */
  metrics: string;
  stop(): Promise<void>;
}

/** The defaults with every port ephemeral, on 127.0.0.1, silent, over `dataDir`. */
export function testConfig(dataDir: string, overrides: Partial<Config> = {}): Config {
  return {
    ...resolveConfig({}, {}),
    dataDir,
    host: '127.0.0.1',
    prebidPort: 0,
    apiPort: 0,
    reportingPort: 0,
    metricsPort: 0,
    logLevel: 'silent',
    ...overrides,
  };
}

export async function startTestServer(overrides: Partial<Config> = {}, dataDir?: string, opts: StartOptions = {}): Promise<TestServer> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'ivtd-test-'));
  const config = testConfig(dir, overrides);
  const server = await startServer(config, opts);
  const password = 'correct horse battery';
  const c = await createCustomer(server.store, { name: 'Test Co', username: `tester${Math.random().toString(36).slice(2, 8)}`, password });
  await server.refreshKeys();
  return {
    server,
    config,
    dataDir: dir,
    customer: { ...c, password },
    prebid: `http://127.0.0.1:${server.ports.prebid}`,
    api: `http://127.0.0.1:${server.ports.api}`,
    reporting: `http://127.0.0.1:${server.ports.reporting}`,
    metrics: `http://127.0.0.1:${server.ports.metrics}`,
    async stop() {
      await server.stop();
      if (!dataDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
