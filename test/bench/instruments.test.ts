// The benchmarks' own instruments: the UA generator, the flood request generator (run by
// the real wrk against a recording HTTP server), wrk's report parser, the "modern" rule of
// bench:detect, the paced latency client's handling of a server stall, and which build a
// comparison measures when none is named.
import t from 'tap';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { FLOOD_MODES, floodScript } from '../../bench/flood-script.ts';
import { isModern } from '../../bench/modern.ts';
import { paced } from '../../bench/paced.ts';
import { defaultTarget } from '../../bench/processes.ts';
import { generateUas } from '../../bench/ua-gen.ts';
import { bodiesScript, parseWrk, wrkAsync, wrkAvailable } from '../../bench/wrk.ts';
import { lookupPaths, ortbRequests } from '../../bench/requests.ts';

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer({ keepAliveTimeout: 10_000 }, handler).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return {
    port,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

t.test('generated UAs: deterministic, distinct, every kind, mostly phones', async (t) => {
  const a = generateUas(20_000);
  const b = generateUas(20_000);
  t.equal(a.length, 20_000);
  t.same(a.slice(0, 50), b.slice(0, 50), 'same seed, same list');
  t.equal(new Set(a.map((u) => u.ua)).size, 20_000, 'all distinct');
  const count = (k: string) => a.filter((u) => u.kind === k).length;
  for (const k of ['phone', 'desktop', 'tablet', 'tv', 'bot']) t.ok(count(k) > 0, `has ${k}`);
  t.ok(count('phone') > count('desktop') && count('desktop') > count('tv') && count('tv') > count('bot'), 'phones > desktops > TVs > bots');
  t.notSame(generateUas(100, 1).map((u) => u.ua), a.slice(0, 100).map((u) => u.ua), 'another seed, another list');
  for (const u of a.filter((x) => x.kind !== 'bot').slice(0, 500)) t.match(u.ua, /^(Mozilla\/5\.0 \(|Roku\/DVP-|AppleCoreMedia\/)/, 'browser-shaped');
});

t.test('flood generator under the real wrk: distinct keys where it should, repeated where it should', { skip: wrkAvailable() ? false : 'Debian wrk not installed' }, async (t) => {
  const seen: URLSearchParams[] = [];
  const server = await listen((req, res) => {
    seen.push(new URL(req.url!, 'http://x').searchParams);
    res.end('{}');
  });
  t.teardown(server.close);
  const uas = generateUas(2000);
  for (const mode of FLOOD_MODES) {
    seen.length = 0;
    const w = await wrkAsync({ port: server.port, script: floodScript(mode, uas, { partnerId: 'PARTNER', key: 'KEY' }), connections: 4, seconds: 1, threads: 2, scriptArgs: ['3', '2', '7'] });
    t.ok(w.requests > 200, `${mode}: wrk sent requests (${w.requests})`);
    t.equal(w.scriptOutput.filter((l) => l.startsWith('@PATH /api/v1/ivt/lookup?')).length, 3, `${mode}: sample paths printed`);
    const distinct = (name: string) => new Set(seen.map((q) => q.get(name))).size;
    // Every request is well formed (problems collected, so a failure names the request).
    const bad: string[] = [];
    for (const q of seen) {
      const ifa = q.get('ifa');
      const why = [
        q.get('p') !== 'PARTNER' || q.get('k') !== 'KEY' ? 'credentials' : '',
        isIP(q.get('ip') ?? '') ? '' : 'ip',
        (q.get('ua') ?? '').length > 5 ? '' : 'ua',
        ifa !== null && !/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/.test(ifa) ? 'ifa not a v4-shaped UUID' : '',
        ifa !== null && !q.get('app') ? 'in-app without app' : '',
        ifa === null && !/^site\d+\.example$/.test(q.get('dmn') ?? '') ? 'web without dmn' : '',
        q.get('dvt') === '3' && ifa === null ? 'CTV not in-app' : '',
      ].filter(Boolean);
      if (why.length) bad.push(`${why.join(', ')}: ${q}`);
    }
    t.same(bad.slice(0, 5), [], `${mode}: every request well formed`);
    if (mode === 'repeated' || mode === 'flood') t.ok(seen.some((q) => q.get('ifa')) && seen.some((q) => q.get('dmn')), `${mode}: both in-app and web requests`);
    const n = seen.length;
    if (mode === 'flood') {
      t.equal(distinct('uid'), n, 'flood: a new uid per request');
      t.equal(distinct('ip'), n, 'flood: a new IP per request');
      t.ok(seen.some((q) => q.get('ip')!.includes(':')), 'flood: some IPv6');
    } else {
      t.ok(distinct('uid') <= 64 && distinct('ip') <= 64, `${mode}: 64 keys at most`);
    }
    if (mode === 'repeated') t.ok(distinct('ua') <= 32, 'repeated: 32 UAs at most');
    if (mode === 'ua-version' || mode === 'ua-shape') t.equal(distinct('ua'), n, `${mode}: a never-seen UA per request`);
  }
});

t.test('OpenRTB bench requests: 2-3 KB bid requests, each the twin of its GET lookup, POSTed whole by the real wrk', async (t) => {
  const bodies = ortbRequests('PARTNER', 'KEY', 500);
  const paths = lookupPaths('PARTNER', 'KEY', 500);
  const bad: string[] = [];
  bodies.forEach((b, i) => {
    const bytes = Buffer.byteLength(b.body);
    const bid = JSON.parse(b.body) as { device: { ip: string; ua: string; devicetype: number }; user: { id: string }; site: { publisher: { id: string } } };
    const q = new URL(paths[i]!, 'http://x').searchParams;
    const why = [
      bytes < 2048 || bytes > 3072 ? `${bytes} bytes` : '',
      bid.device.ip !== q.get('ip') || bid.device.ua !== q.get('ua') || bid.user.id !== q.get('uid') || bid.site.publisher.id !== q.get('pub') ? 'not the twin of its GET lookup' : '',
      String(bid.device.devicetype) !== q.get('dvt') ? 'dvt' : '',
      b.path !== '/api/v1/ivt/ortb?p=PARTNER&k=KEY&node=bidder-1' ? 'path' : '',
    ].filter(Boolean);
    if (why.length) bad.push(`#${i}: ${why.join(', ')}`);
  });
  t.same(bad.slice(0, 5), [], 'every bid request 2-3 KB and the same lookup as its GET twin');
  if (!wrkAvailable()) {
    t.comment('Debian wrk not installed: the POST script is not run');
    return;
  }
  const got: Array<{ method: string; url: string; type: string; body: string }> = [];
  const server = await listen((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      got.push({ method: req.method!, url: req.url!, type: String(req.headers['content-type']), body });
      res.end('{}');
    });
  });
  t.teardown(server.close);
  const w = await wrkAsync({ port: server.port, script: bodiesScript(bodies.slice(0, 20)), connections: 2, seconds: 1 });
  t.ok(w.requests > 20, `wrk sent requests (${w.requests})`);
  const sent = new Set(bodies.slice(0, 20).map((b) => b.body));
  t.ok(got.length > 20 && got.every((g) => g.method === 'POST' && g.url === bodies[0]!.path && g.type === 'application/json' && sent.has(g.body)), 'every request a POST of one whole bid request as JSON');
  t.equal(new Set(got.map((g) => g.body)).size, 20, 'cycling through all of them');
});

t.test("wrk's report is parsed", async (t) => {
  const out = [
    'Running 2s test @ http://127.0.0.1:1234',
    '  1 threads and 32 connections',
    '  Thread Stats   Avg      Stdev     Max   +/- Stdev',
    '    Latency     1.50ms    2.10ms  45.20ms   93.00%',
    '    Req/Sec    11.00k     1.00k   12.00k    70.00%',
    '  Latency Distribution',
    '     50%  812.00us',
    '     75%    1.20ms',
    '     90%    2.50ms',
    '     99%   11.30ms',
    '  22000 requests in 2.00s, 7.00MB read',
    '  Socket errors: connect 0, read 2, write 0, timeout 1',
    '  Non-2xx or 3xx responses: 5',
    'Requests/sec:  10999.50',
    '@PATH /x',
  ].join('\n');
  t.same(parseWrk(out, 32), { connections: 32, requests: 22000, rps: 10999.5, p50Ms: 0.812, p90Ms: 2.5, p99Ms: 11.3, maxMs: 45.2, non2xx: 5, errors: 3, scriptOutput: ['@PATH /x'] });
});

t.test('"modern" for bench:detect: 2019 or later', async (t) => {
  const yes = [
    'Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 16_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.5 Mobile/15E148 Safari/604.1',
    'Mozilla/5.0 (SMART-TV; LINUX; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) 76.0.3809.146/6.0 TV Safari/537.36',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:120.0) Gecko/20100101 Firefox/120.0',
    'Roku/DVP-12.5 (12.5.0.4178-88)',
  ];
  const no = [
    'Mozilla/5.0 (Linux; Android 8.1.0; Moto G) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/90.0.0.0 Mobile Safari/537.36',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.102 Safari/537.36',
    'Mozilla/5.0 (SMART-TV; Linux; Tizen 4.0) AppleWebKit/538.1 (KHTML, like Gecko) Version/4.0 TV Safari/538.1',
    'Mozilla/5.0 (Windows NT 6.1; WOW64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36',
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/12.1 Safari/605.1.15',
  ];
  for (const ua of yes) t.ok(isModern(ua), ua);
  for (const ua of no) t.notOk(isModern(ua), ua);
});

t.test('paced client: a server stall is charged to every request it held back', async (t) => {
  let stalled = false;
  const started = performance.now();
  const server = await listen((_req, res) => {
    if (!stalled && performance.now() - started > 500) {
      stalled = true;
      const until = performance.now() + 200;
      while (performance.now() < until); // the server's thread stops for 200 ms
    }
    res.setHeader('content-length', '2');
    res.end('{}');
  });
  t.teardown(server.close);
  const r = await paced({ port: server.port, paths: ['/a', '/b'], rate: 200, seconds: 1.5, connections: 4 });
  t.ok(stalled, 'the server stalled once');
  t.equal(r.completed, r.sent, 'every request answered');
  t.ok(r.completed >= 280 && r.completed <= 310, `about rate x seconds requests (${r.completed})`);
  // 4 connections at 50/s each: a 200 ms stall holds back ~10 sends per connection.
  t.ok(r.heldBack >= 12, `sends held back by the stall are counted (${r.heldBack})`);
  t.ok(r.maxMs >= 150, `the stall shows in the latency (max ${r.maxMs} ms)`);
  t.ok(r.p99Ms >= 50, `and in the p99, not only in one sample (p99 ${r.p99Ms} ms)`);
  // Relative to the p99, not in milliseconds: on a loaded host (the whole suite in parallel)
  // every request waits longer (p50 34 ms once), but a client charging the stall to every
  // request would have its median near its p99.
  t.ok(r.p50Ms < r.p99Ms / 4, `but not in the median (p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms)`);
});

t.test('a comparison with a baseline binary measures the binary of this checkout, and refuses a missing or stale one', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'ivtd-target-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'src/deep'), { recursive: true });
  const source = join(root, 'src/deep/a.ts');
  writeFileSync(source, '');
  const old = { label: 'old', binary: '/elsewhere/ivtd' };
  t.same(defaultTarget(null, root), { label: 'this checkout', checkout: root }, 'no baseline: this checkout through tsx');
  t.same(defaultTarget({ label: 'old', checkout: '/elsewhere' }, root), { label: 'this checkout', checkout: root }, 'a baseline checkout: this checkout through tsx');
  t.throws(() => defaultTarget(old, root), /dist\/ivtd is not built: run npm run build/, 'no binary built');
  mkdirSync(join(root, 'dist'));
  const binary = join(root, 'dist/ivtd');
  writeFileSync(binary, '');
  const s = Date.now() / 1000;
  utimesSync(source, s - 100, s - 100);
  utimesSync(binary, s - 50, s - 50);
  t.same(defaultTarget(old, root), { label: 'dist/ivtd', binary }, 'built after the sources: the binary');
  utimesSync(source, s - 10, s - 10);
  t.throws(() => defaultTarget(old, root), /dist\/ivtd is older than the sources under src\/: rebuild it/, 'a source (in a subfolder) changed since the build');
});
