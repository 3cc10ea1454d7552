// The monitoring artefacts (docs/monitoring.md): ops/grafana-dashboard.json queries only
// metrics a real server exposes (a full host with a data refresher in a fleet, and a fleet
// edge), and ops/prometheus-alerts.yml passes `promtool check rules` and its unit tests
// (`promtool test rules`, Debian's prometheus package; .ci/run installs it).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../../src/server/serve.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { FakeWeb } from '../helpers/fake-web.ts';
import { startTestServer, testConfig } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import { fixtureQuery } from '../reporting/client.ts';
import { Store } from '../../src/store/db.ts';
import { createCustomer } from '../../src/store/customers.ts';
import type { FilterSettings } from '../../src/base/filter-settings.ts';
import { freePort } from '../helpers/ports.ts';

const OPS = join(import.meta.dirname, '..', '..', 'ops');
const RULES = join(OPS, 'prometheus-alerts.yml');
const RULE_TESTS = join(OPS, 'prometheus-alerts.test.yml');

interface Panel { id: number; type: string; title: string; targets?: Array<{ expr: string; datasource?: { uid: string } }>; datasource?: { uid: string } }
const dashboard = JSON.parse(readFileSync(join(OPS, 'grafana-dashboard.json'), 'utf8')) as { uid: string; panels: Panel[]; templating: { list: Array<{ name: string }> } };
const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((x) => x.expr));

/** The metric names a PromQL text (or a rules file) reads. */
function queried(text: string): Set<string> {
  return new Set([...text.matchAll(/\b((?:ivtd|process|nodejs)_[a-z_]+)\b/g)].map((m) => m[1]!));
}

/** The metric names with at least one sample in a /metrics text. */
function sampled(text: string): Set<string> {
  return new Set(text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)![0]));
}

t.test('the dashboard: every panel queries through the datasource variable, the issue\'s figures are all there', async (t) => {
  t.equal(dashboard.uid, 'ivtd-overview');
  t.same(dashboard.templating.list.map((v) => v.name), ['datasource', 'instance']);
  const ids = dashboard.panels.map((p) => p.id);
  t.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  for (const p of dashboard.panels.filter((p) => p.type !== 'row')) {
    t.ok((p.targets ?? []).length > 0, `${p.title}: has queries`);
    t.equal(p.datasource?.uid, '${datasource}', `${p.title}: the datasource variable`);
    for (const x of p.targets ?? []) t.match(x.expr, /instance=~"\$instance"/, `${p.title}: filtered by $instance`);
  }
  const all = exprs.join('\n');
  t.match(all, /sum by \(status\) \(rate\(ivtd_lookup_requests_total/, 'lookups/s by status');
  t.match(all, /sum by \(band\) \(rate\(ivtd_lookups_total/, 'lookups/s by band');
  t.match(all, /histogram_quantile\(0\.99, sum by \(le\) \(rate\(ivtd_lookup_duration_seconds_bucket/, 'latency quantiles from the histogram');
  t.match(all, /sum by \(category\) \(rate\(ivtd_transactions_total\{[^}]*class=~"givt\|sivt"/, 'IVT rate by category');
  for (const m of ['ivtd_data_source_age_seconds', 'ivtd_data_source_failures', 'ivtd_memory_budget_bytes', 'ivtd_fleet_delivery_lag_seconds', 'ivtd_fleet_key_pull_age_seconds', 'ivtd_filter_requests_total', 'ivtd_lookup_thread_busy_ratio']) t.ok(queried(all).has(m), m);
});

const promtool = spawnSync('promtool', ['--version']).status === 0;
// Locally a missing promtool skips; in CI (which installs it) it fails.
const promSkip = promtool || process.env.CI ? false : 'promtool is not installed (Debian: apt-get install prometheus)';

t.test('the alert rules: promtool check rules, and each rule\'s unit test', { skip: promSkip }, async (t) => {
  const check = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
  t.equal(check.status, 0, check.stdout + check.stderr);
  t.match(check.stdout, /SUCCESS: 9 rules found/);
  const test = spawnSync('promtool', ['test', 'rules', RULE_TESTS], { encoding: 'utf8' });
  t.equal(test.status, 0, test.stdout + test.stderr);
  const rules = readFileSync(RULES, 'utf8');
  const tests = readFileSync(RULE_TESTS, 'utf8');
  const alerts = [...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1]!);
  for (const a of ['IvtdLookupsFailing', 'IvtdDataSourceStale', 'IvtdFleetSpoolGrowing', 'IvtdClickHouseUnreachable', 'IvtdMemoryAtBudget', 'IvtdFilterUpstreamFailing', 'IvtdFilterSaturated']) t.ok(alerts.includes(a), `rule ${a}`);
  for (const a of alerts) t.match(tests, new RegExp(`alertname: ${a}\\n\\s+exp_alerts:\\n\\s+- exp_labels`), `${a} has a unit test in which it fires`);
  // The tests can fail: a rule whose threshold moved is caught (the lookups' 5xx share, a filter's upstream failures, a filter's busy share).
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-rules-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'prometheus-alerts.test.yml'), tests);
  const moves: Array<[string, string]> = [
    ['status=~"5.."}[5m]))\n            / sum by (instance) (rate(ivtd_lookup_requests_total[5m])) > 0.05', '> 0.5'],
    ['outcome="forwarded"}[5m])) > 0.05', '> 0.15'],
    ['{filter!=""}) > 0.9', '> 0.96'],
  ];
  for (const [at, to] of moves) {
    t.ok(rules.includes(at), `the rule to move is there: …${at.slice(-40)}`);
    writeFileSync(join(dir, 'prometheus-alerts.yml'), rules.replace(at, at.replace(/> [\d.]+$/, to)));
    const moved = spawnSync('promtool', ['test', 'rules', join(dir, 'prometheus-alerts.test.yml')], { encoding: 'utf8' });
    t.not(moved.status, 0, `a changed rule fails its unit test (${at.slice(-12)} → ${to})`);
  }
});

t.test('every metric the dashboard and the alert rules read is on a real server\'s /metrics', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const ch = await startClickHouse();
  t.teardown(() => ch.destroy());
  const web = await FakeWeb.start();
  t.teardown(() => web.stop());
  web.set('/torbulkexitlist', { body: '203.0.113.7\n203.0.113.8\n', etag: '"t1"' });
  web.set('/sellers/exchange9.example.json', JSON.stringify({ sellers: [{ seller_id: 'pub-1', seller_type: 'PUBLISHER' }] }));
  web.set('news.example/ads.txt', { body: 'exchange9.example, pub-1, DIRECT\n', headers: { 'Content-Type': 'text/plain' } });
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-monitoring-'));
  writeFileSync(
    join(dir, 'sources.json'),
    JSON.stringify({
      sources: [{ name: 'tor', format: 'tor-exit-list', url: `${web.base}/torbulkexitlist` }],
      sellers: { domains: ['exchange9.example'], url: `${web.base}/sellers/{domain}.json` },
      adsTxt: { domains: ['news.example'], rate: 100 },
    }),
  );
  // A filter (in front of a port nothing listens on: its series appear with its first report).
  const store = await Store.open(dir);
  const filtered = await createCustomer(store, { name: 'Filtered Co', username: 'filtered', password: 'correct horse battery' });
  await store.close();
  const filter: FilterSettings = { name: 'pbs', port: 0, upstream: `http://127.0.0.1:${await freePort()}/openrtb2/auction`, partner: filtered.partner_id, mode: 'block', nobid: 'nbr', timeoutMs: 300, maxSockets: 4 };
  const url = ch.url('monitoring');
  const full = await startTestServer({ clickhouseUrl: url, flushInterval: 1, filters: [filter] }, dir, { dataConnect: web.connect });
  const edgeDir = mkdtempSync(join(tmpdir(), 'ivtd-monitoring-edge-'));
  const edge = await startServer(testConfig(edgeDir, { role: 'edge', clickhouseUrl: url, flushInterval: 1 }));
  t.teardown(async () => {
    await edge.stop();
    await full.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(edgeDir, { recursive: true, force: true });
  });
  await full.server.refresher!.runOnce({ all: true });

  // Traffic: a valid lookup and two invalid ones (a data centre, a declared crawler).
  const c = full.customer;
  for (const name of ['residential-desktop-chrome', 'datacenter-ip', 'declared-crawler']) {
    const res = await fetch(`${full.prebid}/api/v1/ivt/lookup?${fixtureQuery(name).replace('{p}', c.partner_id).replace('{k}', c.prebid_key)}`);
    t.equal(res.status, 200, name);
  }
  const scrape = async (base: string) => (await fetch(`${base}/metrics`)).text();
  let text = '';
  await until('the lookups are counted by category', async () => /ivtd_transactions_total\{category="data_center",class="(givt|sivt)"\} 1/.test((text = await scrape(full.metrics))), 15_000);
  t.match(text, /ivtd_transactions_total\{category="none",class="valid"\} 1/, 'the valid lookup');
  t.match(text, /ivtd_transactions_total\{category="declared_crawler",class="givt"\} 1/, 'the crawler: GIVT');
  const edgeMetrics = `http://127.0.0.1:${edge.ports.metrics}`;
  await until("the filter's first report", async () => /^ivtd_lookup_thread_busy_ratio\{[^}]*filter="pbs"/m.test((text = await scrape(full.metrics))), 15_000);
  let edgeText = '';
  await until('the edge pulled its keys', async () => /^ivtd_fleet_key_pull_age_seconds \d/m.test((edgeText = await scrape(edgeMetrics))), 15_000);

  const exposed = new Set([...sampled(text), ...sampled(edgeText)]);
  const dashboardNames = queried(exprs.join('\n'));
  const ruleNames = queried(readFileSync(RULES, 'utf8'));
  t.ok(dashboardNames.size >= 20 && ruleNames.size >= 8, 'read the queried names');
  for (const m of [...dashboardNames].sort()) t.ok(exposed.has(m), `dashboard: ${m} is exposed`);
  for (const m of [...ruleNames].sort()) t.ok(exposed.has(m), `alert rules: ${m} is exposed`);
});
