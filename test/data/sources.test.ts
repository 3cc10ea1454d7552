import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS, loadSources, parseSources, type MaxmindSource } from '../../src/data/sources.ts';
import { shownUrl } from '../../src/data/shown-url.ts';
import { DAY_MS, HOUR_MS } from '../../src/base/time.ts';

const parse = (doc: unknown, creds = {}) => parseSources(JSON.stringify(doc), 'sources.json', creds);

t.test('a full file', async (t) => {
  const c = parse({
    contact: 'https://bidder.example/ivtd',
    timeout: '30s',
    sources: [
      { name: 'aws', format: 'aws-ip-ranges', url: 'https://ip-ranges.amazonaws.com/ip-ranges.json', services: ['EC2'] },
      { name: 'azure', format: 'azure-service-tags', url: 'https://www.microsoft.com/en-us/download/details.aspx?id=56519', tags: ['AzureCloud'], every: '1d' },
      { name: 'my-vpns', format: 'cidr-list', category: 'VPN', url: 'https://intranet.example/vpn.txt', maxBytes: 100000, minKeep: 0 },
      { name: 'tor', format: 'tor-exit-list', url: 'https://check.torproject.org/torbulkexitlist' },
      { name: 'asn', format: 'maxmind', edition: 'GeoLite2-ASN' },
    ],
    sellers: { domains: ['Exchange1.example'], fromTraffic: 100, every: '12h' },
    adsTxt: { domains: ['news.example'], appDomains: ['games.example'], fromTraffic: 10, expiry: '3d', schemes: ['https'] },
  }, { accountId: '42', licenseKey: 'secret' });
  t.equal(c.contact, 'https://bidder.example/ivtd');
  t.equal(c.timeoutMs, 30_000);
  t.equal(c.sources.length, 5);
  const [aws, azure, vpn, tor, asn] = c.sources;
  t.match(aws, { kind: 'ranges', category: 'hosting', filter: { services: ['EC2'] }, everyMs: null, maxBytes: DEFAULTS.rangeMaxBytes, minKeep: 0.5 });
  t.match(azure, { filter: { tags: ['AzureCloud'] }, everyMs: DAY_MS });
  t.match(vpn, { category: 'vpn', maxBytes: 100000, minKeep: 0 });
  t.match(tor, { category: 'tor' });
  t.match(asn, { kind: 'maxmind', target: 'asn.mmdb', url: 'https://download.maxmind.com/geoip/databases/GeoLite2-ASN/download?suffix=tar.gz' });
  if (asn?.kind === 'maxmind') t.equal(asn.headers.Authorization, `Basic ${Buffer.from('42:secret').toString('base64')}`);
  t.same(c.sellers, { domains: ['exchange1.example'], fromTraffic: 100, everyMs: 12 * HOUR_MS, maxBytes: DEFAULTS.sellersMaxBytes, urlTemplate: DEFAULTS.sellersUrl });
  t.match(c.adsTxt, { enabled: true, domains: ['news.example'], appDomains: ['games.example'], fromTraffic: 10, expiryMs: 3 * DAY_MS, staleMs: 7 * DAY_MS, schemes: ['https'] });
});

t.test('defaults: an empty file refreshes nothing and crawls nothing', async (t) => {
  const c = parse({});
  t.same(c.sources, []);
  t.equal(c.sellers.fromTraffic, 0);
  t.equal(c.adsTxt.enabled, false);
  t.equal(parse({ adsTxt: {} }).adsTxt.enabled, true, 'an adsTxt section turns the crawl on');
  t.equal(parse({ adsTxt: {} }).adsTxt.fromTraffic, DEFAULTS.adsTxtFromTraffic);
});

t.test('MaxMind: licence key only, custom URL, editions', async (t) => {
  const legacy = parse({ sources: [{ name: 'c', format: 'maxmind', edition: 'GeoLite2-City' }] }, { licenseKey: 'k/1' });
  const s = legacy.sources[0]!;
  t.equal(s.kind === 'maxmind' && s.target, 'country.mmdb');
  t.equal(s.kind === 'maxmind' && s.url, 'https://download.maxmind.com/app/geoip_download?edition_id=GeoLite2-City&license_key=k%2F1&suffix=tar.gz');
  t.equal(s.kind === 'maxmind' && s.displayUrl.includes('k%2F1'), false, 'the key is not in the display URL');
  t.equal(s.kind === 'maxmind' && s.displayUrl.includes('REDACTED'), true);
  const file = parse({ maxmind: { licenseKey: 'from-file' }, sources: [{ name: 'a', format: 'maxmind', edition: 'GeoIP2-Anonymous-IP' }] });
  t.equal(file.sources[0]!.kind === 'maxmind' && (file.sources[0] as { target: string }).target, 'anonymous-ip.mmdb');
  const custom = parse({ sources: [{ name: 'm', format: 'maxmind', edition: 'Mirror-Thing', target: 'asn.mmdb', url: 'http://mirror.example/asn.tar.gz' }] });
  t.equal((custom.sources[0] as { url: string }).url, 'http://mirror.example/asn.tar.gz', 'a mirror URL needs no key');
});

t.test('mistakes name their key', async (t) => {
  const bad: Array<[unknown, RegExp]> = [
    [[], /must hold a JSON object/],
    [{ source: [] }, /\$\.source: unknown key/],
    [{ sources: [{ name: 'x', format: 'cidr-list', url: 'https://a.example/x' }] }, /sources\[0\]\.category: a cidr-list source needs a category/],
    [{ sources: [{ name: 'x', format: 'cidr-list', category: 'datacenter', url: 'https://a.example/x' }] }, /sources\[0\]\.category: "datacenter" is not one of/],
    [{ sources: [{ name: 'X Y', format: 'gcp-cloud', url: 'https://a.example/x' }] }, /sources\[0\]\.name:/],
    [{ sources: [{ name: 'a', format: 'gcp-cloud', url: 'https://a.example/x' }, { name: 'a', format: 'gcp-cloud', url: 'https://a.example/y' }] }, /sources\[1\]\.name: "a" is used twice/],
    [{ sources: [{ name: 'a', format: 'gcp-json', url: 'https://a.example/x' }] }, /sources\[0\]\.format: "gcp-json" is not one of/],
    [{ sources: [{ name: 'a', format: 'gcp-cloud', url: 'ftp://a.example/x' }] }, /sources\[0\]\.url: must be an http\(s\) URL/],
    [{ sources: [{ name: 'a', format: 'gcp-cloud', url: 'https://a.example/x', every: '5s' }] }, /sources\[0\]\.every: must be a duration/],
    [{ sources: [{ name: 'a', format: 'gcp-cloud', url: 'https://a.example/x', services: ['EC2'] }] }, /services: only applies to aws-ip-ranges/],
    [{ sources: [{ name: 'a', format: 'maxmind', edition: 'GeoLite2-ASN' }] }, /needs a licence key: set IVTD_MAXMIND_LICENSE_KEY/],
    [{ sources: [{ name: 'a', format: 'maxmind', edition: 'Odd-DB', url: 'https://m.example/x' }] }, /cannot tell what Odd-DB holds/],
    [{ sellers: { domains: ['not a domain'] } }, /sellers\.domains\[0\]: "not a domain" is not a domain name/],
    [{ sellers: { url: 'https://mirror.example/sellers.json' } }, /sellers\.url: must contain \{domain\}/],
    [{ adsTxt: { schemes: ['gopher'] } }, /adsTxt\.schemes/],
    [{ adsTxt: { fromTraffic: -1 } }, /adsTxt\.fromTraffic: must be a whole number/],
  ];
  for (const [doc, re] of bad) t.throws(() => parse(doc), re, JSON.stringify(doc).slice(0, 80));
  t.throws(() => parseSources('{', 'x.json'), /x\.json is not valid JSON/);
  t.throws(() => parse([]), { name: 'SourcesError' });
});

t.test('loading: default file in the data dir, explicit path must exist', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-sources-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(loadSources({ dataDir: dir }).path, null, 'no file: nothing configured');
  writeFileSync(join(dir, 'sources.json'), JSON.stringify({ sources: [{ name: 'tor', format: 'tor-exit-list', url: 'https://t.example/list' }] }));
  t.equal(loadSources({ dataDir: dir }).sources.length, 1);
  t.throws(() => loadSources({ dataDir: dir, path: join(dir, 'missing.json') }), /does not exist/);
});

t.test('a UTF-8 byte order mark before the JSON is ignored (editors on Windows write one)', async (t) => {
  const c = parseSources('\ufeff{"sources": [{"name": "tor", "format": "tor-exit-list", "url": "https://t.example/list"}]}', 'sources.json');
  t.equal(c.sources.length, 1);
  t.throws(() => parseSources('\ufeff\ufeff{}', 'x.json'), /x\.json is not valid JSON/, 'only one, at the very start');
});

t.test('a key written twice is refused, at any depth: JSON.parse would keep only the last', async (t) => {
  t.throws(() => parseSources('{"contact": "a", "contact": "b"}', 'x.json'), { message: 'x.json: duplicate key "contact" at character 17' });
  const inner = '{"sources": [{"name": "tor", "format": "tor-exit-list", "url": "https://t.example/a", "url": "https://t.example/b"}]}';
  t.throws(() => parseSources(inner, 'x.json'), { message: /^x\.json: duplicate key "url" at character \d+$/ });
  t.equal(parseSources('{"sources": [{"name": "a", "format": "tor-exit-list", "url": "https://t.example/l"}, {"name": "b", "format": "tor-exit-list", "url": "https://u.example/l"}]}', 'x.json').sources.length, 2, 'the same keys in two objects');
});

t.test('contact goes in the User-Agent header: printable ASCII, bounded, one comment', async (t) => {
  t.equal(parse({ contact: 'mailto:ops@bidder.example (data team)' }).contact, 'mailto:ops@bidder.example (data team)');
  t.equal(parse({ contact: 'c'.repeat(256) }).contact, 'c'.repeat(256), '256 characters fit');
  for (const contact of ['café ☃', 'x\r\nX-Injected: 1', 'a\tb', 'c'.repeat(257), 'x\u0000y']) {
    t.throws(() => parse({ contact }), /sources\.json: \$\.contact: must be printable ASCII, at most 256 characters \(it goes in the User-Agent header\)/, JSON.stringify(contact).slice(0, 40));
  }
  for (const contact of ['ops (team', 'ops) (', 'a\\']) {
    t.throws(() => parse({ contact }), /\$\.contact: .*parentheses/, contact);
  }
});

t.test('a sellers.json, ads.txt or app-ads.txt domain is a host name, not an IP address', async (t) => {
  // The URL parser reads a host whose last label is a number (decimal or 0x hex) as IPv4.
  for (const ip of ['127.0.0.1', '10.1', '0x7f.1', '192.168.0.010']) {
    const named = (at: string) => new RegExp(`${at}\\[1\\]: "${ip.replaceAll('.', '\\.')}" is an IP address: a domain must be a host name`);
    t.throws(() => parse({ sellers: { domains: ['exchange1.example', ip] } }), named('sellers\\.domains'), `sellers ${ip}`);
    t.throws(() => parse({ adsTxt: { domains: ['news.example', ip] } }), named('adsTxt\\.domains'), `ads.txt ${ip}`);
    t.throws(() => parse({ adsTxt: { appDomains: ['dev.example', ip] } }), named('adsTxt\\.appDomains'), `app-ads.txt ${ip}`);
  }
  t.throws(() => parse({ sellers: { domains: ['127.0.0.1', 'localhost'] } }), /sellers\.domains\[0\]: "127\.0\.0\.1" is an IP address/, 'the first entry wrong is the one named');
  t.same(parse({ sellers: { domains: ['1.example', 'x1.2x', '0xfeed.com', '123.info'] } }).sellers.domains, ['1.example', 'x1.2x', '0xfeed.com', '123.info'], 'digits elsewhere are fine');
});

t.test('a URL with a user or password is refused: it would never be sent', async (t) => {
  const creds = 'http://user:s3cretpw@lists.example/list.txt';
  const cases: Array<[unknown, RegExp]> = [
    [{ sources: [{ name: 'a', format: 'cidr-list', category: 'hosting', url: creds }] }, /sources\[0\]\.url: /],
    [{ sources: [{ name: 'a', format: 'ai-robots-json', url: creds }] }, /sources\[0\]\.url: /],
    [{ sources: [{ name: 'a', format: 'maxmind', edition: 'GeoLite2-ASN', url: creds }] }, /sources\[0\]\.url: /],
    [{ sellers: { url: 'https://user:s3cretpw@{domain}/sellers.json' } }, /sellers\.url: /],
    [{ sources: [{ name: 'a', format: 'cidr-list', category: 'hosting', url: 'http://s3cretpw@lists.example/x' }] }, /sources\[0\]\.url: /],
  ];
  for (const [doc, key] of cases) {
    const e = (() => {
      try {
        parse(doc);
      } catch (err) {
        return err as Error;
      }
      return null;
    })();
    t.match(e, { name: 'SourcesError', message: key }, JSON.stringify(doc).slice(0, 80));
    t.match(e?.message, /credentials in URLs are not supported and are never sent/);
    t.notMatch(e?.message, /s3cretpw/, 'the password is not repeated');
  }
  t.notMatch(String((() => { try { parse({ sources: [{ name: 'a', format: 'cidr-list', category: 'hosting', url: 'http://user:s3cretpw@[bad/x' }] }); } catch (e) { return (e as Error).message; } return ''; })()), /s3cretpw/, 'nor in "is not a URL"');
});

t.test('MaxMind URLs are shown without their query values: a key may travel in any of them', async (t) => {
  const mmUrl = (url: string | undefined, creds: object): MaxmindSource => {
    const s = parse({ sources: [{ name: 'm', format: 'maxmind', edition: 'GeoLite2-ASN', ...(url ? { url } : {}) }] }, creds).sources[0]!;
    if (s.kind !== 'maxmind') throw new Error('not a MaxMind source');
    return s;
  };
  const basic = mmUrl(undefined, { accountId: '1', licenseKey: 'k' });
  t.equal(basic.displayUrl, basic.url, 'the default URL holds no secret: shown whole');
  const legacy = mmUrl(undefined, { licenseKey: 'SECRETKEY123' });
  t.equal(legacy.displayUrl, 'https://download.maxmind.com/app/geoip_download?edition_id=GeoLite2-ASN&license_key=REDACTED&suffix=tar.gz');
  for (const creds of [{}, { licenseKey: 'SECRETKEY123' }, { accountId: '1', licenseKey: 'SECRETKEY123' }]) {
    const custom = mmUrl('https://mirror.example/x?k=SECRETKEY123&token=abc&suffix=tar.gz', creds);
    t.equal(custom.displayUrl, 'https://mirror.example/x?k=REDACTED&token=REDACTED&suffix=tar.gz', JSON.stringify(creds));
  }
});

t.test('shownUrl: never the user and password; the query values on request', async (t) => {
  t.equal(shownUrl('https://lists.example/a.txt?x=1'), 'https://lists.example/a.txt?x=1', 'unchanged, byte for byte');
  t.equal(shownUrl('HTTPS://Lists.Example:443/a.txt'), 'HTTPS://Lists.Example:443/a.txt', 'not normalised when nothing is hidden');
  t.equal(shownUrl('http://user:s3cretpw@127.0.0.1:18765/list.txt'), 'http://127.0.0.1:18765/list.txt');
  t.equal(shownUrl('http://s3cretpw@h.example/'), 'http://h.example/');
  t.equal(shownUrl('http://user:s3cret@[bad/x'), 'http://[bad/x', 'not a URL: still no password');
  t.equal(shownUrl('https://m.example/d?edition_id=E&license_key=K&suffix=tar.gz&flag', { hideQuery: true }), 'https://m.example/d?edition_id=E&license_key=REDACTED&suffix=tar.gz&REDACTED');
  t.equal(shownUrl('https://u:p@m.example/d?k=K', { hideQuery: true }), 'https://m.example/d?k=REDACTED');
});
