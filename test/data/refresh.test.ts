// The data refresher against a local HTTP server serving hand-written files in each
// published format (test/fixtures/refresh): fetch → validate → atomic write → bundle →
// lookup, conditional requests, and every way a source can fail keeping the last good data.
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { DataRefresher, type LogLike } from '../../src/data/refresh.ts';
import { parseSources } from '../../src/data/sources.ts';
import { describeBundle, loadBundle } from '../../src/data/bundle.ts';
import { IpRanges, rangeCategoryNames } from '../../src/signals/ip-ranges.ts';
import { parseIp } from '../../src/signals/ip-address.ts';
import { SellersRegistry } from '../../src/signals/sellers.ts';
import { FakeWeb } from '../helpers/fake-web.ts';
import { makeTar } from '../helpers/tar.ts';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, '..', 'fixtures', 'refresh', name), 'utf8');
const require = createRequire(import.meta.url);
const COUNTRY_MMDB = readFileSync(require.resolve('@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country-ipv4.mmdb'));

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-refresh-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function collectLog(): LogLike & { lines: Array<{ level: string; obj: object; msg: string }> } {
  const lines: Array<{ level: string; obj: object; msg: string }> = [];
  const at = (level: string) => (obj: object, msg: string) => lines.push({ level, obj, msg });
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}

const bundleOf = (dataDir: string) => loadBundle({ dataDir, mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });

function categoriesAt(r: IpRanges, ip: string): string[] {
  return rangeCategoryNames(r.lookup(parseIp(ip)!));
}

async function web(t: { teardown(fn: () => Promise<void>): void }): Promise<FakeWeb> {
  const w = await FakeWeb.start();
  t.teardown(() => w.stop());
  return w;
}

function serveAll(w: FakeWeb): void {
  w.set('/aws.json', { body: fixture('aws-ip-ranges.json'), etag: '"aws-1"', headers: { 'Content-Type': 'application/json' } });
  w.set('/cloud.json', { body: fixture('gcp-cloud.json'), lastModified: 'Wed, 29 May 2024 16:00:00 GMT' });
  w.set('/azure/details', { body: fixture('azure-download-page.html').replace('{BASE}', w.base), headers: { 'Content-Type': 'text/html' } });
  w.set('/download/ServiceTags_Public_20240527.json', fixture('azure-service-tags.json'));
  w.set('/oracle.json', { body: fixture('oracle-public-ip-ranges.json'), etag: '"o1"' });
  w.set('/ips-v4', { body: fixture('cloudflare-ips-v4'), etag: '"cf"' });
  w.set('/geo/google.csv', fixture('digitalocean-geofeed.csv'));
  w.set('/torbulkexitlist', { body: fixture('torbulkexitlist'), etag: '"tor-1"' });
  w.set('/vpn.txt', '198.51.100.0/25\n');
  w.set('/egress-ip-ranges.csv', { body: fixture('egress-ip-ranges.csv'), etag: '"relay"' });
}

function allSources(w: FakeWeb, extra: object = {}) {
  return parseSources(
    JSON.stringify({
      contact: 'ops@bidder.example',
      sources: [
        { name: 'aws', format: 'aws-ip-ranges', url: `${w.base}/aws.json` },
        { name: 'gcp', format: 'gcp-cloud', url: `${w.base}/cloud.json` },
        { name: 'azure', format: 'azure-service-tags', url: `${w.base}/azure/details` },
        { name: 'oracle', format: 'oracle-ip-ranges', url: `${w.base}/oracle.json`, maxBytes: 2048 },
        { name: 'cloudflare', format: 'cidr-list', category: 'hosting', url: `${w.base}/ips-v4` },
        { name: 'digitalocean', format: 'cidr-list', category: 'hosting', url: `${w.base}/geo/google.csv` },
        { name: 'tor', format: 'tor-exit-list', url: `${w.base}/torbulkexitlist` },
        { name: 'my-vpns', format: 'cidr-list', category: 'vpn', url: `${w.base}/vpn.txt` },
        { name: 'icloud-relay', format: 'apple-private-relay', url: `${w.base}/egress-ip-ranges.csv` },
      ],
      ...extra,
    }),
    'sources.json',
  );
}

t.test('every published format: fetched, written, loaded, looked up', async (t) => {
  const w = await web(t);
  serveAll(w);
  const dir = tempDir(t);
  const log = collectLog();
  const r = new DataRefresher({ dataDir: dir, sources: allSources(w), log });
  const report = await r.runOnce({ all: true });
  t.same(report.items.map((i) => `${i.name}:${i.result}`), ['aws', 'gcp', 'azure', 'oracle', 'cloudflare', 'digitalocean', 'tor', 'my-vpns', 'icloud-relay'].map((n) => `${n}:changed`));
  t.equal(report.changed, true);
  t.match(w.seen[0]!.headers['user-agent'], /^ivtd\/\d+\.\d+\.\d+ \(\+data refresh; ops@bidder\.example\)$/, 'User-Agent names ivtd and the operator');
  t.match(readFileSync(join(dir, 'ranges', 'aws.txt'), 'utf8'), /^# ivtd ranges from source "aws".*\n.*\n198\.18\.0\.0\/24 hosting\n/);

  const b = bundleOf(dir);
  t.same(b.ipRanges.files.map((f) => [f.name, f.entries]), [
    ['ranges/aws.txt', 4], ['ranges/azure.txt', 4], ['ranges/cloudflare.txt', 3], ['ranges/digitalocean.txt', 3], ['ranges/gcp.txt', 2],
    ['ranges/icloud-relay.txt', 3], ['ranges/my-vpns.txt', 1], ['ranges/oracle.txt', 3], ['ranges/tor.txt', 3],
  ]);
  // No crawler source here: the embedded crawler and monitor lists are loaded.
  t.same(b.bots.lists.map((l) => [l.list, l.source]), [['crawlers', 'embedded:data/bot-ip-blocks/crawlers.json'], ['monitoring', 'embedded:data/bot-ip-blocks/monitoring.json']]);
  const ranges = IpRanges.fromCompiled(b.ipRanges.compiled);
  for (const [ip, want] of [
    ['198.18.0.9', ['hosting']], // AWS
    ['2001:db8:a000::1', ['hosting']], // AWS IPv6
    ['198.18.20.1', ['hosting']], // GCP
    ['198.18.64.1', ['hosting']], // Azure (found through the download page)
    ['198.18.97.1', ['hosting']], // Oracle
    ['198.18.129.1', ['hosting']], // Cloudflare list
    ['2001:db8:e000::5', ['hosting']], // DigitalOcean geofeed
    ['203.0.113.8', ['tor']],
    ['198.51.100.200', ['tor']], // a Tor exit ...
    ['198.51.100.1', ['vpn']], // ... next to the operator's VPN range
    ['192.0.2.33', ['relay']],
    ['2001:db8:f000::1', ['relay']],
    ['198.18.200.1', []],
  ] as const) {
    t.same(categoriesAt(ranges, ip), want, ip);
  }
  const described = describeBundle(b).find((d) => d.name === 'ranges/tor.txt');
  t.match(described, { source: join(dir, 'ranges', 'tor.txt'), entries: 3 }, 'the startup log names each ranges file and its source');
  const st = r.status();
  t.equal(st.sources.length, 9);
  t.ok(st.sources.every((s) => s.status === 'ok' && s.successAt !== null && s.failures === 0));
  t.ok(log.lines.some((l) => l.level === 'info' && (l.obj as { source?: string }).source === 'tor'), 'each source logs its result');
});

t.test('conditional requests: 304 keeps the files untouched', async (t) => {
  const w = await web(t);
  serveAll(w);
  const dir = tempDir(t);
  let clock = Date.now();
  const r = new DataRefresher({ dataDir: dir, sources: allSources(w), now: () => clock });
  await r.runOnce({ all: true });
  const before = statSync(join(dir, 'ranges', 'aws.txt')).mtimeMs;
  const firstSuccess = r.status().sources.find((s) => s.name === 'aws')!.successAt!;
  clock += 60_000;
  w.seen.length = 0;
  const again = await r.runOnce({ all: true });
  t.equal(w.requestsTo('/aws.json')[0]!.headers['if-none-match'], '"aws-1"', 'ETag sent back');
  t.equal(w.requestsTo('/cloud.json')[0]!.headers['if-modified-since'], 'Wed, 29 May 2024 16:00:00 GMT', 'Last-Modified sent back');
  t.match(again.items.find((i) => i.name === 'aws'), { result: 'unchanged', detail: 'not modified (304)' });
  t.match(again.items.find((i) => i.name === 'gcp'), { result: 'unchanged', detail: 'not modified (304)' });
  t.match(again.items.find((i) => i.name === 'my-vpns'), { result: 'unchanged' }, 'no validator: fetched again, same content');
  t.equal(again.changed, false, 'nothing changed: no reload');
  t.equal(statSync(join(dir, 'ranges', 'aws.txt')).mtimeMs, before, 'file not rewritten');
  t.equal(r.status().sources.find((s) => s.name === 'aws')!.successAt, firstSuccess + 60_000, 'a 304 counts as a success (the data is current)');

  // Deleting an output makes the next request unconditional.
  rmSync(join(dir, 'ranges', 'aws.txt'));
  w.seen.length = 0;
  const third = await r.runOnce({ all: true });
  t.equal(w.requestsTo('/aws.json')[0]!.headers['if-none-match'], undefined, 'no output file: no conditional header');
  t.match(third.items.find((i) => i.name === 'aws'), { result: 'changed' });

  // Under serve, a source is fetched only when due.
  w.seen.length = 0;
  const due = await r.runOnce({ all: false, intervalMs: 3_600_000 });
  t.ok(due.items.every((i) => i.result === 'skipped'), 'nothing is due an hour later');
  t.equal(w.seen.length, 0);
});

t.test('broken, truncated, oversized and wrong-format answers keep the previous data', async (t) => {
  const w = await web(t);
  serveAll(w);
  const dir = tempDir(t);
  const log = collectLog();
  let clock = Date.now();
  const r = new DataRefresher({ dataDir: dir, sources: allSources(w), log, now: () => clock });
  await r.runOnce({ all: true });
  const files = ['aws', 'gcp', 'azure', 'oracle', 'cloudflare', 'digitalocean', 'tor', 'my-vpns', 'icloud-relay'];
  const before = Object.fromEntries(files.map((f) => [f, readFileSync(join(dir, 'ranges', `${f}.txt`), 'utf8')]));
  const lookupsBefore = IpRanges.fromCompiled(bundleOf(dir).ipRanges.compiled);

  const awsText = fixture('aws-ip-ranges.json');
  w.set('/aws.json', { body: awsText.slice(0, 200) }); // cut JSON
  w.set('/cloud.json', { body: fixture('gcp-cloud.json'), truncateTo: 100 }); // connection drops mid-body
  w.set('/azure/details', { status: 500, body: 'Internal Server Error' });
  w.set('/oracle.json', { body: JSON.stringify({ regions: [{ region: 'x', cidrs: [{ cidr: '198.18.80.0/21', pad: 'x'.repeat(4000) }] }] }) }); // over maxBytes 2048
  w.set('/ips-v4', { body: '<!DOCTYPE html><html><body>Please sign in</body></html>', headers: { 'Content-Type': 'text/html' } });
  w.set('/geo/google.csv', { body: fixture('gcp-cloud.json') }); // JSON where a CSV belongs
  w.set('/torbulkexitlist', { body: '203.0.113.7\n' }); // 1 of 3: looks truncated
  w.set('/vpn.txt', { body: '0.0.0.0/0\n' }); // hostile
  w.set('/egress-ip-ranges.csv', { status: 404, body: 'gone' });
  clock += 3_600_000;
  const report = await r.runOnce({ all: true });
  const reasons = Object.fromEntries(report.items.map((i) => [i.name, `${i.result}: ${i.detail}`]));
  t.match(reasons.aws, /^failed: not JSON, so not AWS ip-ranges\.json/);
  t.match(reasons.gcp, /^failed: the connection closed before the whole body arrived/);
  t.match(reasons.azure, /^failed: HTTP 500 from/);
  t.match(reasons.oracle, /^failed: body of \d+ bytes is over the 2048-byte limit/);
  t.match(reasons.cloudflare, /^failed: the body is HTML\/XML, not a CIDR list/);
  t.match(reasons.digitalocean, /^failed: the body is JSON, not a CIDR list/);
  t.match(reasons.tor, /^failed: only 1 ranges where the last good copy had 3 \(below minKeep 0\.5\): looks truncated/);
  t.match(reasons['my-vpns'], /^failed: no usable range in the CIDR list \(e\.g\. "0\.0\.0\.0\/0": prefix \/0 is broader than \/8\)/);
  t.match(reasons['icloud-relay'], /^failed: HTTP 404/);
  for (const f of files) t.match(reasons[f], /the data fetched \d{4}-\d\d-\d\dT.*stays in use$/, `${f}: the reason says the old data stays`);
  t.equal(report.changed, false);
  for (const f of files) t.equal(readFileSync(join(dir, 'ranges', `${f}.txt`), 'utf8'), before[f], `${f}: last good copy kept on disk`);
  const after = IpRanges.fromCompiled(bundleOf(dir).ipRanges.compiled);
  for (const ip of ['198.18.0.9', '203.0.113.8', '192.0.2.1', '198.51.100.1']) t.equal(after.lookup(parseIp(ip)!), lookupsBefore.lookup(parseIp(ip)!), `${ip}: same answer as before`);
  const st = r.status().sources;
  t.ok(st.every((s) => s.status === 'failed' && s.failures === 1 && s.error !== null), 'status shows each failure with its reason');
  t.ok(st.every((s) => s.successAt! < clock), 'and the time of the last good copy');
  t.equal(log.lines.filter((l) => l.level === 'warn').length, 9, 'each failure logged once as a warning');
  t.match(log.lines.find((l) => l.level === 'warn')!.obj, { source: 'aws', reason: /not JSON/ });

  // A source that recovers is used again.
  serveAll(w);
  const healed = await r.runOnce({ all: true });
  t.ok(healed.items.every((i) => i.result !== 'failed'));
  t.ok(r.status().sources.every((s) => s.status === 'ok' && s.failures === 0 && s.error === null));
});

t.test('a hand-broken ranges file is refused by name at load', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'ranges'));
  writeFileSync(join(dir, 'ranges', 'mine.txt'), '198.51.100.0/24 vpn\n198.51.101.0/24 datacentre\n');
  t.throws(() => bundleOf(dir), /ranges\/mine\.txt:2: unknown category "datacentre".*fix or delete the file/);
});

t.test('MaxMind: tar.gz with the licence, validated, then used by the bundle', async (t) => {
  const w = await web(t);
  const dir = tempDir(t);
  const auth = `Basic ${Buffer.from('1234:lic-key').toString('base64')}`;
  const tarball = zlib.gzipSync(makeTar([
    { name: 'GeoLite2-Country_20240528/', data: '', type: '5' },
    { name: 'GeoLite2-Country_20240528/COPYRIGHT.txt', data: 'test' },
    { name: 'GeoLite2-Country_20240528/GeoLite2-Country.mmdb', data: COUNTRY_MMDB },
  ]));
  const guarded = (body: Buffer) => ({
    handler: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
      if (req.headers.authorization !== auth) return void res.writeHead(401).end('bad credentials');
      res.writeHead(200, { 'Content-Type': 'application/gzip', 'Last-Modified': 'Tue, 28 May 2024 00:00:00 GMT' }).end(body);
    },
  });
  w.set('/geoip/databases/GeoLite2-Country/download?suffix=tar.gz', guarded(tarball));
  const sources = (edition: string, creds = { accountId: '1234', licenseKey: 'lic-key' }) =>
    parseSources(JSON.stringify({ sources: [{ name: 'country', format: 'maxmind', edition, url: `${w.base}/geoip/databases/${edition}/download?suffix=tar.gz` }] }), 'sources.json', creds);

  const r = new DataRefresher({ dataDir: dir, sources: sources('GeoLite2-Country') });
  const report = await r.runOnce({ all: true });
  t.match(report.items[0], { kind: 'maxmind', result: 'changed', detail: /^country ipv4 \d{4}-\d\d-\d\d, \d+ bytes written to/ });
  t.ok(readFileSync(join(dir, 'country.mmdb')).equals(COUNTRY_MMDB), 'the .mmdb came out of the tar.gz whole');
  t.equal(bundleOf(dir).countryMmdb.source, join(dir, 'country.mmdb'), 'the bundle uses the download');

  const wrongKey = new DataRefresher({ dataDir: dir, sources: sources('GeoLite2-Country', { accountId: '1234', licenseKey: 'nope' }) });
  t.match((await wrongKey.runOnce({ all: true })).items[0], { result: 'failed', detail: /^HTTP 401/ });

  w.set('/geoip/databases/GeoLite2-ASN/download?suffix=tar.gz', guarded(tarball));
  const wrongType = new DataRefresher({ dataDir: dir, sources: sources('GeoLite2-ASN') });
  t.match((await wrongType.runOnce({ all: true })).items[0], { result: 'failed', detail: /records lack the expected fields|is a "country ipv4" database, not one for asn\.mmdb/ });
  t.notOk(existsSync(join(dir, 'asn.mmdb')), 'nothing written for a wrong database');

  for (const [what, body] of [
    ['not gzip', Buffer.from('<html>maintenance</html>')],
    ['gzip of no tar', zlib.gzipSync('just text')],
    ['tar without an mmdb', zlib.gzipSync(makeTar([{ name: 'x/README', data: 'no db' }]))],
    ['truncated tar', zlib.gzipSync(makeTar([{ name: 'x/GeoLite2-Country.mmdb', data: COUNTRY_MMDB }]).subarray(0, 100_000))],
    ['corrupt mmdb', zlib.gzipSync(makeTar([{ name: 'x/GeoLite2-Country.mmdb', data: Buffer.alloc(5000, 7) }]))],
  ] as const) {
    w.set('/geoip/databases/GeoLite2-Country/download?suffix=tar.gz', guarded(body));
    const item = (await new DataRefresher({ dataDir: dir, sources: sources('GeoLite2-Country') }).runOnce({ all: true })).items[0]!;
    t.equal(item.result, 'failed', `${what}: ${item.detail}`);
    t.ok(readFileSync(join(dir, 'country.mmdb')).equals(COUNTRY_MMDB), `${what}: the last good database stays`);
  }

  const overridden = new DataRefresher({ dataDir: tempDir(t), sources: sources('GeoLite2-Country'), overridden: { 'country.mmdb': '--mmdb-country' } });
  w.set('/geoip/databases/GeoLite2-Country/download?suffix=tar.gz', guarded(tarball));
  const o = (await overridden.runOnce({ all: true })).items[0]!;
  t.match(o, { result: 'unchanged', detail: /--mmdb-country is set, so the server uses that file instead/ }, 'no reload for a file a flag overrides');
});

t.test('sellers.json: listed and traffic-seen domains, compacted, bounded, garbage refused', async (t) => {
  const w = await web(t);
  const dir = tempDir(t);
  const sellersDoc = {
    contact_email: 'adops@exchange9.example',
    version: '1.0',
    sellers: [
      { seller_id: 'pub-1', name: 'News Publisher Ltd', domain: 'news.example', seller_type: 'PUBLISHER', comment: 'long free text' },
      { seller_id: 'int-7', name: 'Reseller Co', domain: 'reseller.example', seller_type: 'INTERMEDIARY' },
      { seller_id: 'conf-3', is_confidential: 1, seller_type: 'PUBLISHER' },
    ],
  };
  w.set('/sellers/exchange9.example.json', { body: JSON.stringify(sellersDoc), etag: '"s1"', headers: { 'Content-Type': 'application/json' } });
  w.set('/sellers/seen-b.example.json', JSON.stringify({ sellers: [{ seller_id: 'b1', seller_type: 'PUBLISHER' }] }));
  const sources = parseSources(
    JSON.stringify({ sellers: { domains: ['exchange9.example'], fromTraffic: 2, url: `${w.base}/sellers/{domain}.json` }, adsTxt: { rate: 50 } }),
    'sources.json',
  );
  const r = new DataRefresher({ dataDir: dir, sources });
  r.noteSellersSeen(['seen-a.example', 'Seen-B.example', 'not a domain', 'seen-c.example', 'exchange9.example']);
  t.match(r.status().sellers, { listed: 1, fromTraffic: 2 }, 'bounded: the least recently seen one was dropped');
  const report = await r.runOnce({ all: true });
  const byName = Object.fromEntries(report.items.map((i) => [i.name, i]));
  t.match(byName['exchange9.example'], { result: 'changed', detail: '3 sellers' });
  t.match(byName['seen-b.example'], { result: 'changed' });
  t.match(byName['seen-c.example'], { result: 'failed', detail: /HTTP 404/ });
  t.notOk(byName['seen-a.example'], 'the dropped one is not fetched');
  t.equal(w.requestsTo('/sellers/exchange9.example.json')[0]!.headers['user-agent']?.startsWith('ivtd/'), true);

  const stored = JSON.parse(readFileSync(join(dir, 'sellers', 'exchange9.example.json'), 'utf8'));
  t.same(stored, {
    version: '1.0', contact_email: 'adops@exchange9.example',
    sellers: [
      { seller_id: 'pub-1', seller_type: 'PUBLISHER', domain: 'news.example' },
      { seller_id: 'int-7', seller_type: 'INTERMEDIARY', domain: 'reseller.example' },
      { seller_id: 'conf-3', seller_type: 'PUBLISHER', is_confidential: 1 },
    ],
  }, 'only the fields ivtd reads are kept');
  const b = bundleOf(dir);
  const { registry } = SellersRegistry.fromFiles(b.sellers.map((f) => ({ name: f.name, text: Buffer.from(f.bytes).toString('utf8') })));
  t.equal(registry.verify({ ver: '1.0', complete: 1, nodes: [{ asi: 'exchange9.example', sid: 'pub-1', hp: 1, rid: '', name: '', domain: '' }] }), true, 'schain.verified uses the fetched file');

  w.set('/sellers/exchange9.example.json', '{"sellers": "not an array"}');
  const bad = await r.runOnce({ all: true });
  t.match(bad.items.find((i) => i.name === 'exchange9.example'), { result: 'failed', detail: /no "sellers" array/ });
  t.same(JSON.parse(readFileSync(join(dir, 'sellers', 'exchange9.example.json'), 'utf8')), stored, 'previous file kept');
  w.set('/sellers/exchange9.example.json', JSON.stringify({ sellers: [{ seller_id: 'only-one' }] }));
  t.match((await r.runOnce({ all: true })).items.find((i) => i.name === 'exchange9.example'), { result: 'failed', detail: /only 1 sellers where the last good copy had 3/ });
  t.match(r.status().sellers, { listed: 1, fromTraffic: 2, failed: 2, ok: 1 });

  // An operator's own file for a domain seen in traffic is not deleted when it is forgotten.
  writeFileSync(join(dir, 'sellers', 'mine.example.json'), JSON.stringify({ sellers: [{ seller_id: 'm' }] }));
  r.noteSellersSeen(['mine.example', 'seen-d.example', 'seen-e.example']);
  t.ok(existsSync(join(dir, 'sellers', 'mine.example.json')));
  t.notOk(existsSync(join(dir, 'sellers', 'seen-b.example.json')), 'a forgotten domain loses the file the refresher fetched');
});

t.test('one refresh at a time per data dir', async (t) => {
  const w = await web(t);
  serveAll(w);
  const dir = tempDir(t);
  const r = new DataRefresher({ dataDir: dir, sources: allSources(w) });
  mkdirSync(join(dir, 'refresh'), { recursive: true });
  writeFileSync(join(dir, 'refresh', 'lock'), String(process.ppid));
  await t.rejects(r.runOnce({ all: true }), { name: 'LockBusyError', message: new RegExp(`already running in process ${process.ppid}`) });
  writeFileSync(join(dir, 'refresh', 'lock'), '2147483646'); // no such process: a stale lock
  const report = await r.runOnce({ all: true });
  t.equal(report.items.length, 9, 'a stale lock is taken over');
  t.notOk(existsSync(join(dir, 'refresh', 'lock')), 'and released after the pass');
  // Two passes asked at once in one process run one after the other.
  const both = await Promise.all([r.runOnce({ all: true }), r.runOnce({ all: true })]);
  t.equal(both.length, 2);
});

// Every published format, sellers.json, a MaxMind download and ads.txt, each through the
// same failures: a page instead of the file, JSON of the wrong shape (or text where JSON
// belongs), the connection dropped mid-body, a complete answer holding a cut file, and a
// file over the size limit. Each time the source fails with a reason and the last good
// copy stays, on disk and in what the bundle loads.
t.test('each format: broken, truncated and oversized answers keep the last good copy', async (t) => {
  const w = await web(t);
  const dir = tempDir(t);
  const formats: Array<{ name: string; format: string; file: string; category?: string }> = [
    { name: 'aws', format: 'aws-ip-ranges', file: 'aws-ip-ranges.json' },
    { name: 'gcp', format: 'gcp-cloud', file: 'gcp-cloud.json' },
    { name: 'azure', format: 'azure-service-tags', file: 'azure-service-tags.json' },
    { name: 'oracle', format: 'oracle-ip-ranges', file: 'oracle-public-ip-ranges.json' },
    { name: 'cloudflare', format: 'cidr-list', file: 'cloudflare-ips-v4', category: 'hosting' },
    { name: 'digitalocean', format: 'cidr-list', file: 'digitalocean-geofeed.csv', category: 'hosting' },
    { name: 'tor', format: 'tor-exit-list', file: 'torbulkexitlist' },
    { name: 'tor-addresses', format: 'tor-exit-list', file: 'tor-exit-addresses' },
    { name: 'icloud-relay', format: 'apple-private-relay', file: 'egress-ip-ranges.csv' },
  ];
  const sellersDoc = JSON.stringify({ version: '1.0', sellers: [{ seller_id: 'pub-1', seller_type: 'PUBLISHER', domain: 'news.example' }, { seller_id: 'int-7', seller_type: 'INTERMEDIARY' }, { seller_id: 'p-3', seller_type: 'PUBLISHER' }] });
  const adsTxt = 'exchange1.example, pub-1, DIRECT\nexchange1.example, int-7, RESELLER\nexchange2.example, 99, RESELLER\n';
  const good = () => {
    for (const f of formats) w.set(`/${f.name}`, fixture(f.file));
    w.set('/sellers/exchange1.example.json', sellersDoc);
    w.set('news.example/ads.txt', { body: adsTxt, headers: { 'Content-Type': 'text/plain' } });
  };
  good();
  const sources = parseSources(JSON.stringify({
    sources: formats.map((f) => ({ name: f.name, format: f.format, url: `${w.base}/${f.name}`, maxBytes: 1024, ...(f.category ? { category: f.category } : {}) })),
    sellers: { domains: ['exchange1.example'], url: `${w.base}/sellers/{domain}.json`, maxBytes: 1024 },
    adsTxt: { domains: ['news.example'], maxBytes: 1024, rate: 100, schemes: ['http'] },
  }), 'sources.json');
  let clock = Date.now();
  const r = new DataRefresher({ dataDir: dir, sources, connect: w.connect, now: () => clock });
  const first = await r.runOnce({ all: true });
  t.same(first.items.filter((i) => i.result !== 'changed').map((i) => `${i.name}: ${i.detail}`), [], 'every file good at first');
  t.match(first.adsTxt, { crawled: 1, changed: 1, failed: 0 });
  const outputs = [...formats.map((f) => join(dir, 'ranges', `${f.name}.txt`)), join(dir, 'sellers', 'exchange1.example.json'), join(dir, 'ads-txt', 'site', 'news.example.txt')];
  const saved = outputs.map((p) => readFileSync(p, 'utf8'));
  const probe = () => {
    const b = bundleOf(dir);
    const ranges = IpRanges.fromCompiled(b.ipRanges.compiled);
    return JSON.stringify([
      ['198.18.0.9', '198.18.20.1', '198.18.64.1', '198.18.97.1', '198.18.129.1', '2001:db8:e000::5', '203.0.113.8', '192.0.2.33'].map((ip) => ranges.lookup(parseIp(ip)!)),
      b.ipRanges.files.map((f) => f.entries),
      b.adsTxt.stats.records,
      b.sellers.map((f) => f.name).sort(),
    ]);
  };
  const answersBefore = probe();

  const page = '<!DOCTYPE html><html><head><title>Maintenance</title></head><body>Back soon</body></html>\n';
  const cases: Array<[string, (body: string) => Partial<import('../helpers/fake-web.ts').Route>]> = [
    ['an HTML page', () => ({ body: page, headers: { 'Content-Type': 'text/html' } })],
    ['JSON of another shape', () => ({ body: '{"status": "ok", "items": []}', headers: { 'Content-Type': 'application/json' } })],
    ['the connection dropped mid-body', (body) => ({ body, truncateTo: Math.floor(body.length / 2) })],
    ['a cut file', (body) => ({ body: body.slice(0, Math.floor(body.length * 0.3)) })],
    ['a file over the size limit', (body) => ({ body: body.endsWith('}\n') || body.endsWith('}') ? `${body}${' '.repeat(1100)}` : `${body}${'# padding\n'.repeat(110)}` })],
  ];
  for (const [what, route] of cases) {
    for (const f of formats) w.set(`/${f.name}`, { ...route(fixture(f.file)) });
    w.set('/sellers/exchange1.example.json', { ...route(sellersDoc) });
    w.set('news.example/ads.txt', { headers: { 'Content-Type': 'text/plain' }, ...route(adsTxt) });
    clock += 8 * 86_400_000; // past the ads.txt expiry: everything is fetched again
    const report = await r.runOnce({ all: true });
    for (const item of report.items) t.equal(item.result, 'failed', `${what}: ${item.kind} ${item.name} fails (${item.detail})`);
    t.equal(report.items.length, formats.length + 1, `${what}: every source tried`);
    t.match(report.adsTxt, { crawled: 1, failed: 1, changed: 0 }, `${what}: ads.txt fails too`);
    t.equal(report.changed, false, `${what}: nothing to reload`);
    outputs.forEach((p, i) => t.equal(readFileSync(p, 'utf8'), saved[i], `${what}: ${p.slice(dir.length + 1)} kept`));
    const st = r.status();
    t.ok(st.sources.every((s) => s.status === 'failed' && s.error !== null), `${what}: status names each failure`);
    t.equal(probe(), answersBefore, `${what}: the loaded data answers as before`);
    good();
    clock += 60_000;
    await r.runOnce({ all: true }); // recovered: the next failure starts from a good state
  }

  // A MaxMind download: dropped mid-body, and over its size limit.
  const tarball = zlib.gzipSync(makeTar([{ name: 'GeoLite2-Country_20240528/GeoLite2-Country.mmdb', data: COUNTRY_MMDB }]));
  const mm = (maxBytes?: number) => parseSources(JSON.stringify({ sources: [{ name: 'country', format: 'maxmind', edition: 'GeoLite2-Country', url: `${w.base}/mm.tar.gz`, ...(maxBytes ? { maxBytes } : {}) }] }), 'sources.json', { accountId: '1', licenseKey: 'k' });
  w.set('/mm.tar.gz', { body: tarball });
  t.match((await new DataRefresher({ dataDir: dir, sources: mm() }).runOnce({ all: true })).items[0], { result: 'changed' });
  w.set('/mm.tar.gz', { body: tarball, truncateTo: Math.floor(tarball.length / 2) });
  t.match((await new DataRefresher({ dataDir: dir, sources: mm() }).runOnce({ all: true })).items[0], { result: 'failed', detail: /connection closed before the whole body arrived/ });
  w.set('/mm.tar.gz', { body: tarball });
  t.match((await new DataRefresher({ dataDir: dir, sources: mm(4096) }).runOnce({ all: true })).items[0], { result: 'failed', detail: /over the 4096-byte limit/ });
  t.ok(readFileSync(join(dir, 'country.mmdb')).equals(COUNTRY_MMDB), 'the last good database stays');
});

t.test('run as root on the service user\'s data dir: what it writes keeps that owner', { skip: process.getuid?.() !== 0 ? 'needs root' : false }, async (t) => {
  const { chownSync, readdirSync } = await import('node:fs');
  const w = await web(t);
  serveAll(w);
  const dir = tempDir(t);
  chownSync(dir, 65534, 65534); // the service's user (nobody here)
  const r = new DataRefresher({ dataDir: dir, sources: allSources(w) });
  await r.runOnce({ all: true });
  const rootOwned: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (statSync(p).uid !== 65534) rootOwned.push(p);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  t.ok(existsSync(join(dir, 'ranges', 'aws.txt')), 'the refresh wrote its files');
  t.same(rootOwned, [], 'every folder and file belongs to the data dir\'s owner');
});

t.test('a pass that cannot write its files marks every source down (ivtd_data_source_up tells the truth)', async (t) => {
  const w = await web(t);
  serveAll(w);
  const dir = tempDir(t);
  const log = collectLog();
  const r = new DataRefresher({ dataDir: dir, sources: allSources(w), log });
  await r.runOnce({ all: true });
  t.ok(r.status().sources.every((s) => s.status === 'ok'), 'first pass: every source up');
  // The refresher cannot take its lock any more (a folder where the lock file goes: as
  // unwritable as a root-owned folder is to the service's user); its state file stays.
  mkdirSync(join(dir, 'refresh', 'lock'));
  await t.rejects(r.runOnce({ all: true }));
  const down = r.status().sources.filter((s) => s.status === 'failed');
  t.equal(down.length, r.status().sources.length, 'every source is down');
  t.match(down[0]!.error, /cannot write the refreshed data/, 'with the reason');
  t.ok(log.lines.some((l) => l.level === 'error' && /data refresh failed/.test(l.msg)), 'and an error line');
});

t.test("crawler operators' lists: fetched as crawler ranges, of the service they name or whose list names their URL", async (t) => {
  const w = await web(t);
  // The form Google, Bing, OpenAI, Apple, DuckDuckGo and Perplexity publish (addresses of the test ranges).
  const prefixes = (...p: string[]) => JSON.stringify({ creationTime: '2026-11-01T00:00:00.000000', prefixes: p.map((x) => (x.includes(':') ? { ipv6Prefix: x } : { ipv4Prefix: x })) });
  w.set('/crawlers.json', { body: prefixes('198.18.30.0/27', '2001:db8:c000::/64'), etag: '"c1"' });
  w.set('/bingbot.json', { body: prefixes('198.18.31.0/27') });
  w.set('/examplebot.json', { body: prefixes('198.18.32.0/27') });
  const dir = tempDir(t);
  // A refreshed crawlers list whose ExampleBot publishes at the URL below (as Google's list names Google's URL).
  mkdirSync(join(dir, 'bot-ip-blocks'));
  writeFileSync(join(dir, 'bot-ip-blocks', 'crawlers.json'), JSON.stringify({ services: {
    ExampleBot: { user_agent_patterns: ['*ExampleBot*'], source_url: `${w.base}/examplebot.json/`, ip_list_authoritative: true, ipv4: ['192.0.2.0/24'] },
    Bingbot: { user_agent_patterns: ['*bingbot*'], ip_list_authoritative: true, ipv4: ['192.0.3.0/24'] },
  } }));
  const sources = parseSources(JSON.stringify({ contact: 'ops@bidder.example', sources: [
    { name: 'legacy', format: 'crawler-ipranges', url: `${w.base}/crawlers.json` },
    { name: 'bing', format: 'crawler-ipranges', url: `${w.base}/bingbot.json`, service: 'Bingbot' },
    { name: 'example', format: 'crawler-ipranges', url: `${w.base}/examplebot.json` },
  ] }), 'sources.json');
  t.equal(sources.sources[0]!.kind === 'ranges' && sources.sources[0]!.category, 'crawler', 'the format\'s default category');
  t.equal(bundleOf(dir).ipRanges.files.length, 0, 'before: no ranges file');
  const report = await new DataRefresher({ dataDir: dir, sources, log: collectLog() }).runOnce({ all: true });
  t.equal(report.changed, true);
  t.match(readFileSync(join(dir, 'ranges', 'legacy.txt'), 'utf8'), /\n198\.18\.30\.0\/27 crawler\n/, 'a list of no known service: plain crawler ranges');
  t.match(readFileSync(join(dir, 'ranges', 'bing.txt'), 'utf8'), /service bingbot.*\n.*\n198\.18\.31\.0\/27 crawler bingbot\n/, 'the service named');
  t.match(readFileSync(join(dir, 'ranges', 'example.txt'), 'utf8'), /\n198\.18\.32\.0\/27 crawler examplebot\n/, 'the service whose list names the URL');
  const b = bundleOf(dir);
  t.same(b.ipRanges.files.map((f) => [f.name, f.entries]), [['ranges/bing.txt', 1], ['ranges/example.txt', 1], ['ranges/legacy.txt', 2]]);
  const ranges = IpRanges.fromCompiled(b.ipRanges.compiled);
  t.same(categoriesAt(ranges, '198.18.30.9'), ['crawler']);
  t.same(categoriesAt(ranges, '2001:db8:c000::1'), ['crawler']);
  t.same(categoriesAt(ranges, '198.18.31.9'), [], "a service's own ranges are not plain crawler ranges");
  t.match(b.bots.specs.find((s) => s.slug === 'bingbot'), { rangesFrom: 'ranges/bing.txt', ranges: 1 }, "they replace the list's ranges of that service");
  t.match(b.bots.specs.find((s) => s.slug === 'examplebot'), { rangesFrom: 'ranges/example.txt', ranges: 1 });
  t.throws(() => parseSources(JSON.stringify({ sources: [{ name: 'x', format: 'cidr-list', category: 'hosting', url: 'https://a.example/x', service: 'googlebot' }] }), 's.json'), /sources\[0\]\.service: only crawler ranges name a service/);
});

t.test('bot-ip-blocks: the crawler and monitor lists refreshed like the cloud ranges, replacing the embedded snapshot', async (t) => {
  const w = await web(t);
  const embedded = readFileSync(join(import.meta.dirname, '..', '..', 'data', 'bot-ip-blocks', 'monitoring.json'), 'utf8');
  w.set('/master/monitoring.json', { body: embedded, etag: '"m1"' });
  w.set('/master/crawlers.json', { body: '{"services": {"X": {"ipv4": ["not a cidr", "also not"]}}}' });
  const dir = tempDir(t);
  const sources = parseSources(JSON.stringify({ sources: [
    { name: 'monitors', format: 'bot-ip-blocks', url: `${w.base}/master/monitoring.json` },
    { name: 'crawlers', format: 'bot-ip-blocks', url: `${w.base}/master/crawlers.json` },
  ] }), 'sources.json');
  t.match(sources.sources, [{ kind: 'bots', list: 'monitoring' }, { kind: 'bots', list: 'crawlers' }], 'the list from the file name');
  const r = new DataRefresher({ dataDir: dir, sources, log: collectLog() });
  const report = await r.runOnce({ all: true });
  t.match(report.items, [{ name: 'monitors', kind: 'bots', result: 'changed' }, { name: 'crawlers', kind: 'bots', result: 'failed' }]);
  t.match(report.items[1]!.detail, /2 of 2 prefixes are not CIDRs/, 'a list that is not one is refused');
  t.equal(readFileSync(join(dir, 'bot-ip-blocks', 'monitoring.json'), 'utf8'), embedded);
  t.notOk(existsSync(join(dir, 'bot-ip-blocks', 'crawlers.json')), 'nothing written for the refused one');
  const b = bundleOf(dir);
  t.same(b.bots.lists.map((l) => [l.list, l.source]), [['crawlers', 'embedded:data/bot-ip-blocks/crawlers.json'], ['monitoring', join(dir, 'bot-ip-blocks', 'monitoring.json')]]);
  t.ok(r.status().sources.find((s) => s.name === 'monitors')!.entries! > 100, 'status counts its ranges');
  // Again: 304 keeps it.
  const again = await r.runOnce({ all: true });
  t.match(again.items[0], { result: 'unchanged' });
  t.throws(() => parseSources(JSON.stringify({ sources: [{ name: 'x', format: 'bot-ip-blocks', url: 'https://a.example/bots.json' }] }), 's.json'), /sources\[0\]\.list: the URL's file name does not say which list/);
  t.throws(() => parseSources(JSON.stringify({ sources: [{ name: 'x', format: 'bot-ip-blocks', url: 'https://a.example/crawlers.json' }, { name: 'y', format: 'bot-ip-blocks', url: 'https://b.example/c.json', list: 'crawlers' }] }), 's.json'), /only one bot-ip-blocks source per list/);
});

t.test("ai.robots.txt's robots.json: written to ai-agents.txt, which then replaces the embedded list", async (t) => {
  const w = await web(t);
  w.set('/robots.json', { body: JSON.stringify({ ExampleAIBot: {}, 'Example-User/1.0': {}, Code: {} }), etag: '"r1"' });
  const dir = tempDir(t);
  const sources = parseSources(JSON.stringify({ sources: [{ name: 'ai-robots', format: 'ai-robots-json', url: `${w.base}/robots.json` }] }), 'sources.json');
  t.equal(sources.sources[0]!.kind, 'agents');
  t.equal(bundleOf(dir).aiAgents.source, 'embedded:data/ai-agents.txt', 'before: the embedded list');
  const report = await new DataRefresher({ dataDir: dir, sources, log: collectLog() }).runOnce({ all: true });
  t.same(report.items.map((i) => `${i.name}:${i.result}`), ['ai-robots:changed']);
  const written = readFileSync(join(dir, 'ai-agents.txt'), 'utf8');
  t.match(written, /^ExampleAIBot$/m);
  t.match(written, /^Example-User$/m);
  t.notMatch(written, /^Code$/m, 'a generic word left out');
  t.equal(bundleOf(dir).aiAgents.source, join(dir, 'ai-agents.txt'), 'after: the refreshed list');
  t.throws(
    () => parseSources(JSON.stringify({ sources: [{ name: 'a', format: 'ai-robots-json', url: `${w.base}/a.json` }, { name: 'b', format: 'ai-robots-json', url: `${w.base}/b.json` }] }), 'sources.json'),
    /only one ai-robots-json source/,
  );
  // A body that is not robots.json fails the source and keeps the last good list.
  w.set('/robots.json', { body: '<html>not json</html>', etag: '"r2"' });
  const again = await new DataRefresher({ dataDir: dir, sources, log: collectLog() }).runOnce({ all: true });
  t.equal(again.items[0]!.result, 'failed');
  t.equal(readFileSync(join(dir, 'ai-agents.txt'), 'utf8'), written, 'the last good list stays');
});

t.test('a URL is never shown with its password, nor a MaxMind URL with its query values', async (t) => {
  const w = await web(t);
  const dir = tempDir(t);
  // The sources file refuses a URL with credentials (test/data/sources.test.ts); were one
  // to get here anyway, messages, status and state.json still leave its password out.
  const sources = parseSources(JSON.stringify({
    sources: [
      { name: 'a', format: 'cidr-list', category: 'hosting', url: `${w.base}/nothere.txt` },
      { name: 'mm', format: 'maxmind', edition: 'GeoLite2-ASN', url: `${w.base}/mm?k=SECRETKEY123&suffix=tar.gz` },
    ],
  }), 'sources.json', { accountId: '1', licenseKey: 'SECRETKEY123' });
  const a = sources.sources[0]!;
  if (a.kind === 'ranges') a.url = a.url.replace('http://', 'http://user:s3cretpw@');
  w.set('/mm?k=SECRETKEY123&suffix=tar.gz', { status: 302, headers: { Location: `http://u:s3cretpw@127.0.0.1:${w.port}/mm2?k=SECRETKEY123` } });
  const r = new DataRefresher({ dataDir: dir, sources });
  t.notMatch(JSON.stringify(r.status()), /s3cretpw|SECRETKEY123/, 'status before any pass');
  const report = await r.runOnce({ all: true });
  t.match(report.items[0], { result: 'failed', detail: `HTTP 404 from ${w.base}/nothere.txt` });
  t.match(report.items[1], { result: 'failed', detail: `HTTP 404 from ${w.base}/mm2?k=REDACTED` });
  const status = r.status();
  t.same(status.sources.map((s) => s.url), [`${w.base}/nothere.txt`, `${w.base}/mm?k=REDACTED&suffix=tar.gz`]);
  const state = readFileSync(join(dir, 'refresh', 'state.json'), 'utf8');
  for (const text of [JSON.stringify(report), JSON.stringify(status), state]) t.notMatch(text, /s3cretpw|SECRETKEY123/);

  w.set('/mm?k=SECRETKEY123&suffix=tar.gz', { status: 302, headers: { Location: `http://u:s3cretpw@127.0.0.1:${w.port}/mm?k=SECRETKEY123&suffix=tar.gz` } });
  const loop = await r.runOnce({ all: true });
  t.match(loop.items[1], { result: 'failed', detail: /^too many redirects \(last to http:\/\/127\.0\.0\.1:\d+\/mm\?k=REDACTED&suffix=tar\.gz\)/ });
});
