// The ads.txt / app-ads.txt crawl against a local HTTP server playing many hosts (the
// refresher connects there for every host name): redirect rules, 404, soft 404, expiry,
// the last good copy on error, SUBDOMAIN, traffic-seen domains bounded and forgotten;
// then the bundle's index answers authorize().
import t from 'tap';
import { existsSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataRefresher } from '../../src/data/refresh.ts';
import { parseSources } from '../../src/data/sources.ts';
import { readAdsTxtFiles, rootOfSeen } from '../../src/data/ads-txt-crawl.ts';
import { loadBundle } from '../../src/data/bundle.ts';
import { ADS_TXT_RESULT, AdsTxtIndex } from '../../src/signals/ads-txt.ts';
import { DAY_MS } from '../../src/base/time.ts';
import { FakeWeb } from '../helpers/fake-web.ts';

const TEXT = { 'Content-Type': 'text/plain; charset=utf-8' };
const HTML = { 'Content-Type': 'text/html' };

async function setup(t: { teardown(fn: () => unknown): void }, adsTxt: object = {}, schemes?: string[]) {
  const w = await FakeWeb.start();
  t.teardown(() => w.stop());
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-crawl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const clock = { now: Date.now() };
  const sources = parseSources(
    JSON.stringify({
      adsTxt: { domains: ['news.example'], appDomains: ['games.example'], fromTraffic: 20, rate: 100, concurrency: 4, ...(schemes ? { schemes } : {}), ...adsTxt },
    }),
    'sources.json',
  );
  const r = new DataRefresher({ dataDir: dir, sources, connect: w.connect, now: () => clock.now });
  return { w, dir, r, clock };
}

function serveSites(w: FakeWeb): void {
  w.set('news.example/ads.txt', { body: 'exchange1.example, pub-1, DIRECT\nSUBDOMAIN=video.news.example\nSUBDOMAIN=elsewhere.example\n', headers: TEXT, etag: '"n1"' });
  w.set('video.news.example/ads.txt', { body: 'exchange1.example, vid-9, DIRECT\n', headers: TEXT });
  w.set('games.example/app-ads.txt', { body: 'exchange1.example, app-5, DIRECT\n', headers: TEXT });
  w.set('redirected.example/ads.txt', { status: 301, headers: { Location: 'http://www.redirected.example/ads.txt' } });
  w.set('www.redirected.example/ads.txt', { body: 'exchange1.example, r-1, RESELLER\n', headers: TEXT });
  w.set('offsite.example/ads.txt', { status: 302, headers: { Location: 'http://cdn.adsmanager.example/offsite.txt' } });
  w.set('cdn.adsmanager.example/offsite.txt', { body: 'exchange1.example, o-1, DIRECT\n', headers: TEXT });
  w.set('twohop.example/ads.txt', { status: 302, headers: { Location: 'http://cdn.adsmanager.example/hop' } });
  w.set('cdn.adsmanager.example/hop', { status: 302, headers: { Location: 'http://cdn.adsmanager.example/final.txt' } });
  w.set('cdn.adsmanager.example/final.txt', { body: 'exchange1.example, t-1, DIRECT\n', headers: TEXT });
  // missing.example has no route: 404
  w.set('soft404.example/ads.txt', { body: '<html><body>Page not found</body></html>', headers: HTML });
  w.set('textsoft404.example/ads.txt', { body: 'Sorry, nothing here.\n', headers: TEXT });
  w.set('placeholder.example/ads.txt', { body: 'placeholder.example.com, placeholder, DIRECT, placeholder\n', headers: TEXT });
  w.set('flaky.example/ads.txt', { body: 'exchange1.example, f-1, DIRECT\n', headers: TEXT });
  w.set('huge.example/ads.txt', { body: `exchange1.example, h-1, DIRECT\n${'#'.repeat(3 * 1024 * 1024)}\n`, headers: TEXT });
}

const SEEN = [
  'www.redirected.example', 'https://offsite.example/some/page?x=1', 'twohop.example', 'missing.example', 'soft404.example',
  'textsoft404.example', 'sub.placeholder.example', 'flaky.example', 'huge.example', 'not a domain', '192.0.2.1', '', 'localhost',
];

function indexOf(dir: string): AdsTxtIndex {
  const b = loadBundle({ dataDir: dir, mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });
  return AdsTxtIndex.fromCompiled(b.adsTxt.compiled);
}

t.test('crawl rules and the verdicts they lead to', async (t) => {
  const { w, dir, r } = await setup(t);
  serveSites(w);
  writeFileSync(join(dir, 'app-developers.txt'), 'com.games.puzzle games.example\n');
  r.noteDomainsSeen(SEEN);
  const report = await r.runOnce({ all: true });
  t.match(report.adsTxt, { crawled: 12, failed: 4 }, 'news, games, 9 seen roots, 1 declared subdomain; 4 failures');
  t.ok(w.requestsTo('news.example/ads.txt').length >= 1);
  t.match(w.requestsTo('news.example/ads.txt')[0]!.headers, { 'user-agent': /^ivtd\//, accept: 'text/plain' });
  t.equal(w.requestsTo('elsewhere.example/ads.txt').length, 0, 'a SUBDOMAIN outside the root domain is ignored');

  const idx = indexOf(dir);
  const a = (dmn: string, pub: string, app = '') => idx.authorize(dmn, app, 'exchange1.example', pub, null);
  t.equal(a('news.example', 'pub-1'), ADS_TXT_RESULT.direct);
  t.equal(a('www.news.example', 'pub-1'), ADS_TXT_RESULT.direct);
  t.equal(a('news.example', 'pub-2'), ADS_TXT_RESULT.seller_not_listed);
  t.equal(a('video.news.example', 'vid-9'), ADS_TXT_RESULT.direct, 'the declared SUBDOMAIN was crawled');
  t.equal(a('', 'app-5', 'com.games.puzzle'), ADS_TXT_RESULT.direct, 'app-ads.txt of the developer domain');
  t.equal(a('redirected.example', 'r-1'), ADS_TXT_RESULT.reseller, 'redirect within the root domain followed');
  t.equal(a('offsite.example', 'o-1'), ADS_TXT_RESULT.direct, 'one redirect outside the root domain followed');
  t.equal(a('twohop.example', 't-1'), ADS_TXT_RESULT.unavailable, 'a second redirect after leaving the root domain is an error');
  t.equal(a('missing.example', 'x'), ADS_TXT_RESULT.no_file, '404: no file (all sellers, per the spec): unknown');
  t.equal(a('soft404.example', 'x'), ADS_TXT_RESULT.unavailable, 'an HTML page is not an ads.txt');
  t.equal(a('textsoft404.example', 'x'), ADS_TXT_RESULT.unavailable, 'text without one valid line is not an ads.txt');
  t.equal(a('placeholder.example', 'x'), ADS_TXT_RESULT.no_seller_authorized);
  t.equal(a('huge.example', 'h-1'), ADS_TXT_RESULT.unavailable, 'over the size limit: refused');
  t.equal(a('never-seen.example', 'x'), ADS_TXT_RESULT.not_crawled);
  t.equal(a('flaky.example', 'f-1'), ADS_TXT_RESULT.direct);

  const st = r.status().adsTxt;
  t.match(st.site, { ok: 6, no_file: 1, failed: 4, new: 0 });
  t.match(st.app, { ok: 1 });
});

t.test('declared hosts are followed from a root\'s own file only: a chain of SUBDOMAINs and partners stops there', async (t) => {
  // A hostile host whose every file declares four more subdomains (and a partner doing the
  // same) grew the crawl without end, crowding out the re-crawls that were due.
  const { w, r } = await setup(t, { domains: ['chain.example'], appDomains: [] });
  let served = 0;
  const chain = (host: string) => {
    served++;
    const lines = ['exchange1.example, c-1, DIRECT'];
    for (let i = 0; i < 4; i++) lines.push(`SUBDOMAIN=s${i}.${host}`);
    lines.push(`INVENTORYPARTNERDOMAIN=p${served}.example`);
    return { body: lines.join('\n') + '\n', headers: TEXT };
  };
  // Every host the crawl might reach answers with more declarations.
  const hosts = ['chain.example', 's0.chain.example', 's1.chain.example', 's2.chain.example', 's3.chain.example', 'p1.example',
    's0.s0.chain.example', 's1.s0.chain.example', 'p2.example', 'p3.example', 'p4.example', 'p5.example', 'p6.example'];
  for (const h of hosts) w.set(`${h}/ads.txt`, chain(h));
  for (let round = 0; round < 4; round++) await r.runOnce({ all: true });
  const st = r.status().adsTxt.site;
  const total = Object.values(st).reduce((a, b) => a + (b ?? 0), 0);
  t.equal(total, 6, `the root, its 4 subdomains and its 1 partner, however many rounds (${JSON.stringify(st)})`);
  t.equal(w.requestsTo('s0.s0.chain.example/ads.txt').length, 0, 'a subdomain\'s own SUBDOMAIN is not followed');
  for (const p of ['p2.example', 'p3.example', 'p4.example', 'p5.example', 'p6.example']) {
    t.equal(w.requestsTo(`${p}/ads.txt`).length, 0, `${p}, declared by a dependent's file, is not followed`);
  }
});

t.test('https first, http when https cannot connect', async (t) => {
  const { w, dir, r } = await setup(t, {}, ['https', 'http']);
  serveSites(w);
  await r.runOnce({ all: true });
  t.equal(indexOf(dir).authorize('news.example', '', 'exchange1.example', 'pub-1', null), ADS_TXT_RESULT.direct);
});

t.test('expiry, conditional re-fetch, the last good copy on error, staleness', async (t) => {
  const { w, dir, r, clock } = await setup(t, { expiry: '7d', stale: '7d' });
  serveSites(w);
  r.noteDomainsSeen(['flaky.example']);
  await r.runOnce({ all: true });
  w.seen.length = 0;
  clock.now += DAY_MS;
  const early = await r.runOnce({ all: false, sources: false });
  t.equal(early.adsTxt.crawled, 0, 'nothing is due a day later');
  clock.now += 7 * DAY_MS;
  w.set('flaky.example/ads.txt', { status: 503, body: 'down for maintenance' });
  const late = await r.runOnce({ all: false, sources: false });
  t.equal(late.adsTxt.crawled, 4, 'due after 7 days: news, its subdomain, games, flaky');
  t.equal(w.requestsTo('news.example/ads.txt')[0]!.headers['if-none-match'], '"n1"', 'the re-fetch is conditional');
  t.ok(existsSync(join(dir, 'ads-txt', 'site', 'flaky.example.txt')), 'the last good copy stays on disk');
  const use = (at: number) => readAdsTxtFiles(dir, at).files.find((f) => f.host === 'flaky.example')?.status;
  t.equal(use(clock.now), 'ok', 'and is used within expiry + stale allowance');
  t.equal(use(clock.now + 7 * DAY_MS), 'unavailable', 'but not beyond it');
  const failed = readAdsTxtFiles(dir, clock.now);
  t.ok(failed.files.some((f) => f.host === 'news.example' && f.status === 'ok'));

  // Retry backs off: an hour later it is due again.
  w.seen.length = 0;
  clock.now += 3_600_000;
  await r.runOnce({ all: false, sources: false });
  t.equal(w.requestsTo('flaky.example/ads.txt').length, 1, 'retried after the back-off');
});

t.test('domains seen in traffic are bounded and forgotten', async (t) => {
  const { w, dir, r, clock } = await setup(t, { fromTraffic: 3, forget: '2d' });
  for (const d of ['a', 'b', 'c', 'd', 'e', 'news']) w.set(`${d}.example/ads.txt`, { body: `exchange1.example, ${d}, DIRECT\n`, headers: TEXT });
  r.noteDomainsSeen(['www.a.example', 'b.example', 'c.example']);
  await r.runOnce({ all: true });
  t.ok(existsSync(join(dir, 'ads-txt', 'site', 'a.example.txt')));
  r.noteDomainsSeen(['a.example']); // a is now the most recent
  r.noteDomainsSeen(['d.example', 'e.example']); // evicts b then c
  t.notOk(existsSync(join(dir, 'ads-txt', 'site', 'b.example.txt')), 'the least recently seen domain is forgotten with its file');
  t.notOk(existsSync(join(dir, 'ads-txt', 'site', 'c.example.txt')));
  t.ok(existsSync(join(dir, 'ads-txt', 'site', 'a.example.txt')), 'a domain seen again stays');
  await r.runOnce({ all: true });
  t.match(r.status().adsTxt.site, { ok: 4 }, 'news plus the three kept');
  clock.now += 3 * DAY_MS;
  r.noteDomainsSeen(['e.example']);
  await r.runOnce({ all: false, sources: false });
  t.notOk(existsSync(join(dir, 'ads-txt', 'site', 'a.example.txt')), 'not seen for longer than forget: dropped');
  t.ok(existsSync(join(dir, 'ads-txt', 'site', 'e.example.txt')));
  t.ok(existsSync(join(dir, 'ads-txt', 'site', 'news.example.txt')), 'listed domains are never forgotten');
});

t.test('an operator file without a crawl entry is used as is; the crawl stays off without an adsTxt section', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-crawl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'ads-txt', 'site'), { recursive: true });
  writeFileSync(join(dir, 'ads-txt', 'site', 'own.example.txt'), 'exchange1.example, own-1, DIRECT\n');
  writeFileSync(join(dir, 'ads-txt', 'site', 'Not_A_Host.txt'), 'ignored');
  t.equal(indexOf(dir).authorize('own.example', '', 'exchange1.example', 'own-1', null), ADS_TXT_RESULT.direct);
  const r = new DataRefresher({ dataDir: dir, sources: parseSources('{}', 'sources.json') });
  r.noteDomainsSeen(['x.example']);
  const report = await r.runOnce({ all: true });
  t.same(report.adsTxt, { crawled: 0, changed: 0, failed: 0 }, 'no adsTxt section: no crawl, no outbound request');
  t.equal(r.status().adsTxt.enabled, false);
});

t.test('values seen in traffic reduce to root domains', async (t) => {
  t.equal(rootOfSeen('WWW.News.Example.co.uk.'), 'example.co.uk');
  t.equal(rootOfSeen('https://m.site.example:8443/path?q#f'), 'site.example');
  for (const bad of ['', 'localhost', '192.0.2.1', '[2001:db8::1]', 'x'.repeat(400), 'bad domain.example']) t.equal(rootOfSeen(bad), null, JSON.stringify(bad.slice(0, 20)));
});
