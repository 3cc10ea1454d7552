// GET /metrics on its own listener (--metrics-host, loopback by default, --metrics-port) of
// the real server, and nowhere else: lookups counted by status and
// band, the latency histogram, data ages, reporting flushes, process RSS; and the
// histogram arithmetic of ServiceMetrics on known inputs.
import t from 'tap';
import { statSync, utimesSync, writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { resolveConfig } from '../../src/base/config.ts';
import { emptyLookupStats, LATENCY_BUCKETS_US, type LookupStats } from '../../src/prebid/messages.ts';
import { emptyFilterStats } from '../../src/prebid/filter/filter-stats.ts';
import { ServiceMetrics } from '../../src/ops/metrics.ts';
import { loadBundle } from '../../src/data/bundle.ts';
import { startTestServer } from '../helpers/server.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (enough of it for these assertions). */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

function pick(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return pick(samples, name, labels)[0]?.value;
}

const UA = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');

t.test('ServiceMetrics turns per-thread deltas into cumulative Prometheus series', async (t) => {
  const bundle = loadBundle({ dataDir: '/nonexistent', mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });
  const m = new ServiceMetrics({ threads: 3, bundle: () => bundle, keysLoaded: () => 7 });
  const stats = (latency: number[], sumUs: number): LookupStats => ({
    thread: 0,
    byStatus: { '200': 2, '401': 1 },
    byBand: { low: 2, high: 1 },
    latency,
    latencySumUs: sumUs,
    overflowed: 0,
    uaHits: 3,
    uaMisses: 1,
    ipHits: 2,
    ipMisses: 2,
    contended: 0,
    lastError: '',
    heapUsed: 0,
    heapTotal: 0,
    busy: 0,
    beacons: { valid: 2, replay: 1, refused: 1 },
    seenEvictedLive: 1,
    heldUnsent: 2,
  });
  const width = LATENCY_BUCKETS_US.length + 1;
  const a = new Array<number>(width).fill(0);
  a[0] = 2; // ≤ 10 µs
  a[3] = 1; // ≤ 100 µs
  const b = new Array<number>(width).fill(0);
  b[width - 1] = 1; // slower than the last bound
  m.recordLookups(stats(a, 150));
  m.recordLookups(stats(b, 20_000));
  m.observeReportQuery(0.003);
  m.observeReportQuery(0.2);

  const s = parse(await m.text());
  t.equal(value(s, 'ivtd_lookup_requests_total', { status: '200' }), 4);
  t.equal(value(s, 'ivtd_lookup_requests_total', { status: '401' }), 2);
  t.equal(value(s, 'ivtd_lookups_total', { band: 'low' }), 4);
  t.equal(value(s, 'ivtd_lookups_total', { band: 'high' }), 2);
  t.equal(value(s, 'ivtd_impression_beacons_total', { outcome: 'valid' }), 4, 'beacons by outcome, summed over reports');
  t.equal(value(s, 'ivtd_impression_beacons_total', { outcome: 'replay' }), 2);
  t.equal(value(s, 'ivtd_impression_beacons_total', { outcome: 'refused' }), 2);
  t.equal(value(s, 'ivtd_impression_seen_evictions_total'), 2);
  t.equal(value(s, 'ivtd_answers_held_unsent_total'), 4, 'answers held for a client not reading, summed over reports');
  const buckets = pick(s, 'ivtd_lookup_duration_seconds_bucket');
  t.same(
    buckets.map((x) => [x.labels.le, x.value]),
    [...LATENCY_BUCKETS_US.map((us, i) => [String(us / 1e6), i < 3 ? 2 : 3]), ['+Inf', 4]],
    'buckets are cumulative, bounds in seconds, +Inf last',
  );
  t.equal(value(s, 'ivtd_lookup_duration_seconds_count'), 4);
  t.equal(value(s, 'ivtd_lookup_duration_seconds_sum'), 0.02015);
  t.equal(value(s, 'ivtd_report_query_duration_seconds_bucket', { le: '0.005' }), 1);
  t.equal(value(s, 'ivtd_report_query_duration_seconds_bucket', { le: '0.1' }), 1);
  t.equal(value(s, 'ivtd_report_query_duration_seconds_bucket', { le: '0.25' }), 2);
  t.equal(value(s, 'ivtd_report_query_duration_seconds_count'), 2);
  t.equal(value(s, 'ivtd_lookup_threads'), 3);
  t.equal(value(s, 'ivtd_prebid_keys_loaded'), 7);
  t.same(pick(s, 'ivtd_reporting_flush_lag_seconds'), [], 'no reporting source: no reporting series');
});

t.test("each lookup thread's busy share: a filter's thread labelled with its filter, gone with its thread", async (t) => {
  const bundle = loadBundle({ dataDir: '/nonexistent', mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });
  const m = new ServiceMetrics({ threads: 1, bundle: () => bundle, keysLoaded: () => 0 });
  const report = (thread: number, busy: number, filter?: string): LookupStats => ({
    ...emptyLookupStats(thread), heapUsed: 1, heapTotal: 2, busy, ...(filter === undefined ? {} : { filter: emptyFilterStats(filter) }),
  });
  m.recordLookups(report(0, 0.25));
  m.recordLookups(report(1, 0.9, 'pbs-eu'));
  m.recordLookups(report(0, 0.5));
  let s = parse(await m.text());
  t.same(pick(s, 'ivtd_lookup_thread_busy_ratio').map((x) => [x.labels, x.value]), [[{ thread: '0' }, 0.5], [{ thread: '1', filter: 'pbs-eu' }, 0.9]], 'the last report of each thread');
  m.forgetThread(1);
  s = parse(await m.text());
  t.same(pick(s, 'ivtd_lookup_thread_busy_ratio').map((x) => x.labels.thread), ['0'], "a removed filter's thread has no series left");
});

t.test('flush lag follows the writer', async (t) => {
  const bundle = loadBundle({ dataDir: '/nonexistent', mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });
  let flush = { pendingTuples: 0, flushes: 1, failedFlushes: 0, rowsWritten: 5, lastFlushAt: Date.now() - 30_000 as number | null };
  const m = new ServiceMetrics({ threads: 1, bundle: () => bundle, keysLoaded: () => 0, flushStats: () => flush });
  t.equal(value(parse(await m.text()), 'ivtd_reporting_flush_lag_seconds'), 0, 'nothing pending: no lag');
  flush = { ...flush, pendingTuples: 4, failedFlushes: 2 };
  const s = parse(await m.text());
  t.ok(Math.abs(value(s, 'ivtd_reporting_flush_lag_seconds')! - 30) < 2, 'pending since the last flush 30 s ago');
  t.equal(value(s, 'ivtd_reporting_flushes_total', { result: 'failed' }), 2);
  t.equal(value(s, 'ivtd_reporting_pending_tuples'), 4);
});

t.test('a data file is dated by its modified time truncated to the millisecond, never rounded', async (t) => {
  const dataDir = t.testdir({ 'hosting-asns.txt': 'AS64496  hosting  # test network\n' });
  const list = join(dataDir, 'hosting-asns.txt');
  // 1700000000.1236 s: 123.6 ms past the second, which rounding would make 124.
  utimesSync(list, 1700000000, 1700000000.1236);
  const mtimeMs = statSync(list).mtimeMs;
  t.ok(mtimeMs % 1 >= 0.5, `the file system keeps sub-millisecond times (${mtimeMs})`);
  const bundle = loadBundle({ dataDir, mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });
  t.equal(bundle.hostingAsns.modified, '2023-11-14T22:13:20.123Z', 'data file loaded: modified');
  const m = new ServiceMetrics({ threads: 1, bundle: () => bundle, keysLoaded: () => 0 });
  const s = parse(await m.text());
  t.equal(value(s, 'ivtd_data_file_timestamp_seconds', { file: 'hosting-asns.txt', origin: 'file' }), 1700000000.123);
  t.equal(value(s, 'ivtd_data_file_timestamp_seconds', { file: 'hosting-asns.txt', origin: 'file' }), Math.floor(mtimeMs) / 1000, 'the same rule as the test below');
});

t.test('GET /metrics on the metrics port of a running server', async (t) => {
  const ts = await startTestServer({ threads: 1 });
  t.teardown(() => ts.stop());
  const c = ts.customer;
  const lookup = (k: string) =>
    fetch(
      `${ts.prebid}/api/v1/ivt/lookup?schain=1.0,1!exchange1.example,1234,1&p=${c.partner_id}&k=${k}&pub=pub-1&node=n1` +
        `&ip=81.2.69.142&ua=${UA}&uid=u-1&sid=exchange1.example&adt=1&dvt=2`,
    );
  for (let i = 0; i < 5; i++) t.equal((await lookup(c.prebid_key)).status, 200);
  t.equal((await lookup('wrong-key')).status, 401);
  t.equal((await fetch(`${ts.prebid}/health-check`)).status, 200);

  // The lookup thread reports once a second; poll until its counts have arrived.
  let s: Sample[] = [];
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await fetch(`${ts.metrics}/metrics`);
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    s = parse(await res.text());
    if (value(s, 'ivtd_lookup_requests_total', { status: '401' }) === 1 || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  t.equal(value(s, 'ivtd_lookup_requests_total', { status: '200' }), 5, 'lookups by status');
  t.equal(value(s, 'ivtd_lookup_requests_total', { status: '401' }), 1);
  const bands = pick(s, 'ivtd_lookups_total');
  t.equal(bands.reduce((n, x) => n + x.value, 0), 5, 'every answered lookup has a band');
  t.ok(bands.every((x) => ['low', 'medium', 'high'].includes(x.labels.band!)));
  t.equal(value(s, 'ivtd_lookup_duration_seconds_count'), 6, 'health checks are not in the histogram');
  t.equal(value(s, 'ivtd_lookup_duration_seconds_bucket', { le: '+Inf' }), 6);
  t.ok(value(s, 'ivtd_lookup_duration_seconds_sum')! > 0);
  t.ok(value(s, 'process_resident_memory_bytes')! > 10e6, 'RSS from the default metrics');
  t.equal(value(s, 'ivtd_lookup_threads'), 1);
  t.equal(value(s, 'ivtd_prebid_keys_loaded'), 2, 'the first customer and the test customer');
  t.match(pick(s, 'ivtd_build_info')[0]?.labels, { version: /^\d+\.\d+\.\d+/, built_at: 'dev' });
  const loaded = value(s, 'ivtd_data_loaded_timestamp_seconds')!;
  t.ok(Math.abs(loaded - Date.now() / 1000) < 120, 'data loaded at start');
  t.ok(value(s, 'ivtd_data_age_seconds')! >= 0);
  t.ok(value(s, 'ivtd_data_file_timestamp_seconds', { file: 'asn.bin', origin: 'embedded' })! > 1.6e9, 'embedded ASN table dated by its build');

  await ts.server.reporting!.flush();
  s = parse(await (await fetch(`${ts.metrics}/metrics`)).text());
  t.ok(value(s, 'ivtd_reporting_flushes_total', { result: 'ok' })! >= 1, 'the flush is counted');
  t.ok(value(s, 'ivtd_reporting_rows_written_total')! >= 1);
  t.equal(value(s, 'ivtd_reporting_pending_tuples'), 0);
  t.equal(value(s, 'ivtd_reporting_flush_lag_seconds'), 0, 'nothing pending after the flush: no lag');

  // A real report through the reporting API is timed.
  const today = new Date().toISOString().slice(0, 10);
  const auth = 'Basic ' + Buffer.from(`${ts.customer.customer_id}:${ts.customer.reporting_key}`).toString('base64');
  const report = await fetch(`http://127.0.0.1:${ts.server.ports.reporting}/v1/report?start_date=${today}&end_date=${today}`, { headers: { authorization: auth } });
  t.equal(report.status, 200);
  await report.arrayBuffer();
  s = parse(await (await fetch(`${ts.metrics}/metrics`)).text());
  t.equal(value(s, 'ivtd_report_query_duration_seconds_count'), 1, 'the report query is timed');

  // A data file dropped into the data dir and reloaded shows up with its modified time.
  const list = join(ts.dataDir, 'hosting-asns.txt');
  writeFileSync(list, 'AS64496  hosting  # test network\n');
  t.same(await ts.server.reload(), { ok: true, errors: [] });
  s = parse(await (await fetch(`${ts.metrics}/metrics`)).text());
  t.equal(value(s, 'ivtd_data_file_timestamp_seconds', { file: 'hosting-asns.txt', origin: 'file' }), Math.floor(statSync(list).mtimeMs) / 1000, 'millisecond precision (ISO time)');
  t.ok(value(s, 'ivtd_data_loaded_timestamp_seconds')! >= loaded, 'reload moved the loaded time');

  t.equal((await fetch(`${ts.prebid}/metrics`)).status, 404, 'never on the lookup port');
  t.equal((await fetch(`${ts.api}/metrics`)).status, 404, 'nor on the account API port');
  t.equal((await fetch(`${ts.reporting}/metrics`)).status, 404, 'nor on the reporting port');
  for (const path of ['/', '/login', '/v1/report', '/health-check']) t.equal((await fetch(`${ts.metrics}${path}`)).status, 404, `the metrics port serves nothing else (${path})`);
});

t.test('--metrics-host is loopback unless set, whatever --host is', async (t) => {
  t.equal(resolveConfig({ host: '0.0.0.0' }, {}).metricsHost, '127.0.0.1');
  t.equal(resolveConfig({}, {}).metricsPort, 9901);
  // A non-loopback address of this machine, to knock on from outside loopback.
  const outside = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
  const ts = await startTestServer({ host: '0.0.0.0' });
  t.teardown(() => ts.stop());
  t.equal((await fetch(`${ts.metrics}/metrics`)).status, 200, 'served on loopback');
  if (!outside) {
    t.comment('no non-loopback IPv4 interface here: the outside check is skipped');
    return;
  }
  t.equal((await fetch(`http://${outside}:${ts.server.ports.api}/login`, { method: 'POST' })).status, 422, `the account API answers on ${outside} (--host 0.0.0.0)`);
  await t.rejects(fetch(`http://${outside}:${ts.server.ports.metrics}/metrics`), TypeError, `/metrics does not (refused on ${outside})`);

  const open = await startTestServer({ metricsHost: '0.0.0.0' });
  t.teardown(() => open.stop());
  t.equal((await fetch(`http://${outside}:${open.server.ports.metrics}/metrics`)).status, 200, '--metrics-host 0.0.0.0 opens it to the network');
});
