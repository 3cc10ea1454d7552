import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AsnTable, encodeAsnTable } from '../../src/signals/asn-table.ts';
import { parseIp } from '../../src/signals/ip-address.ts';
import { asnSourceDir, buildAsnTable, DEFAULT_OUT_DIR } from '../../tools/build-asn.ts';

const v4 = (s: string): number => s.split('.').reduce((n, o) => n * 256 + Number(o), 0);
const v6 = (s: string): string => {
  const ip = parseIp(s);
  if (!ip || ip.v !== 6) throw new Error(`not v6: ${s}`);
  return ((BigInt(ip.w[0]!) << 96n) | (BigInt(ip.w[1]!) << 64n) | (BigInt(ip.w[2]!) << 32n) | BigInt(ip.w[3]!)).toString();
};
const asnOf = (table: AsnTable, s: string): number | null => {
  const ip = parseIp(s);
  if (!ip) throw new Error(`bad ip in test: ${s}`);
  return table.lookup(ip)?.asn ?? null;
};

// Small table: two adjacent IPv4 ranges, a gap, a single address; IPv6 ranges whose
// boundaries cross 32-bit word borders.
const V4_CSV = [
  `${v4('1.0.0.0')},${v4('1.0.0.255')},13335,"Cloudflare, Inc."`,
  `${v4('1.0.1.0')},${v4('1.0.3.255')},64500,"Example ""Quoted"" Org"`,
  `${v4('9.9.9.9')},${v4('9.9.9.9')},19281,Quad9`,
  `${v4('255.255.255.0')},${v4('255.255.255.255')},64501,Top`,
].join('\n');
const V6_CSV = [
  `${v6('2001:db8::')},${v6('2001:db8::ffff:ffff')},64510,Six A`,
  `${v6('2001:db8::1:0:0')},${v6('2001:db8:0:ffff:ffff:ffff:ffff:ffff')},64511,Six B`,
  `${v6('2606:4700::')},${v6('2606:4700:ffff:ffff:ffff:ffff:ffff:ffff')},13335,"Cloudflare, Inc."`,
].join('\n');

t.test('small table: range boundaries', async (t) => {
  const table = AsnTable.fromBytes(buildAsnTable(V4_CSV, V6_CSV));
  t.equal(table.v4Ranges, 4);
  t.equal(table.v6Ranges, 3);
  t.equal(table.asnCount, 6);
  const cases: [string, number | null][] = [
    ['0.255.255.255', null], // just before the first range
    ['1.0.0.0', 13335], // first address
    ['1.0.0.255', 13335], // last address
    ['1.0.1.0', 64500], // first of the adjacent range
    ['1.0.3.255', 64500],
    ['1.0.4.0', null], // just after
    ['9.9.9.8', null],
    ['9.9.9.9', 19281], // single-address range
    ['9.9.9.10', null],
    ['255.255.255.255', 64501], // top of the address space
    ['::ffff:1.0.0.7', 13335], // IPv4-mapped IPv6 looks up the IPv4 table
    ['2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['2001:db8::', 64510],
    ['2001:db8::ffff:ffff', 64510],
    ['2001:db8::1:0:0', 64511], // next word starts
    ['2001:db8:0:ffff:ffff:ffff:ffff:ffff', 64511],
    ['2001:db8:1::', null],
    ['2606:4700:4700::1111', 13335],
    ['::', null],
    ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null],
  ];
  for (const [ip, asn] of cases) t.equal(asnOf(table, ip), asn, ip);
  t.same(table.lookup(parseIp('1.0.2.3')!), { asn: 64500, org: 'Example "Quoted" Org' });
  t.equal(table.orgOf(19281), 'Quad9');
  t.equal(table.orgOf(1), undefined);
  // One shared object per ASN, across families.
  t.equal(table.lookup(parseIp('1.0.0.1')!), table.lookup(parseIp('2606:4700::1')!));
});

t.test('empty table answers null', async (t) => {
  const table = AsnTable.fromBytes(buildAsnTable('', ''));
  t.equal(table.v4Ranges, 0);
  t.equal(asnOf(table, '1.1.1.1'), null);
  t.equal(asnOf(table, '2001:db8::1'), null);
});

t.test('lookups agree with a brute-force scan on a random table', async (t) => {
  // Random disjoint ranges; every probe is checked against a linear scan.
  let seed = 42;
  const rnd = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const ranges: [number, number, number][] = [];
  let at = 0;
  while (ranges.length < 500) {
    const start = at + (rnd() % 50000);
    const end = start + (rnd() % 50000);
    if (end > 0xffffffff) break;
    ranges.push([start, end, 1 + (rnd() % 20)]);
    at = end + 1 + (rnd() % 3);
  }
  const table = AsnTable.fromBytes(buildAsnTable(ranges.map(([s, e, a]) => `${s},${e},${a},Org ${a}`).join('\n'), ''));
  let mismatches = 0;
  for (let i = 0; i < 5000; i++) {
    const n = i % 2 ? rnd() % (at + 10) : (ranges[rnd() % ranges.length]![rnd() % 2] as number);
    const want = ranges.find(([s, e]) => s <= n && n <= e)?.[2] ?? null;
    if ((table.lookup({ v: 4, n })?.asn ?? null) !== want) mismatches++;
  }
  t.equal(mismatches, 0);
});

function realTableBytes(): Uint8Array {
  const bin = join(DEFAULT_OUT_DIR, 'asn.bin');
  if (existsSync(bin)) return readFileSync(bin);
  // `npm test` builds it in pretest; when run alone, build it in memory instead.
  const dir = asnSourceDir();
  return buildAsnTable(readFileSync(join(dir, 'asn-ipv4-num.csv'), 'utf8'), readFileSync(join(dir, 'asn-ipv6-num.csv'), 'utf8'));
}

t.test('real table from @ip-location-db/asn', async (t) => {
  const table = AsnTable.fromBytes(realTableBytes());
  t.ok(table.v4Ranges > 300_000, `${table.v4Ranges} IPv4 ranges`);
  t.ok(table.v6Ranges > 50_000, `${table.v6Ranges} IPv6 ranges`);
  const known: [string, number][] = [
    ['1.1.1.1', 13335], // Cloudflare DNS
    ['8.8.8.8', 15169], // Google DNS
    ['3.5.140.2', 16509], // AWS S3 (ap-northeast-2)
    ['159.89.0.1', 14061], // DigitalOcean
    ['2001:4860:4860::8888', 15169],
    ['2606:4700:4700::1111', 13335],
    ['::ffff:8.8.8.8', 15169],
  ];
  for (const [ip, asn] of known) t.equal(asnOf(table, ip), asn, ip);
  t.match(table.orgOf(16509), /Amazon/);
  t.equal(asnOf(table, '10.1.2.3'), null, 'private space is not announced');

  // Sampled source rows: start, end and middle of each map to the row's ASN.
  const csv = readFileSync(join(asnSourceDir(), 'asn-ipv4-num.csv'), 'utf8').split('\n');
  let wrong = 0;
  let checked = 0;
  for (let i = 0; i < csv.length; i += 997) {
    const [s, e, a] = csv[i]!.split(',');
    if (!a) continue;
    for (const n of [Number(s), Number(e), Math.floor((Number(s) + Number(e)) / 2)]) {
      checked++;
      if (table.lookup({ v: 4, n })?.asn !== Number(a)) wrong++;
    }
  }
  // The source has one overlapping pair, clipped by the builder; nothing else may differ.
  t.ok(checked > 1000);
  t.ok(wrong <= 1, `${wrong} of ${checked} sampled addresses disagree with their source row`);
});

t.test('corrupt or truncated files give a clear error', async (t) => {
  const good = buildAsnTable(V4_CSV, V6_CSV);
  const mutate = (f: (b: Uint8Array) => Uint8Array): Uint8Array => f(good.slice());
  t.throws(() => AsnTable.fromBytes(new Uint8Array(0)), /ASN table is corrupt or truncated: .*shorter than the header/);
  t.throws(() => AsnTable.fromBytes(good.subarray(0, good.length - 8)), /ASN table is corrupt or truncated: size is/);
  t.throws(() => AsnTable.fromBytes(good.subarray(0, good.length - 1)), /corrupt or truncated/);
  t.throws(() => AsnTable.fromBytes(mutate((b) => ((b[0] = 0), b))), /bad magic/);
  t.throws(() => AsnTable.fromBytes(mutate((b) => ((b[4] = 9), b))), /format version 9/);
  t.throws(() => AsnTable.fromBytes(mutate((b) => ((b[40] = b[40]! ^ 1), b))), /checksum mismatch/);
  t.throws(() => AsnTable.fromBytes(new TextEncoder().encode('x'.repeat(64))), /bad magic/);
  t.doesNotThrow(() => AsnTable.fromBytes(mutate((b) => b)), 'an intact copy opens');

  // Structurally invalid but correctly checksummed: caught by validation.
  const unsorted = encodeAsnTable({
    v4: { starts: [20, 10], ends: [29, 19], org: [0, 0] },
    v6: { starts: [], ends: [], org: [] },
    orgs: { asn: [1], name: ['x'] },
  });
  t.throws(() => AsnTable.fromBytes(unsorted), /IPv4 range 1 is out of order/);
  const dangling = encodeAsnTable({
    v4: { starts: [10], ends: [19], org: [5] },
    v6: { starts: [], ends: [], org: [] },
    orgs: { asn: [1], name: ['x'] },
  });
  t.throws(() => AsnTable.fromBytes(dangling), /points past the org table/);
});

t.test('unaligned input is copied, not rejected', async (t) => {
  const good = buildAsnTable(V4_CSV, V6_CSV);
  const shifted = new Uint8Array(good.length + 1);
  shifted.set(good, 1);
  const table = AsnTable.fromBytes(shifted.subarray(1));
  t.equal(asnOf(table, '9.9.9.9'), 19281);
});
