// The filter (docs/filter.md) through the real server: bid requests of the shapes third
// parties send, each judged as POST /api/v1/ivt/ortb judges it (a second server, fed the same
// requests in the same order, answers the ortb route: the verdicts must be equal); clean ones
// arrive at the upstream byte for byte, blocked ones never do; monitor mode, both no-bid forms,
// the upstream's failures, fail-open, pipelined and chunked clients, /metrics and reports, and
// lookups on the pre-bid port undelayed while the upstream hangs.
import t from 'tap';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { Store } from '../../src/store/db.ts';
import { createCustomer, type CreatedCustomer } from '../../src/store/customers.ts';
import type { FilterSettings } from '../../src/base/filter-settings.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { SHAPES } from '../helpers/ortb-shapes.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { freePort } from '../helpers/ports.ts';
import { until } from '../helpers/until.ts';
import { BID_RESPONSE, startUpstream, type Upstream } from './upstream.ts';
import { metricValue } from './metric-value.ts';
import { keptAlive } from './kept-alive.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'ortb');
/** Every third-party bid request the tests hold: the ortb fixtures and the client shapes. */
const REQUESTS: Array<[string, unknown]> = [
  ...['exemplary', 'supplemental'].flatMap((kind) =>
    readdirSync(join(FIXTURES, kind)).sort().map((f): [string, unknown] => [`${kind}/${f}`, (JSON.parse(readFileSync(join(FIXTURES, kind, f), 'utf8')) as { request: unknown }).request]),
  ),
  ...Object.entries(SHAPES).map(([name, body]): [string, unknown] => [`shape: ${name}`, body]),
];
const SPIDER = (JSON.parse(readFileSync(join(FIXTURES, 'supplemental', 'known-spider-nbr-3.json'), 'utf8')) as { request: Record<string, unknown> }).request;
const CLEAN = SHAPES['web banner, site and publisher, schain in source']! as Record<string, unknown>;
/** The same without its tmax (120 ms), so the filter's own timeout applies. */
const UNTIMED = { ...CLEAN, tmax: undefined };

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  ms: number;
}

async function post(port: number, path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  const t0 = performance.now();
  const r = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body), headers: { 'content-type': 'application/json', ...headers } });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, ms: performance.now() - t0 };
}

function verdictOf(header: string | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const [k, v] = part.trim().split('=');
    if (k && v !== undefined) out[k] = v;
  }
  return out;
}


// One server with five filters (a thread each) in front of one upstream, and a plain server
// that answers the ortb route for comparison.
let up: Upstream;
let s: TestServer;
let plain: TestServer;
let customer: CreatedCustomer;
let dir: string;
const port: Record<string, number> = {};

t.before(async () => {
  up = await startUpstream();
  dir = mkdtempSync(join(tmpdir(), 'ivtd-filter-'));
  const store = await Store.open(dir);
  customer = await createCustomer(store, { name: 'Filtered Co', username: 'filtered', password: 'correct horse battery' });
  await store.close();
  const dead = `http://127.0.0.1:${await freePort()}/bid`;
  const f = (name: string, more: Partial<FilterSettings>): FilterSettings => ({ name, port: 0, upstream: up.url, partner: customer.partner_id, mode: 'block', nobid: 'nbr', timeoutMs: 300, maxSockets: 16, ...more });
  const filters = [f('pbs', {}), f('dsp', { nobid: '204' }), f('watch', { mode: 'monitor', timeoutMs: 1500 }), f('dead', { upstream: dead }), f('roomy', { timeoutMs: 2000 })];
  s = await startTestServer({ threads: 1, filters }, dir);
  plain = await startTestServer({ threads: 1 });
  Object.assign(port, s.server.lookups.filterPorts);
});
t.teardown(async () => {
  await s?.stop();
  await plain?.stop();
  await up?.close();
  rmSync(dir, { recursive: true, force: true });
});

t.test('third-party bid requests: the ortb verdict; clean ones arrive byte for byte, blocked ones never', async (t) => {
  let blocked = 0;
  for (const [name, request] of REQUESTS) {
    // Indented, so a re-serialised body would differ from the one sent.
    const body = JSON.stringify(request, null, 2);
    const ortb = await fetch(`${plain.prebid}/api/v1/ivt/ortb?p=${plain.customer.partner_id}&k=${plain.customer.prebid_key}&node=pbs`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    const want = (await ortb.json()) as { botRisk?: { band: string; score: number }; nbr?: number; id?: string; lid?: string };
    const before = up.received.length;
    const got = await post(port.pbs!, '/openrtb2/auction?debug=1', body, { 'X-Custom': 'kept', 'X-Forwarded-For': '198.51.100.7' });
    if (want.nbr !== undefined) {
      blocked++;
      t.equal(got.status, 200, `${name}: blocked, answered 200`);
      t.same(JSON.parse(got.text), { id: want.id, nbr: want.nbr }, `${name}: {"id","nbr"} of the verdict`);
      t.equal(up.received.length, before, `${name}: never reached the upstream`);
      t.equal(got.headers.get('x-ivtd-nobid'), 'blocked');
      continue;
    }
    t.equal(up.received.length, before + 1, `${name}: forwarded once`);
    const r = up.received.at(-1)!;
    t.ok(r.body.equals(Buffer.from(body)), `${name}: the body arrived byte for byte`);
    t.equal(r.method, 'POST');
    t.equal(r.url, '/openrtb2/auction?debug=1', `${name}: path and query as sent`);
    t.equal(up.header(r, 'x-custom'), 'kept', 'end-to-end headers kept');
    t.equal(up.header(r, 'x-forwarded-for'), '198.51.100.7, 127.0.0.1', 'X-Forwarded-For extended with the peer');
    t.equal(up.header(r, 'host'), `127.0.0.1:${up.port}`, "Host is the upstream's");
    const v = verdictOf(up.header(r, 'x-ivtd-verdict'));
    if (ortb.status === 200) {
      t.equal(v.band, want.botRisk!.band, `${name}: the ortb route's band`);
      t.equal(Number(v.score), want.botRisk!.score, `${name}: the ortb route's score`);
      t.match(v.lid, /^[A-Za-z0-9_-]{20,}$/, `${name}: a lid`);
    } else t.equal(up.header(r, 'x-ivtd-verdict'), undefined, `${name}: refused by the ortb route (${ortb.status}): sent on unjudged`);
    t.equal(got.status, 200);
    t.equal(got.text, BID_RESPONSE, "the upstream's answer returned");
    t.equal(got.headers.get('x-bidder'), 'test-upstream', "with the upstream's headers");
  }
  t.ok(blocked >= 1 && blocked < REQUESTS.length, `some blocked (${blocked}), some forwarded`);
});

t.test('gzip stays gzip; a request to the filter\'s root goes to the upstream\'s path', async (t) => {
  const gz = gzipSync(JSON.stringify(CLEAN));
  const got = await post(port.pbs!, '/', gz, { 'Content-Encoding': 'gzip' });
  t.equal(got.status, 200);
  const r = up.received.at(-1)!;
  t.ok(r.body.equals(gz), 'the gzip bytes arrived as sent');
  t.equal(up.header(r, 'content-encoding'), 'gzip');
  t.equal(r.url, '/openrtb2/auction');
  t.match(verdictOf(up.header(r, 'x-ivtd-verdict')), { band: /^(low|medium)$/ }, 'judged after inflating');
  const spider = await post(port.pbs!, '/', gzipSync(JSON.stringify(SPIDER)), { 'Content-Encoding': 'gzip' });
  t.same(JSON.parse(spider.text), { id: SPIDER.id, nbr: 3 }, 'a gzip spider is blocked too');
});

t.test('a forged verdict header from the client is dropped', async (t) => {
  await post(port.pbs!, '/openrtb2/auction', JSON.stringify(CLEAN), { 'X-Ivtd-Verdict': 'band=low; score=0' });
  const r = up.received.at(-1)!;
  const all = r.rawHeaders.filter((_, i) => i % 2 === 0 && r.rawHeaders[i]!.toLowerCase() === 'x-ivtd-verdict');
  t.equal(all.length, 1, 'one verdict header: the filter\'s');
  t.not(up.header(r, 'x-ivtd-verdict'), 'band=low; score=0');
});

t.test('--filter-nobid 204 and monitor mode', async (t) => {
  const before = up.received.length;
  const dsp = await post(port.dsp!, '/', JSON.stringify(SPIDER));
  t.equal(dsp.status, 204, '204 No Content');
  t.equal(dsp.text, '');
  t.match(verdictOf(dsp.headers.get('x-ivtd-verdict')), { band: 'high', nbr: '3' });
  t.equal(up.received.length, before, 'not forwarded');
  const watch = await post(port.watch!, '/', JSON.stringify(SPIDER));
  t.equal(watch.status, 200);
  t.equal(watch.text, BID_RESPONSE, 'monitor: forwarded, the upstream answers');
  t.match(verdictOf(up.header(up.received.at(-1)!, 'x-ivtd-verdict')), { band: 'high', nbr: '3' }, 'with the verdict that would block');
  await until('would-block counted', async () => (await metricValue(s, 'ivtd_filter_requests_total', { filter: 'watch', outcome: 'would_block' })) === 1);
  await until('blocked counted', async () => (await metricValue(s, 'ivtd_filter_requests_total', { filter: 'dsp', outcome: 'blocked' })) === 1);
});

t.test("the upstream's failures: no-bid within the time, counted", async (t) => {
  const dead = await post(port.dead!, '/', JSON.stringify(CLEAN));
  t.same({ status: dead.status, body: JSON.parse(dead.text) }, { status: 200, body: { id: 'shape-2', nbr: 1 } }, 'unreachable: no-bid, nbr 1');
  t.equal(dead.headers.get('x-ivtd-nobid'), 'upstream-error');
  const slow = await post(port.pbs!, '/?behave=slow', JSON.stringify(UNTIMED));
  t.equal(slow.headers.get('x-ivtd-nobid'), 'upstream-timeout', 'slower than --filter-timeout (300 ms): no-bid');
  t.ok(slow.ms < 750, `answered before the upstream would have (${slow.ms.toFixed(0)} ms)`);
  const roomy = await post(port.roomy!, '/?behave=slow', JSON.stringify(UNTIMED));
  t.equal(roomy.text, BID_RESPONSE, 'within a 2 s timeout the slow answer comes through');
  const tight = await post(port.roomy!, '/?behave=slow', JSON.stringify({ ...CLEAN, tmax: 100 }));
  t.equal(tight.headers.get('x-ivtd-nobid'), 'upstream-timeout', "the request's smaller tmax wins");
  const drop = await post(port.pbs!, '/?behave=drop', JSON.stringify(CLEAN));
  t.equal(drop.headers.get('x-ivtd-nobid'), 'upstream-error', 'connection dropped: no-bid');
  const chunked = await post(port.pbs!, '/?behave=chunked', JSON.stringify(CLEAN));
  t.same([chunked.status, chunked.text, chunked.headers.get('x-bidder')], [201, BID_RESPONSE, 'test-upstream'], 'a chunked answer comes back whole');
  const nobid = await post(port.pbs!, '/?behave=nobid', JSON.stringify(CLEAN));
  t.same([nobid.status, nobid.text, nobid.headers.get('x-ivtd-nobid')], [204, '', null], "the upstream's own 204 returned as is");
  await until('errors and timeouts counted', async () => (await metricValue(s, 'ivtd_filter_requests_total', { filter: 'dead', outcome: 'upstream_error' })) === 1 && (await metricValue(s, 'ivtd_filter_requests_total', { filter: 'roomy', outcome: 'upstream_timeout' })) === 1);
  t.ok((await metricValue(s, 'ivtd_filter_upstream_duration_seconds_count', { filter: 'roomy' })) >= 1, 'upstream latency measured');
});

t.test("each filter's thread says how busy it is (docs/filter.md, Sizing)", async (t) => {
  // Work for the pbs filter's thread: its busy share of the next report is above 0.
  await until('busy share reported', async () => {
    await Promise.all(Array.from({ length: 50 }, () => post(port.pbs!, '/', JSON.stringify(CLEAN))));
    return (await metricValue(s, 'ivtd_lookup_thread_busy_ratio', { filter: 'pbs' })) > 0;
  });
  const text = await (await fetch(`${s.metrics}/metrics`)).text();
  const series = [...text.matchAll(/^ivtd_lookup_thread_busy_ratio\{([^}]*)\} (\S+)$/gm)].map((m) => ({ labels: m[1]!, value: Number(m[2]) }));
  for (const name of Object.keys(port)) t.equal(series.filter((x) => x.labels.includes(`filter="${name}"`)).length, 1, `one series for filter ${name}`);
  t.ok(series.some((x) => !x.labels.includes('filter=')), "the pre-bid port's lookup thread has one without a filter label");
  t.ok(series.every((x) => x.value >= 0 && x.value <= 1), `each a share of the second: ${series.map((x) => x.value).join(', ')}`);
});

t.test('fail open: what ivtd cannot judge is sent on as is', async (t) => {
  for (const [what, body, type] of [['not JSON', 'hello', 'application/json'], ['another media type', JSON.stringify(CLEAN), 'text/plain'], ['a JSON array', '[1,2]', 'application/json']] as const) {
    const got = await post(port.pbs!, '/', body, { 'content-type': type });
    t.equal(got.text, BID_RESPONSE, `${what}: forwarded`);
    const r = up.received.at(-1)!;
    t.equal(r.body.toString(), body);
    t.equal(up.header(r, 'x-ivtd-verdict'), undefined, `${what}: no verdict`);
  }
  const get = await fetch(`http://127.0.0.1:${port.pbs}/status?x=1`);
  t.equal(await get.text(), BID_RESPONSE, 'a GET is forwarded too');
  t.same([up.received.at(-1)!.method, up.received.at(-1)!.url], ['GET', '/openrtb2/auction/status?x=1'], 'its path under the upstream\'s');
  await until('fail-opens counted', async () => (await metricValue(s, 'ivtd_filter_fail_open_total', { filter: 'pbs', reason: 'unparseable' })) >= 2);
});

t.test('pipelined and chunked clients', async (t) => {
  const body = JSON.stringify(CLEAN);
  const one = `POST /openrtb2/auction HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const chunked = `POST /openrtb2/auction?c=1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${(10).toString(16)}\r\n${body.slice(0, 10)}\r\n${(body.length - 10).toString(16)}\r\n${body.slice(10)}\r\n0\r\n\r\n`;
  const spider = JSON.stringify(SPIDER);
  const blocked = `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(spider)}\r\n\r\n${spider}`;
  const before = up.received.length;
  // Four requests written at once on one connection: a slow one first, a blocked one third.
  const slowFirst = one.replace('/openrtb2/auction', '/openrtb2/auction?behave=chunked');
  const ex = await rawExchange(port.roomy!, slowFirst + one + blocked + chunked, { until: /(HTTP\/1\.1[\s\S]*){4}resp-1[\s\S]*resp-1[\s\S]*resp-1/, waitMs: 5000 });
  const statuses = [...ex.text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
  t.same(statuses, ['201', '200', '200', '200'], 'four answers, in order');
  t.match(ex.text, /"nbr":3/, 'the blocked one answered in its place');
  t.equal(up.received.length, before + 3, 'three forwarded');
  const c = up.received.find((r) => r.url === '/openrtb2/auction?c=1');
  t.ok(c?.body.equals(Buffer.from(body)), 'the chunked body arrived whole, byte for byte');
  t.equal(c && up.header(c, 'transfer-encoding'), undefined, 'sent with its length');
  t.equal(c && up.header(c, 'content-length'), String(Buffer.byteLength(body)));
});

t.test('a hanging upstream never delays lookups on the pre-bid port; every request is answered once', async (t) => {
  // Raw sockets on both sides, so the test's own client (fetch's machinery) is not what is timed.
  const k = `p=${customer.partner_id}&k=${customer.prebid_key}`;
  const lookupPath = `/api/v1/ivt/lookup?${k}&pub=p1&ip=73.162.10.20&ua=${encodeURIComponent(String((CLEAN.device as { ua: string }).ua))}&uid=u1&sid=exchange1.example&adt=1&dvt=2&node=n`;
  const conn = await keptAlive(Number(new URL(s.prebid).port));
  const time = async (n: number) => {
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const a = await conn.ask(`GET ${lookupPath} HTTP/1.1\r\nHost: x\r\n\r\n`);
      if (!a.startsWith('HTTP/1.1 200')) throw new Error(`lookup answered ${a.slice(0, 40)}`);
      ms.push(performance.now() - t0);
    }
    return ms.sort((a, b) => a - b);
  };
  const base = await time(200);
  // 150 bid requests held until the monitor filter's 1.5 s timeout: 16 (its maxSockets) by the
  // upstream, the rest waiting for a connection to it.
  const body = JSON.stringify(UNTIMED);
  const held = Array.from({ length: 150 }, () =>
    rawExchange(port.watch!, `POST /?behave=hang HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, { until: /\r\n\r\n/, waitMs: 5000 }),
  );
  await until('the upstream holds 16', async () => up.received.filter((r) => r.url.includes('hang')).length >= 16, 3000);
  const during = await time(200);
  const ortbBody = JSON.stringify(CLEAN);
  const t0 = performance.now();
  const ortb = await conn.ask(`POST /api/v1/ivt/ortb?${k}&node=n HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(ortbBody)}\r\n\r\n${ortbBody}`);
  const ortbMs = performance.now() - t0;
  const stillHeld = up.received.filter((r) => r.url.includes('hang')).length;
  t.equal(stillHeld, 16, 'no more connections to the upstream than maxSockets');
  const answers = await Promise.all(held);
  conn.close();
  const q = (a: number[], p: number) => a[Math.floor(a.length * p)]!;
  t.comment(`lookup p50 ${q(base, 0.5).toFixed(3)} / p99 ${q(base, 0.99).toFixed(3)} ms before; ${q(during, 0.5).toFixed(3)} / ${q(during, 0.99).toFixed(3)} ms while 150 requests wait on a hanging upstream (${stillHeld} at it); ortb ${ortbMs.toFixed(2)} ms`);
  t.ok(q(during, 0.5) < q(base, 0.5) * 2 + 0.5, 'the median lookup is not delayed');
  t.ok(q(during, 0.9) < 100, `no lookup waits for the upstream's 1.5 s (p90 ${q(during, 0.9).toFixed(1)} ms)`);
  t.match(ortb, /^HTTP\/1\.1 200/, 'the ortb route answers');
  t.ok(ortbMs < 500, 'at once');
  t.ok(answers.every((a) => /^HTTP\/1\.1 200[\s\S]*X-Ivtd-Nobid: upstream-timeout/i.test(a.text)), 'each held request: one no-bid at the timeout');
  t.ok(answers.every((a) => (a.text.match(/HTTP\/1\.1/g) ?? []).length === 1), 'answered once');
  // The filter still serves after.
  t.equal((await post(port.watch!, '/', JSON.stringify(CLEAN))).text, BID_RESPONSE);
});

t.test('filtered requests are transactions in reports, node = the filter\'s name', async (t) => {
  // Counts reach the writer once a second.
  await new Promise((r) => setTimeout(r, 1500));
  await s.server.reporting!.flush();
  const today = new Date().toISOString().slice(0, 10);
  const auth = 'Basic ' + Buffer.from(`${customer.customer_id}:${customer.reporting_key}`).toString('base64');
  const res = await fetch(`${s.reporting}/v1/report?start_date=${today}&end_date=${today}&group_by=node`, { headers: { authorization: auth } });
  t.equal(res.status, 200);
  const rows = ((await res.json()) as { rows: Array<{ node: string; total_transactions: number; invalid_transactions: number }> }).rows;
  const byNode = new Map(rows.map((r) => [r.node, r]));
  t.ok((byNode.get('pbs')?.total_transactions ?? 0) >= REQUESTS.length - 3, `the pbs filter's requests: ${byNode.get('pbs')?.total_transactions}`);
  t.ok((byNode.get('pbs')?.invalid_transactions ?? 0) >= 2, 'blocked ones among them as invalid');
  t.equal(byNode.get('dsp')?.total_transactions, 1, "the dsp filter's one");
  t.ok(byNode.has('watch') && byNode.has('dead') && byNode.has('roomy'));
});

t.test("a filter's thread that fails is replaced on the same port; lookups go on meanwhile", async (t) => {
  const names = Object.keys(s.server.lookups.filterPorts);
  const index = 1 + names.indexOf('dsp'); // after the one lookup thread
  s.server.lookups.crashThread(index);
  await new Promise((r) => setTimeout(r, 100));
  const lookup = await fetch(`${s.prebid}/health-check`);
  t.equal(lookup.status, 200, 'the pre-bid port still healthy');
  await until('the dsp filter serves again', async () => {
    const r = await post(port.dsp!, '/', JSON.stringify(SPIDER)).catch(() => null);
    return r !== null && r.status === 204 && r.headers.get('x-ivtd-nobid') === 'blocked';
  }, 20_000);
  t.equal(s.server.lookups.filterPorts.dsp, port.dsp, 'the same port');
  t.ok(s.server.lookups.restarts >= 1, 'counted as a restart');
});
