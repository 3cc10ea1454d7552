// The lookup path's walk of an MMDB's search tree (MmdbTree, src/signals/mmdb.ts) against
// maxmind's own reader: on random addresses it finds the record `reader.get` finds, on the
// embedded country database (IPv6 tree, 24-bit records, IPv4 inside) and on written ones
// with 24-, 28- and 32-bit records, IPv4 and IPv6 trees; it remembers what it derives per
// record; it answers `none` where no network is, and for IPv6 asked of an IPv4 database.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Reader } from 'maxmind';
import { formatIp, type ParsedIp } from '../../src/signals/ip-address.ts';
import { MmdbTree } from '../../src/signals/mmdb.ts';
import { buildMmdb } from '../helpers/mmdb-writer.ts';

const COUNTRY_MMDB = join(dirname(createRequire(import.meta.url).resolve('@ip-location-db/geo-whois-asn-country-mmdb/package.json')), 'geo-whois-asn-country.mmdb');

let seed = 0x9e3779b9;
const u32 = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed;
};
function randomIp(v6Share: number): ParsedIp {
  if (u32() / 2 ** 32 >= v6Share) return { v: 4, n: u32() };
  // Mostly global unicast (2000::/3), where databases hold networks; some anywhere.
  const w = new Uint32Array([u32(), u32(), u32(), u32()]);
  if (u32() % 4 !== 0) w[0] = (w[0]! & 0x1fffffff) | 0x20000000;
  return { v: 6, w };
}

/** Every address's derived value equals what reader.get gives; how many were found. */
function compare(t: Test, label: string, db: Buffer, n: number, v6Share: number): number {
  const reader = new Reader(db);
  const tree = new MmdbTree(reader, (r) => JSON.stringify(r), 'none');
  let found = 0;
  const wrong: string[] = [];
  for (let i = 0; i < n; i++) {
    const ip = randomIp(v6Share);
    const key = formatIp(ip);
    const want = ip.v === 6 && reader.metadata.ipVersion === 4 ? null : reader.get(key);
    const got = tree.get(ip);
    if (want !== null) found++;
    if (got !== (want === null ? 'none' : JSON.stringify(want))) wrong.push(`${key}: ${got} vs ${JSON.stringify(want)}`);
  }
  t.same(wrong.slice(0, 3), [], `${label}: the same record as reader.get for ${n} random addresses (${wrong.length} differ)`);
  return found;
}

t.test('the embedded country database: the same country as maxmind for random IPv4 and IPv6 addresses', async (t) => {
  const found = compare(t, 'country', readFileSync(COUNTRY_MMDB), 20_000, 0.3);
  t.ok(found > 10_000, `most addresses are in a network (${found})`);
});

// Disjoint networks (the test writer does not nest them).
const NETWORKS: [string, Record<string, string | number>][] = [
  ['1.0.0.0/8', { c: 'one' }],
  ['10.20.30.0/24', { c: 'ten-twenty-thirty' }],
  ['130.0.0.0/8', { c: 'one-thirty' }],
  ['203.0.113.7/32', { c: 'one-host', n: 7 }],
];
const NETWORKS_V6: [string, Record<string, string | number>][] = [
  ...NETWORKS,
  ['2001:db8::/32', { c: 'doc' }],
  ['2a00::/12', { c: 'ripe' }],
  ['2a02:1810:4d02::/48', { c: 'deep' }],
];

t.test('written databases: 24-, 28- and 32-bit records, IPv4 and IPv6 trees', async (t) => {
  for (const size of [24, 28, 32] as const) {
    compare(t, `IPv4 tree, ${size}-bit`, buildMmdb('Test', NETWORKS, 4, size), 4000, 0.2);
    compare(t, `IPv6 tree, ${size}-bit`, buildMmdb('Test', NETWORKS_V6, 6, size), 4000, 0.5);
  }
  // Record values past 2^24: the high nibbles of 28-bit records, the high byte of 32-bit ones.
  for (const size of [28, 32] as const) compare(t, `IPv6 tree, ${size}-bit, records past 2^24`, buildMmdb('Test', NETWORKS_V6, 6, size, 1 << 24), 2000, 0.5);
  // Addresses inside each network, where random ones rarely land.
  for (const size of [24, 28, 32] as const) {
    const tree = new MmdbTree(new Reader(buildMmdb('Test', NETWORKS_V6, 6, size)), (r) => (r as unknown as { c: string }).c, 'none');
    const at = (s: string) => {
      const [a, b, c, d] = s.split('.').map(Number) as [number, number, number, number];
      return tree.get({ v: 4, n: ((a << 24) | (b << 16) | (c << 8) | d) >>> 0 });
    };
    t.equal(at('10.20.30.40'), 'ten-twenty-thirty', `${size}-bit: a /24`);
    t.equal(at('10.20.31.40'), 'none', `${size}-bit: beside it`);
    t.equal(at('130.255.1.2'), 'one-thirty', `${size}-bit: a /8`);
    t.equal(at('203.0.113.7'), 'one-host', `${size}-bit: a /32`);
    t.equal(at('203.0.113.8'), 'none', `${size}-bit: beside it`);
    t.equal(at('9.9.9.9'), 'none', `${size}-bit: no network`);
    t.equal(tree.get({ v: 6, w: new Uint32Array([0x2a021810, 0x4d020000, 0, 1]) }), 'deep', `${size}-bit: IPv6 /48`);
    t.equal(tree.get({ v: 6, w: new Uint32Array([0x30000000, 0, 0, 1]) }), 'none', `${size}-bit: IPv6 outside every network`);
  }
});

t.test('an IPv4 database is not asked about IPv6; what is derived is remembered per record', async (t) => {
  const reader = new Reader(buildMmdb('Test', NETWORKS, 4, 24));
  let derived = 0;
  const tree = new MmdbTree(reader, (r) => {
    derived++;
    return (r as unknown as { c: string }).c;
  }, 'none');
  t.equal(tree.get({ v: 6, w: new Uint32Array([0x20010db8, 0, 0, 1]) }), 'none');
  for (let i = 0; i < 100; i++) t.equal(tree.get({ v: 4, n: (0x0a141e00 | i) >>> 0 }), 'ten-twenty-thirty');
  t.equal(derived, 1, 'one record, derived once for a hundred addresses in it');
});

t.test('a reader without the fields the walk reads is refused when the tree is made, not per lookup', async (t) => {
  const reader = new Reader(buildMmdb('Test', NETWORKS, 4, 24));
  const renamed = Object.assign(Object.create(Object.getPrototypeOf(reader) as object), reader, { db: undefined }) as Reader<never>;
  t.throws(() => new MmdbTree(renamed, (r) => r, null), /needs mmdb-lib/);
});
