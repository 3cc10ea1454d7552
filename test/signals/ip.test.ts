import t from 'tap';
import ipaddr from 'ipaddr.js';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AsnTable } from '../../src/signals/asn-table.ts';
import { asnSourceDir, buildAsnTable, DEFAULT_OUT_DIR } from '../../tools/build-asn.ts';
import { AsnList } from '../../src/signals/asn-list.ts';
import { formatIp, ipScratch, parseIp, parseIpInto, type ParsedIp } from '../../src/signals/ip-address.ts';
import { IpCache } from '../../src/signals/ip-cache.ts';
import { IpIntel, emptyIpVerdict, loadIpIntel, type IpIntelFiles } from '../../src/signals/ip-intel.ts';
import { parseOrgPatterns } from '../../src/signals/org-patterns.ts';
import { ipRangeName, isBogonRange } from '../../src/signals/special-ranges.ts';
import { IpRanges, RangeSetBuilder, addRangeList } from '../../src/signals/ip-ranges.ts';
import { buildMmdb } from '../helpers/mmdb-writer.ts';

const DATA = fileURLToPath(new URL('../../data/', import.meta.url));
const COUNTRY_MMDB = join(
  dirname(createRequire(import.meta.url).resolve('@ip-location-db/geo-whois-asn-country-mmdb/package.json')),
  'geo-whois-asn-country.mmdb',
);
const text = (name: string): string => readFileSync(join(DATA, name), 'utf8');

let realAsnBin: Uint8Array | undefined;
function asnBin(): Uint8Array {
  if (realAsnBin) return realAsnBin;
  const bin = join(DEFAULT_OUT_DIR, 'asn.bin');
  if (existsSync(bin)) return (realAsnBin = readFileSync(bin));
  const dir = asnSourceDir(); // not built yet (test run alone): build in memory
  return (realAsnBin = buildAsnTable(readFileSync(join(dir, 'asn-ipv4-num.csv'), 'utf8'), readFileSync(join(dir, 'asn-ipv6-num.csv'), 'utf8')));
}

const p = (s: string): ParsedIp => {
  const ip = parseIp(s);
  if (!ip) throw new Error(`test address does not parse: ${s}`);
  return ip;
};

// ---------------------------------------------------------------------------------------

t.test('parseIp accepts', async (t) => {
  const v4: [string, number][] = [
    ['0.0.0.0', 0],
    ['1.2.3.4', 0x01020304],
    ['255.255.255.255', 0xffffffff],
    ['10.0.0.1', 0x0a000001],
    ['192.168.100.200', 0xc0a864c8],
    ['::ffff:1.2.3.4', 0x01020304], // IPv4-mapped
    ['::FFFF:8.8.8.8', 0x08080808],
    ['0:0:0:0:0:ffff:102:304', 0x01020304], // mapped, hex form
  ];
  for (const [s, n] of v4) t.same(parseIp(s), { v: 4, n }, s);

  const v6 = [
    '::', '::1', '1::', '2001:db8::1', '2001:DB8::A', 'fe80::1', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7::',
    '::2:3:4:5:6:7:8', '2001:0db8:0000:0000:0000:0000:0000:0001', '64:ff9b::1.2.3.4',
    '1:2:3:4:5:6:1.2.3.4', '2606:4700:4700::1111', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  ];
  for (const s of v6) {
    const ip = parseIp(s);
    t.equal(ip?.v, 6, s);
    // Oracle: ipaddr.js's reading of the same text.
    const parts = ipaddr.IPv6.parse(s).parts;
    const words = [0, 1, 2, 3].map((k) => (parts[2 * k]! * 65536 + parts[2 * k + 1]!) >>> 0);
    t.same(ip?.v === 6 ? [...ip.w] : null, words, `${s} words`);
  }
  // RFC 4291 "IPv4-compatible" form; ipaddr.js reads it as mapped, so no oracle here.
  t.same(parseIp('::1.2.3.4'), { v: 6, w: Uint32Array.of(0, 0, 0, 0x01020304) });
});

t.test('parseIp rejects', async (t) => {
  const bad = [
    '', ' ', '1.2.3', '1.2.3.4.5', '01.2.3.4', '1.02.3.4', '1.2.3.00', '256.1.1.1', '1.2.3.256', '1.2.3.4 ',
    ' 1.2.3.4', '1..2.3', '1.2.3.', '.1.2.3', '1.2.3.-4', '0x1.2.3.4', '1.2.3.4/24', '16909060', '1e3.1.1.1',
    'a.b.c.d', '１.２.３.４', ':', ':::', '1:2', '1::2::3', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7:8::',
    '::1:2:3:4:5:6:7:8', '12345::1', 'g::1', '1:', ':1', '1:::2', 'fe80::1%eth0', 'fe80::1%1',
    '::ffff:01.2.3.4', '::ffff:1.2.3.04', '::ffff:0x1.2.3.4', '::ffff:1.2.3', '::ffff:256.1.1.1',
    '1.2.3.4::', '1:2:3:4:5:6:7:1.2.3.4', '[::1]', '::1/128', 'localhost', '2001:db8::1 ', 'null',
  ];
  for (const s of bad) t.equal(parseIp(s), null, JSON.stringify(s));
});

t.test('formatIp round-trips', async (t) => {
  for (const s of ['0.0.0.0', '8.8.8.8', '255.255.255.255', '2001:db8::1', '::', '64:ff9b::1.2.3.4', '::ffff:9.9.9.9']) {
    t.same(parseIp(formatIp(p(s))), parseIp(s), s);
  }
  t.equal(formatIp(p('::ffff:9.9.9.9')), '9.9.9.9');
  t.equal(formatIp(p('2001:db8::1')), '2001:db8:0:0:0:0:0:1');
});

// ---------------------------------------------------------------------------------------

t.test('special-purpose ranges and bogons', async (t) => {
  const cases: [string, string, boolean][] = [
    ['8.8.8.8', 'unicast', false],
    ['10.1.2.3', 'private', true],
    ['172.16.0.1', 'private', true],
    ['172.32.0.1', 'unicast', false], // just past 172.16/12
    ['192.168.1.1', 'private', true],
    ['127.0.0.1', 'loopback', true],
    ['0.1.2.3', 'unspecified', true],
    ['169.254.1.1', 'linkLocal', true],
    ['100.64.0.1', 'carrierGradeNat', true],
    ['100.128.0.1', 'unicast', false],
    ['224.0.0.1', 'multicast', true],
    ['255.255.255.255', 'broadcast', true],
    ['240.0.0.1', 'reserved', true],
    ['192.0.2.1', 'documentation', true],
    ['198.51.100.7', 'documentation', true],
    ['203.0.113.255', 'documentation', true],
    ['198.18.0.1', 'benchmarking', true],
    ['198.19.255.255', 'benchmarking', true],
    ['198.20.0.0', 'unicast', false],
    ['192.175.48.1', 'as112', false],
    ['::ffff:10.0.0.1', 'private', true], // mapped IPv4 judged as IPv4
    ['::1', 'loopback', true],
    ['::', 'unspecified', true],
    ['fe80::1', 'linkLocal', true],
    ['fc00::1', 'uniqueLocal', true],
    ['fd12:3456::1', 'uniqueLocal', true],
    ['ff02::1', 'multicast', true],
    ['2001:db8::1', 'documentation', true],
    ['3fff::1', 'documentation', true],
    ['2001:2::1', 'benchmarking', true],
    ['100::1', 'discard', true],
    ['2002:c000:204::1', '6to4', false],
    ['2001:0:4136:e378::1', 'teredo', false],
    ['64:ff9b::808:808', 'rfc6052', false],
    ['2001:4860:4860::8888', 'unicast', false],
    ['4000::1', 'unassigned', true], // outside 2000::/3
    ['::1.2.3.4', 'unassigned', true], // deprecated IPv4-compatible form
  ];
  for (const [s, range, bogon] of cases) {
    t.equal(ipRangeName(p(s)), range, `${s} range`);
    t.equal(isBogonRange(ipRangeName(p(s))), bogon, `${s} bogon`);
  }
});

t.test("range names agree with ipaddr.js's range() (modulo our refinements)", async (t) => {
  // Our names map back to ipaddr's: documentation/benchmarking were 'reserved' (IPv4 and the
  // IPv6 documentation blocks), 'unassigned' was 'unicast'.
  const back = (name: string, v: 4 | 6): string =>
    name === 'documentation' || (name === 'benchmarking' && v === 4) ? 'reserved' : name === 'unassigned' ? 'unicast' : name;
  let seed = 7;
  const rnd = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const samples: string[] = [];
  // Boundaries of every ipaddr special subnet, plus random addresses.
  for (const kind of [ipaddr.IPv4, ipaddr.IPv6] as const) {
    for (const value of Object.values((kind.prototype as unknown as { SpecialRanges: Record<string, unknown> }).SpecialRanges)) {
      const list = (Array.isArray((value as unknown[])[0]) ? value : [value]) as [ipaddr.IPv4 | ipaddr.IPv6, number][];
      for (const [addr, bits] of list) {
        const cidr = `${addr.toString()}/${bits}`;
        const first = kind === ipaddr.IPv4 ? ipaddr.IPv4.networkAddressFromCIDR(cidr) : ipaddr.IPv6.networkAddressFromCIDR(cidr);
        const last = kind === ipaddr.IPv4 ? ipaddr.IPv4.broadcastAddressFromCIDR(cidr) : ipaddr.IPv6.broadcastAddressFromCIDR(cidr);
        samples.push(first.toString(), last.toString());
      }
    }
  }
  for (let i = 0; i < 20000; i++) {
    const n = rnd();
    samples.push(`${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`);
    const g = [rnd() & 0xffff, rnd() & 0xffff, 0, 0, 0, 0, rnd() & 0xffff, rnd() & 0xffff];
    if (i % 2) g[0] = 0x2000 | (g[0]! & 0x1fff); // half of them in global unicast space
    if (i % 5 === 0) g[0] = [0x2001, 0x2002, 0xfe80, 0xfc00, 0xff00, 0x0064, 0x3fff][i % 7]!;
    samples.push(g.map((x) => x.toString(16)).join(':'));
  }
  let disagree = 0;
  const examples: string[] = [];
  for (const s of samples) {
    const ours = parseIp(s);
    if (!ours) throw new Error(`sample does not parse: ${s}`);
    const theirs = ipaddr.parse(s);
    if (theirs.kind() === 'ipv6' && (theirs as ipaddr.IPv6).isIPv4MappedAddress()) continue; // we judge those as IPv4
    if (back(ipRangeName(ours), ours.v) !== theirs.range()) {
      disagree++;
      if (examples.length < 5) examples.push(`${s}: ${ipRangeName(ours)} vs ${theirs.range()}`);
    }
  }
  t.ok(samples.length > 40000);
  t.equal(disagree, 0, examples.join('; '));
});

// ---------------------------------------------------------------------------------------

t.test('AsnList.parse', async (t) => {
  const list = AsnList.parse(
    ['# header', '', 'AS16509  cloud  # Amazon — source: x', 'as14061 Hosting', '  AS4200000000 cdn # 32-bit ASN', ''].join('\n'),
    'x.txt',
  );
  t.equal(list.size, 3);
  t.ok(list.has(16509));
  t.equal(list.category(14061), 'hosting', 'categories are lower-cased');
  t.equal(list.category(4200000000), 'cdn');
  t.notOk(list.has(15169));
  t.equal(list.category(15169), undefined);

  const bad: [string, RegExp][] = [
    ['AS1 cloud\n16509 cloud', /^x\.txt:2: expected "AS<number> <category>/],
    ['AS1', /^x\.txt:1: expected/],
    ['AS1 cloud extra', /^x\.txt:1: expected/],
    ['ASX cloud', /^x\.txt:1: expected/],
    ['AS1 9cloud', /^x\.txt:1: expected/],
    ['AS0 cloud', /^x\.txt:1: AS0 is not a valid 32-bit ASN/],
    ['AS4294967296 cloud', /^x\.txt:1: AS4294967296 is not a valid/],
    ['AS7 cloud\n\nAS7 hosting', /^x\.txt:3: AS7 is already listed on line 1/],
  ];
  for (const [input, err] of bad) t.throws(() => AsnList.parse(input, 'x.txt'), err, JSON.stringify(input));
});

t.test('committed ASN lists: well-formed, sourced, and org names match the ASN data', async (t) => {
  const table = AsnTable.fromBytes(asnBin());
  for (const [file, min] of [['hosting-asns.txt', 60], ['vpn-asns.txt', 10]] as const) {
    const body = text(file);
    const list = AsnList.parse(body, file);
    t.ok(list.size >= min, `${file}: ${list.size} entries`);
    for (const line of body.split('\n')) {
      const m = /^AS(\d+)\s+\S+\s*#\s*(.*?) — .* — source: \S/.exec(line);
      if (!m) {
        t.ok(line === '' || line.startsWith('#'), `${file}: entry without "# <org> — <what> — source: ..." comment: ${line}`);
        continue;
      }
      t.equal(table.orgOf(Number(m[1])), m[2], `${file}: AS${m[1]} org name`);
    }
  }
  t.same([...AsnList.parse(text('vpn-asns.txt'), 'vpn-asns.txt').categories()].filter((c) => !['vpn', 'vpn-host', 'proxy', 'tor'].includes(c)), []);
});

t.test('org-name patterns', async (t) => {
  const pats = parseOrgPatterns(text('hosting-org-patterns.txt'), 'hosting-org-patterns.txt');
  const flags = (org: string): boolean => pats.include.some((r) => r.test(org)) && !pats.exclude.some((r) => r.test(org));
  // Real org names from @ip-location-db/asn.
  for (const org of ['Free Range Cloud Hosting Inc.', 'UK Dedicated Servers Limited', 'Colocation America Corporation', 'Ace Data Centers, Inc.', 'IOMART CLOUD SERVICES LIMITED', 'HZ Hosting Ltd', 'Servers.com, Inc.', 'Iron Mountain Data Center']) {
    t.ok(flags(org), `hosting: ${org}`);
  }
  for (const org of ['Comcast Cable Communications, LLC', 'Deutsche Telekom AG', 'The Cloud Networks Limited', 'Cloud 9 Internet, Inc.', 'VPS Broadband And Telecommunications Pvt Ltd', 'HOSTING TELECOM LTD', 'Server ISP', 'Google LLC', 'Orange S.A.', 'Reliance Jio Infocomm Limited', 'T-Mobile USA, Inc.', 'Charter Communications Inc']) {
    t.notOk(flags(org), `not hosting: ${org}`);
  }
  t.throws(() => parseOrgPatterns('# ok\n\\bfine\\b\n(unclosed', 'p.txt'), /^p\.txt:3: invalid regular expression/);
  t.throws(() => parseOrgPatterns('!(', 'p.txt'), /^p\.txt:1: invalid regular expression/);
});

const realFiles = (): IpIntelFiles => ({
  asnBin: asnBin(),
  countryMmdb: readFileSync(COUNTRY_MMDB),
  hostingAsns: text('hosting-asns.txt'),
  vpnAsns: text('vpn-asns.txt'),
  hostingOrgPatterns: text('hosting-org-patterns.txt'),
});

t.test('IpIntel with the embedded data', async (t) => {
  const intel = loadIpIntel(realFiles());

  const google = intel.assess('8.8.8.8');
  t.match(google, { valid: true, version: 4, range: 'unicast', bogon: false, asn: 15169, org: 'Google LLC', country: 'US', hosting: true, hostingSource: 'asn-list', vpn: false });
  t.match(intel.assess('2001:4860:4860::8888'), { version: 6, asn: 15169, country: 'US' });
  t.match(intel.assess('::ffff:8.8.8.8'), { version: 4, asn: 15169, country: 'US' }, 'mapped IPv4 is looked up as IPv4');
  t.match(intel.assess('3.5.140.2'), { asn: 16509, hosting: true, hostingSource: 'asn-list' }, 'AWS');
  t.match(intel.assess('159.89.0.1'), { asn: 14061, hosting: true, hostingSource: 'asn-list' }, 'DigitalOcean');
  t.match(intel.assess('2.26.36.1'), { asn: 42831, hosting: true, hostingSource: 'org-pattern' }, 'UK Dedicated Servers via org rule');
  t.match(intel.assess('2.56.16.1'), { asn: 9009, vpn: true, vpnSource: 'asn-list', hosting: true }, 'M247');
  t.match(intel.assess('23.129.64.1'), { asn: 396507, tor: true, vpn: false, vpnSource: 'asn-list' }, 'Emerald Onion');
  t.match(intel.assess('23.24.0.1'), { asn: 7922, country: 'US', hosting: false, hostingSource: '', vpn: false, proxy: false, tor: false }, 'Comcast residential');

  t.match(intel.assess('192.168.1.1'), { valid: true, range: 'private', bogon: true, asn: 0, org: '', country: '', hosting: false });
  t.match(intel.assess('not an ip'), { valid: false, version: 0, range: '', bogon: false, asn: 0, country: '' });

  // Uncached and pure: the same answer again.
  t.same(intel.assess('8.8.8.8'), google);
});

t.test('IpCache: the verdicts IpIntel gives, per data generation, within a fixed size', async (t) => {
  const intel = loadIpIntel(realFiles());
  const cache = IpCache.create(64 << 10);
  const bytes = cache.bytes;
  const ip = ipScratch();
  const verdictOf = (s: string, gen = 1, intelOf = intel) => {
    t.ok(parseIpInto(s, ip), s);
    return { ...cache.verdict(ip, intelOf, gen, emptyIpVerdict()) };
  };
  const pick = ({ bogon, asn, country, hosting, vpn, proxy, tor, relay, crawler }: ReturnType<IpIntel['assess']>) => ({ bogon, asn, country, hosting, vpn, proxy, tor, relay, crawler });
  for (const s of ['8.8.8.8', '3.5.140.2', '2.56.16.1', '23.129.64.1', '192.168.1.1', '2001:4860:4860::8888']) {
    const first = verdictOf(s);
    t.same(first, pick(intel.assess(s)), `${s}: the cache stores what IpIntel says`);
    t.same(verdictOf(s), first, `${s}: and serves it back`);
  }
  t.ok(cache.hits >= 6 && cache.misses === 6, `hits ${cache.hits}, misses ${cache.misses}`);
  t.same(verdictOf('::ffff:8.8.8.8'), verdictOf('8.8.8.8'), 'mapped IPv4 is the same address');

  // A new data generation never sees the old verdicts.
  t.equal(verdictOf('23.24.0.1').hosting, false, 'Comcast residential');
  const listed = loadIpIntel({ ...realFiles(), hostingAsns: 'AS7922 cloud' });
  t.equal(verdictOf('23.24.0.1', 1, listed).hosting, false, 'generation 1 still answers from its own data');
  t.equal(verdictOf('23.24.0.1', 2, listed).hosting, true, 'generation 2 computes anew');

  for (let k = 0; k < 20 * cache.capacity; k++) verdictOf(`11.${(k >> 16) & 255}.${(k >> 8) & 255}.${k & 255}`, 2, listed);
  t.ok(cache.count() <= cache.capacity, `at most ${cache.capacity} entries (${cache.count()})`);
  t.equal(cache.bytes, bytes, 'fixed size');
});

t.test('IpIntel logic with hand-made lists', async (t) => {
  const table = AsnTable.fromBytes(asnBin());
  const base = {
    asnTable: table, asnMmdb: null, countryMmdb: null, anonymousIpMmdb: null,
    hostingAsns: AsnList.empty, vpnAsns: AsnList.empty, hostingOrgPatterns: [] as RegExp[],
  };
  t.match(new IpIntel(base).assess('1.1.1.1'), { asn: 13335, hosting: false, vpn: false, country: '' }, 'no lists, no flags');
  t.match(new IpIntel({ ...base, vpnAsns: AsnList.parse('AS13335 proxy', 't') }).assess('1.1.1.1'), { proxy: true, vpn: false, vpnSource: 'asn-list' });
  t.match(new IpIntel({ ...base, vpnAsns: AsnList.parse('AS13335 vpn-host', 't') }).assess('1.1.1.1'), { vpn: true });
  t.match(new IpIntel({ ...base, hostingOrgPatterns: [/cloudflare/i] }).assess('1.1.1.1'), { hosting: true, hostingSource: 'org-pattern' });
  t.match(new IpIntel({ ...base, hostingOrgPatterns: [/cloudflare/i], hostingOrgExclusions: [/inc\./i] }).assess('1.1.1.1'), { hosting: false });
  t.match(new IpIntel({ ...base, asnTable: null }).assess('1.1.1.1'), { valid: true, asn: 0, org: '', hosting: false });
  t.throws(() => new IpIntel({ ...base, vpnAsns: AsnList.parse('AS1 cloud', 't') }), /vpn ASN list: unknown category "cloud"/);
});

t.test('IpIntel with published ranges (ivtd data update)', async (t) => {
  const table = AsnTable.fromBytes(asnBin());
  const b = new RangeSetBuilder();
  addRangeList(b, [
    '23.24.0.0/24 hosting', '23.24.1.5 tor', '23.24.2.0/24 vpn', '23.24.2.128/25 proxy',
    '23.24.3.0/24 relay', '1.1.1.0/24 relay', '1.1.1.7 tor', '10.0.0.0/8 hosting', '2001:db8::/32 hosting',
  ].join('\n'), 'test');
  const ranges = IpRanges.fromCompiled(b.build({ shared: true }));
  const base = {
    asnTable: table, asnMmdb: null, countryMmdb: null, anonymousIpMmdb: null,
    hostingAsns: AsnList.parse('AS13335 cdn', 't'), vpnAsns: AsnList.parse('AS13335 vpn-host', 't'), hostingOrgPatterns: [] as RegExp[], ranges,
  };
  const intel = new IpIntel(base);
  t.match(intel.assess('23.24.0.9'), { asn: 7922, hosting: true, hostingSource: 'published-ranges', vpn: false, relay: false }, 'a cloud range in a residential ASN');
  t.match(intel.assess('23.24.1.5'), { tor: true, vpn: false, vpnSource: 'published-ranges', hosting: false });
  t.match(intel.assess('23.24.2.1'), { vpn: true, proxy: false, vpnSource: 'published-ranges' });
  t.match(intel.assess('23.24.2.200'), { vpn: true, proxy: true }, 'overlapping lists: both categories');
  t.match(intel.assess('23.24.3.1'), { relay: true, hosting: false, vpn: false, vpnSource: '' }, 'relay egress');
  t.match(intel.assess('1.1.1.1'), { asn: 13335, relay: true, hosting: false, vpn: false, hostingSource: '', vpnSource: '' }, 'relay egress wins over the hosting and vpn-host ASN lists');
  t.match(intel.assess('1.1.1.7'), { relay: true, tor: true, vpnSource: 'published-ranges' }, 'a Tor listing of the very address still counts');
  t.match(intel.assess('1.0.0.1'), { asn: 13335, relay: false, hosting: true, hostingSource: 'asn-list', vpn: true }, 'outside the relay block the ASN lists apply');
  t.match(intel.assess('10.1.2.3'), { bogon: true, hosting: false }, 'a hostile list cannot turn private space into hosting');
  t.match(intel.assess('23.24.50.1'), { hosting: false, vpn: false, relay: false });
  t.match(new IpIntel({ ...base, ranges: IpRanges.empty }).assess('23.24.0.9'), { hosting: false }, 'no ranges loaded');

  const cache = IpCache.create(64 << 10);
  const ip = ipScratch();
  t.ok(parseIpInto('23.24.3.1', ip));
  t.match(cache.verdict(ip, intel, 1, emptyIpVerdict()), { relay: true, hosting: false });
  t.match(cache.verdict(ip, intel, 1, emptyIpVerdict()), { relay: true, hosting: false }, 'the cache keeps the relay flag');
  t.equal(cache.hits, 1);
});

t.test('IpIntel with MaxMind-shaped databases', async (t) => {
  const country = buildMmdb('GeoIP2-Country', [
    ['8.8.8.0/24', { country: { iso_code: 'US', geoname_id: 6252001, names: { en: 'United States' } } }],
    ['81.2.69.0/24', { registered_country: { iso_code: 'gb', geoname_id: 2635167, names: { en: 'UK' } } }],
  ]);
  const asn = buildMmdb('GeoLite2-ASN', [
    ['8.8.8.0/24', { autonomous_system_number: 64496, autonomous_system_organization: 'Example Hosting Ltd' }],
  ]);
  const anon = buildMmdb('GeoIP2-Anonymous-IP', [
    ['8.8.8.0/24', { is_anonymous: true, is_anonymous_vpn: true, is_hosting_provider: true }],
    ['81.2.69.0/24', { is_anonymous: true, is_tor_exit_node: true, is_public_proxy: true }],
  ]);
  const intel = loadIpIntel({
    asnBin: asnBin(), // ignored: the ASN MMDB takes precedence
    asnMmdb: asn,
    countryMmdb: country,
    anonymousIpMmdb: anon,
    hostingAsns: '',
    vpnAsns: '',
    hostingOrgPatterns: '\\bhosting\\b',
  });
  t.match(intel.assess('8.8.8.8'), {
    asn: 64496, org: 'Example Hosting Ltd', country: 'US',
    hosting: true, hostingSource: 'anonymous-ip-db', vpn: true, proxy: false, tor: false, vpnSource: 'anonymous-ip-db',
  });
  t.match(intel.assess('81.2.69.160'), { asn: 0, country: 'GB', hosting: false, tor: true, proxy: true, vpn: false, vpnSource: 'anonymous-ip-db' }, 'registered_country fallback, upper-cased');
  t.match(intel.assess('1.1.1.1'), { asn: 0, country: '', hosting: false, vpn: false });

  // Org rule over the ASN-MMDB's org name.
  const noAnon = loadIpIntel({ asnMmdb: asn, hostingAsns: '', vpnAsns: '', hostingOrgPatterns: '\\bhosting\\b' });
  t.match(noAnon.assess('8.8.8.8'), { asn: 64496, hosting: true, hostingSource: 'org-pattern' });
});

t.test('IPv6: an IPv4-only database is not asked; the Anonymous-IP database is asked even in special ranges', async (t) => {
  // The same package ships an IPv4-only file; maxmind walks an IPv4 tree with the first
  // 32 bits of an IPv6 address and answers with whatever IPv4 network that lands in.
  const v4only = readFileSync(join(dirname(COUNTRY_MMDB), 'geo-whois-asn-country-ipv4.mmdb'));
  const intel = loadIpIntel({ countryMmdb: v4only, hostingAsns: '', vpnAsns: '' });
  t.match(intel.assess('8.8.8.8'), { country: 'US' });
  t.match(intel.assess('::ffff:8.8.8.8'), { country: 'US' }, 'IPv4-mapped IPv6 is IPv4');
  for (const ip of ['2a00:1450::1', '808:808::1', '2001:4860:4860::8888']) {
    t.match(intel.assess(ip), { version: 6, country: '' }, `${ip}: nothing from an IPv4-only file`);
  }

  const anon = buildMmdb('GeoIP2-Anonymous-IP', [
    ['abcd:1000::/112', { is_anonymous: true, is_anonymous_vpn: true }],
    ['2001:db8:5::/48', { is_anonymous: true, is_tor_exit_node: true }],
    ['81.2.69.0/24', { is_anonymous: true, is_public_proxy: true }],
  ], 6);
  const withAnon = loadIpIntel({ anonymousIpMmdb: anon, hostingAsns: '', vpnAsns: '' });
  for (const ip of ['abcd:1000::', 'abcd:1000::8000', 'abcd:1000::ffff']) {
    t.match(withAnon.assess(ip), { range: 'unassigned', bogon: true, vpn: true, vpnSource: 'anonymous-ip-db' }, `${ip}: listed though unassigned`);
  }
  t.match(withAnon.assess('2001:db8:5::1'), { range: 'documentation', tor: true });
  t.match(withAnon.assess('81.2.69.160'), { proxy: true, vpn: false }, 'IPv4 in an IPv6 file');
  t.match(withAnon.assess('abcd:1001::1'), { vpn: false, tor: false, proxy: false });
});

t.test('unusable inputs give clear errors', async (t) => {
  const files = realFiles();
  const mmdb = readFileSync(COUNTRY_MMDB);
  t.throws(() => loadIpIntel({ ...files, countryMmdb: Buffer.from('definitely not a database') }), /^country MMDB: not a readable MaxMind DB file/);
  t.throws(() => loadIpIntel({ ...files, countryMmdb: mmdb.subarray(0, mmdb.length >> 1) }), /country MMDB: not a readable MaxMind DB file/);
  t.throws(() => loadIpIntel({ ...files, countryMmdb: new Uint8Array(0) }), /country MMDB: not a readable MaxMind DB file/);
  t.throws(() => loadIpIntel({ ...files, asnMmdb: mmdb }), /ASN MMDB: records lack the expected fields \(database type "country ipvAll"\)/);
  t.throws(() => loadIpIntel({ ...files, anonymousIpMmdb: Buffer.alloc(4096, 0xab) }), /anonymous-IP MMDB: not a readable MaxMind DB file/);
  const bin = asnBin();
  t.throws(() => loadIpIntel({ ...files, asnBin: bin.subarray(0, bin.length - 4) }), /ASN table is corrupt or truncated/);
  t.throws(() => loadIpIntel({ ...files, hostingAsns: 'AS1 cloud\nbogus line' }), /hosting-asns\.txt:2: expected/);
  t.throws(() => loadIpIntel({ ...files, vpnAsns: 'AS1 vpn\nAS1 vpn' }), /vpn-asns\.txt:2: AS1 is already listed/);
  t.throws(() => loadIpIntel({ ...files, hostingOrgPatterns: '[' }), /hosting-org-patterns\.txt:1: invalid regular expression/);
});
