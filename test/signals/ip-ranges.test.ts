import t from 'tap';
import { parseIp } from '../../src/signals/ip-address.ts';
import {
  IpRanges,
  RANGE_BIT,
  RangeSetBuilder,
  addRangeList,
  formatCidr,
  parseCidr,
  rangeCategoryNames,
  type Cidr,
  type RangeCategory,
} from '../../src/signals/ip-ranges.ts';

function cidr(s: string): Cidr {
  const c = parseCidr(s);
  if (typeof c === 'string') throw new Error(`${s}: ${c}`);
  return c;
}

function build(entries: Array<[string, RangeCategory]>, shared = false): IpRanges {
  const b = new RangeSetBuilder();
  for (const [c, cat] of entries) b.add(cidr(c), cat);
  return IpRanges.fromCompiled(b.build({ shared }));
}

function at(r: IpRanges, ip: string): string[] {
  const p = parseIp(ip);
  if (!p) throw new Error(`bad ip ${ip}`);
  return rangeCategoryNames(r.lookup(p));
}

t.test('parseCidr: forms, normalisation and refusals', async (t) => {
  t.same(cidr('10.1.2.0/24'), { v: 4, start: 0x0a010200, end: 0x0a0102ff });
  t.same(cidr('10.1.2.77/24'), { v: 4, start: 0x0a010200, end: 0x0a0102ff }, 'host bits cleared');
  t.same(cidr(' 192.0.2.1 '), { v: 4, start: 0xc0000201, end: 0xc0000201 }, 'bare address is a /32');
  t.same(cidr('255.255.255.255/32'), { v: 4, start: 0xffffffff, end: 0xffffffff });
  t.same(cidr('::ffff:192.0.2.0/120'), { v: 4, start: 0xc0000200, end: 0xc00002ff }, 'IPv4-mapped counts 96 bits');
  const v6 = cidr('2001:db8::/32');
  t.equal(v6.v, 6);
  if (v6.v === 6) {
    t.equal(v6.start, 0x20010db8n << 96n);
    t.equal(v6.end, (0x20010db8n << 96n) | ((1n << 96n) - 1n));
  }
  t.same(formatCidr(cidr('2001:db8:1:2::/64')), '2001:db8:1:2:0:0:0:0/64');
  t.same(formatCidr(cidr('3.5.140.9/22')), '3.5.140.0/22');
  for (const bad of ['', '0.0.0.0/0', '10.0.0.0/7', '::/0', '2000::/15', '10.0.0.0/33', '2001:db8::/129', '10.0.0.0/-1', '10.0.0.0/2a',
    '010.0.0.0/8', '10.0.0/8', 'example.com', '10.0.0.0/8/8', '::ffff:1.2.3.4/95', '1.2.3.4/ 24', 'x'.repeat(100)]) {
    t.type(parseCidr(bad), 'string', `refused: ${JSON.stringify(bad.slice(0, 20))}`);
  }
});

t.test('lookup: inside, outside and at the edges', async (t) => {
  const r = build([
    ['3.5.140.0/22', 'hosting'],
    ['2600:1f14::/35', 'hosting'],
    ['185.220.101.7', 'tor'],
  ]);
  t.same(at(r, '3.5.140.0'), ['hosting'], 'first address');
  t.same(at(r, '3.5.143.255'), ['hosting'], 'last address');
  t.same(at(r, '3.5.139.255'), [], 'just below');
  t.same(at(r, '3.5.144.0'), [], 'just above');
  t.same(at(r, '185.220.101.7'), ['tor']);
  t.same(at(r, '185.220.101.8'), []);
  t.same(at(r, '2600:1f14::1'), ['hosting']);
  t.same(at(r, '2600:1f14:1fff:ffff:ffff:ffff:ffff:ffff'), ['hosting'], 'last v6 address');
  t.same(at(r, '2600:1f14:2000::'), [], 'just above v6');
  t.same(at(r, '2600:1f13:ffff:ffff:ffff:ffff:ffff:ffff'), [], 'just below v6');
  t.same(at(r, '::ffff:3.5.140.1'), ['hosting'], 'IPv4-mapped address looks up as IPv4');
  t.same(at(IpRanges.empty, '3.5.140.1'), [], 'empty set');
  t.equal(IpRanges.empty.size, 0);
});

t.test('overlaps are split and ORed; adjacent equal ranges merge', async (t) => {
  const r = build([
    ['10.0.0.0/8', 'hosting'],
    ['10.1.0.0/16', 'vpn'],
    ['10.1.2.3', 'tor'],
    ['10.0.0.0/8', 'hosting'], // duplicate
    ['10.255.255.0/24', 'hosting'], // nested, same category
  ]);
  t.same(at(r, '10.0.0.1'), ['hosting']);
  t.same(at(r, '10.1.0.0'), ['hosting', 'vpn']);
  t.same(at(r, '10.1.2.3'), ['hosting', 'vpn', 'tor']);
  t.same(at(r, '10.1.2.4'), ['hosting', 'vpn']);
  t.same(at(r, '10.2.0.0'), ['hosting'], 'back to hosting only after the vpn range');
  t.same(at(r, '10.255.255.255'), ['hosting'], 'a duplicate and a nested range do not end the outer one early');
  t.equal(r.size, 5, 'hosting | hosting+vpn | all three | hosting+vpn | hosting');

  const adj = build([
    ['192.0.2.0/25', 'hosting'],
    ['192.0.2.128/25', 'hosting'],
    ['192.0.3.0/24', 'hosting'],
    ['198.51.100.0/24', 'relay'],
  ]);
  t.equal(adj.size, 2, 'three adjacent hosting blocks become one interval');
  t.same(at(adj, '192.0.3.255'), ['hosting']);
  t.same(at(adj, '192.0.4.0'), []);
  const touching = build([['192.0.2.0/25', 'hosting'], ['192.0.2.128/25', 'relay']]);
  t.equal(touching.size, 2, 'adjacent ranges of different categories stay apart');

  const v6 = build([
    ['2001:db8::/32', 'hosting'],
    ['2001:db8:ffff::/48', 'relay'],
    ['2001:db9::/32', 'hosting'],
  ]);
  t.same(at(v6, '2001:db8:ffff::1'), ['hosting', 'relay']);
  t.same(at(v6, '2001:db8:fffe::1'), ['hosting']);
  t.same(at(v6, '2001:db9:ffff::1'), ['hosting']);
  t.equal(v6.size, 3, 'hosting | hosting+relay | hosting (the second /32 merged into the tail)');
});

t.test('top of the address space and shared memory', async (t) => {
  const r = build([['255.255.255.0/24', 'proxy'], ['ffff:ffff::/32', 'proxy']], true);
  t.same(at(r, '255.255.255.255'), ['proxy']);
  t.same(at(r, 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), ['proxy']);
  const b = new RangeSetBuilder();
  b.add(cidr('192.0.2.0/24'), 'hosting');
  const c = b.build({ shared: true });
  t.ok(c.v4Start.buffer instanceof SharedArrayBuffer, 'shared build lives in a SharedArrayBuffer');
  t.throws(() => IpRanges.fromCompiled({ ...c, v4End: new Uint32Array(0) }), /differ in length/);
});

t.test('agrees with a brute-force check on random overlapping CIDRs', async (t) => {
  let seed = 12345;
  const rnd = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed;
  };
  const cats: RangeCategory[] = ['hosting', 'vpn', 'proxy', 'tor', 'relay'];
  const list: Array<{ start: number; end: number; bit: number }> = [];
  const b = new RangeSetBuilder();
  for (let i = 0; i < 400; i++) {
    // Cluster the ranges into one /12 so they overlap a lot.
    const bits = 12 + (rnd() % 21);
    const base = 0x0a000000 + (rnd() % (1 << 20));
    const size = 2 ** (32 - bits);
    const start = base - (base % size);
    const cat = cats[rnd() % cats.length]!;
    b.add({ v: 4, start, end: start + size - 1 }, cat);
    list.push({ start, end: start + size - 1, bit: RANGE_BIT[cat] });
  }
  const r = IpRanges.fromCompiled(b.build());
  let mismatches = 0;
  for (let i = 0; i < 20000; i++) {
    const ip = 0x0a000000 - 5 + (rnd() % ((1 << 21) + 10));
    let want = 0;
    for (const e of list) if (ip >= e.start && ip <= e.end) want |= e.bit;
    if (r.lookupV4(ip) !== want) mismatches++;
  }
  t.equal(mismatches, 0);
});

t.test('ranges files: format and errors naming the line', async (t) => {
  const b = new RangeSetBuilder();
  const n = addRangeList(b, '# aws\n3.5.140.0/22 hosting\n\n2600:1f14::/35\thosting # comment\r\n185.220.101.7 TOR\n', 'aws.txt');
  t.equal(n, 3);
  const r = IpRanges.fromCompiled(b.build());
  t.same(at(r, '185.220.101.7'), ['tor'], 'category is case-insensitive');
  t.throws(() => addRangeList(new RangeSetBuilder(), '3.5.140.0/22 hosting\n3.5.140.0/22 datacenter\n', 'x.txt'), /x\.txt:2: unknown category "datacenter"/);
  t.throws(() => addRangeList(new RangeSetBuilder(), '3.5.140.0/22\n', 'x.txt'), /x\.txt:1: expected "<cidr> <category>"/);
  t.throws(() => addRangeList(new RangeSetBuilder(), '0.0.0.0/0 hosting\n', 'x.txt'), /x\.txt:1: prefix \/0 is broader/);
  t.throws(() => addRangeList(new RangeSetBuilder(), `${'1'.repeat(100000)} hosting\n`, 'x.txt'), /x\.txt:1: line longer/);
});

t.test('build cost: 200k IPv4 + 100k IPv6 ranges', async (t) => {
  const b = new RangeSetBuilder();
  for (let i = 0; i < 200_000; i++) b.add({ v: 4, start: 0x10000000 + i * 256, end: 0x10000000 + i * 256 + 127 }, i % 7 === 0 ? 'tor' : 'relay');
  for (let i = 0; i < 100_000; i++) {
    const start = (0x2a02n << 112n) | (BigInt(i) << 72n);
    b.add({ v: 6, start, end: start | ((1n << 64n) - 1n) }, 'relay');
  }
  const t0 = performance.now();
  const r = IpRanges.fromCompiled(b.build({ shared: true }));
  const ms = performance.now() - t0;
  t.equal(r.size, 300_000);
  t.comment(`built 300k ranges in ${ms.toFixed(0)} ms`);
  const t1 = performance.now();
  let hits = 0;
  for (let i = 0; i < 1_000_000; i++) if (r.lookupV4(0x10000000 + ((i * 2654435761) % 51_200_000)) !== 0) hits++;
  const perLookupNs = ((performance.now() - t1) * 1e6) / 1_000_000;
  t.comment(`IPv4 lookup ${perLookupNs.toFixed(0)} ns`);
  t.ok(hits > 0);
  t.ok(ms < 20_000, 'builds in reasonable time');
});
