// The data refresh from the operator's side: `ivtd data update` / `data status` (real CLI
// process) beside a running server, the server's reload and /metrics, `serve
// --data-refresh`, and the options.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig } from '../../src/base/config.ts';
import { startServer } from '../../src/server/serve.ts';
import { FakeWeb } from '../helpers/fake-web.ts';
import { startTestServer } from '../helpers/server.ts';
import { runIvtd } from '../cli/run-cli.ts';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-refresh-serve-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function until(what: string, fn: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function sourcesFile(dir: string, w: FakeWeb): void {
  writeFileSync(
    join(dir, 'sources.json'),
    JSON.stringify({
      sources: [{ name: 'tor', format: 'tor-exit-list', url: `${w.base}/torbulkexitlist` }],
      sellers: { domains: ['exchange9.example'], url: `${w.base}/sellers/{domain}.json` },
    }),
  );
}

/** A range file a refresh wrote (not the embedded crawler-range snapshot). */
const refreshed = (f: { source: string }) => !f.source.startsWith('embedded:');

t.test('ivtd data update beside a running server: files, reload, status, metrics', async (t) => {
  const w = await FakeWeb.start();
  t.teardown(() => w.stop());
  w.set('/torbulkexitlist', { body: '203.0.113.7\n203.0.113.8\n', etag: '"t1"' });
  w.set('/sellers/exchange9.example.json', JSON.stringify({ sellers: [{ seller_id: 'pub-1', seller_type: 'PUBLISHER' }] }));
  const dir = tempDir(t);
  sourcesFile(dir, w);
  const ts = await startTestServer({}, dir);
  t.teardown(() => ts.stop());
  t.ok(ts.server.refresher, 'a sources file gives the server a refresher (for status), without timers');
  t.same(ts.server.bundle.ipRanges.files, [], 'no ranges yet');
  t.same(ts.server.bundle.bots.lists.filter(refreshed), [], 'the embedded crawler and monitor lists');

  const metrics = async () => (await fetch(`${ts.metrics}/metrics`)).text();
  t.notMatch(await metrics(), /ivtd_data_source_up\{/, 'a source never fetched has no up/down series');

  const up = await runIvtd(['data', 'update', '--data-dir', dir]);
  t.equal(up.code, 0, up.stderr);
  t.match(up.stdout, /changed\s+ranges\s+tor: 2 ranges written to/);
  t.match(up.stdout, /changed\s+sellers\s+exchange9\.example: 1 sellers/);
  t.match(up.stdout, /The running server reloaded the data\./);
  t.same(ts.server.bundle.ipRanges.files.filter(refreshed).map((f) => [f.name, f.entries]), [['ranges/tor.txt', 2]], 'the server loaded the new ranges');
  t.ok(ts.server.bundle.sellers.some((f) => f.name === 'exchange9.example.json'), 'and the new sellers file');
  const m = await metrics();
  t.match(m, /ivtd_data_source_up\{source="tor",kind="ranges"\} 1/);
  t.match(m, /ivtd_data_source_entries\{source="tor",kind="ranges"\} 2/);
  t.match(m, /ivtd_data_source_age_seconds\{source="tor",kind="ranges"\} \d/);
  t.match(m, /ivtd_sellers_json_domains\{status="ok"\} 1/);
  t.match(m, /ivtd_data_file_timestamp_seconds\{file="ranges\/tor\.txt",origin="file"\}/);

  const st = await runIvtd(['data', 'status', '--data-dir', dir, '--json']);
  t.equal(st.code, 0, st.stderr);
  t.match(JSON.parse(st.stdout), { sources: [{ name: 'tor', kind: 'ranges', status: 'ok', entries: 2, error: null }], sellers: { listed: 1, ok: 1 } });
  const text = await runIvtd(['data', 'status', '--data-dir', dir]);
  t.match(text.stdout, /^tor \(ranges\): ok, last success \d{4}-\d\d-\d\dT[\d:]+Z, 2 entries$/m);
  // The crawler and monitor lists in use: the embedded snapshot's source, licence and date.
  t.match(JSON.parse(st.stdout), { botLists: { snapshot: { source: 'https://github.com/ipverse/bot-ip-blocks', licence: 'CC0-1.0' }, lists: [{ list: 'crawlers' }, { list: 'monitoring' }], error: null } });
  t.match(text.stdout, /^crawler and monitor lists: embedded snapshot of https:\/\/github\.com\/ipverse\/bot-ip-blocks @ [0-9a-f]{12} \(\d{4}-\d\d-\d\d, licence CC0-1\.0\)$/m);
  t.match(text.stdout, /^ {2}crawlers: \d+ services, \d+ ranges, from embedded:data\/bot-ip-blocks\/crawlers\.json$/m);

  // Garbage: the command fails, the server keeps its data and metrics say so.
  w.set('/torbulkexitlist', { body: '<html><body>Rate limited</body></html>', headers: { 'Content-Type': 'text/html' } });
  const bad = await runIvtd(['data', 'update', '--data-dir', dir]);
  t.equal(bad.code, 1, 'a failed source fails the command');
  t.match(bad.stdout, /failed\s+ranges\s+tor: the body is HTML\/XML, not a Tor exit list; the data fetched .* stays in use/);
  t.same(ts.server.bundle.ipRanges.files.filter(refreshed).map((f) => f.entries), [2]);
  const after = await metrics();
  t.match(after, /ivtd_data_source_up\{source="tor",kind="ranges"\} 0/, 'metrics follow a refresh made by another process');
  t.match(after, /ivtd_data_source_failures\{source="tor",kind="ranges"\} 1/);
});

t.test('serve --data-refresh: passes on a timer, reload after a change', async (t) => {
  const w = await FakeWeb.start();
  t.teardown(() => w.stop());
  w.set('/torbulkexitlist', '203.0.113.7\n');
  w.set('/sellers/exchange9.example.json', JSON.stringify({ sellers: [{ seller_id: 'pub-1' }] }));
  const dir = tempDir(t);
  sourcesFile(dir, w);
  const ts = await startTestServer({ dataRefresh: 300 }, dir);
  t.teardown(() => ts.stop());
  await until('the first pass (5 s after start)', () => ts.server.bundle.ipRanges.files.filter(refreshed).length === 1);
  t.equal(ts.server.bundle.ipRanges.files.filter(refreshed)[0]!.entries, 1, 'fetched and reloaded without anyone asking');
  w.set('/torbulkexitlist', '203.0.113.7\n203.0.113.9\n');
  const report = await ts.server.refresher!.runOnce({ all: false, intervalMs: 0 });
  t.equal(report.changed, true);
  await until('the reload after the change', () => ts.server.bundle.ipRanges.files.filter(refreshed)[0]!.entries === 2);
  t.pass('the threads got the new data through the SIGHUP reload path');
});

t.test('a broken sources file: fatal with --data-refresh, a warning without', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'sources.json'), '{"sources": [{"name": "x", "format": "nope", "url": "https://a.example/"}]}');
  const base = { ...resolveConfig({}, {}), dataDir: dir, host: '127.0.0.1', prebidPort: 0, apiPort: 0, reportingPort: 0, logLevel: 'silent' };
  await t.rejects(startServer({ ...base, dataRefresh: 300 }), /sources\[0\]\.format: "nope" is not one of/);
  const s = await startServer({ ...base, dataRefresh: 0 });
  t.equal(s.refresher, null);
  await s.stop();
  const cli = await runIvtd(['data', 'update', '--data-dir', dir]);
  t.equal(cli.code, 2, 'a sources-file mistake is a usage error');
  t.match(cli.stderr, /sources\.json: sources\[0\]\.format/);
  t.notMatch(cli.stderr, /ivtd help/, 'a mistake in the file, not in the command line: no usage hint');
  t.equal(cli.stderr.trim().split('\n').length, 1, 'one line');
});

t.test('options: --data-refresh, --data-sources, MaxMind credentials', async (t) => {
  t.equal(resolveConfig({}, {}).dataRefresh, 0, 'off by default');
  t.equal(resolveConfig({ dataRefresh: '6h' }, {}).dataRefresh, 21600);
  t.equal(resolveConfig({}, { IVTD_DATA_REFRESH: '1d' }).dataRefresh, 86400);
  t.equal(resolveConfig({ dataRefresh: 'off' }, {}).dataRefresh, 0);
  t.equal(resolveConfig({ dataRefresh: '900' }, {}).dataRefresh, 900, 'bare seconds');
  t.throws(() => resolveConfig({ dataRefresh: '1m' }, {}), /data-refresh must be "off" or a duration .* got "1m"/, 'below 5 minutes');
  t.throws(() => resolveConfig({ dataRefresh: 'hourly' }, {}), /data-refresh must be "off" or a duration/);
  t.equal(resolveConfig({}, { IVTD_MAXMIND_LICENSE_KEY: 'k' }).maxmindLicenseKey, 'k');
  const dir = tempDir(t);
  const missing = await runIvtd(['data', 'status', '--data-dir', dir, '--data-sources', join(dir, 'nope.json')]);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /sources file .*nope\.json does not exist/);
  t.notMatch(missing.stderr, /ivtd help/);
  const none = await runIvtd(['data', 'update', '--data-dir', dir]);
  t.equal(none.code, 0);
  t.match(none.stdout, /Nothing to refresh/);
  const unit = await runIvtd(['systemd-unit', '--maxmind-license-key', 'secret']);
  t.equal(unit.code, 2);
  t.match(unit.stderr, /--maxmind-license-key is a credential/);
  t.notMatch(unit.stdout, /secret/);
});
