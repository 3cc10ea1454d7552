// A subtly corrupt MMDB opens and answers the few probe addresses, then fails lookups
// elsewhere. The whole-file verification refuses it before any lookup sees it, names the
// file, and a lookup that still meets a bad record answers without the signal, never 500.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { Reader } from 'maxmind';
import { MmdbTree, openMmdb, verifyMmdb } from '../../src/signals/mmdb.ts';
import { parseIp } from '../../src/signals/ip-address.ts';

const GOOD = readFileSync('node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb');

function meta(buf: Buffer) {
  const md = new Reader(buf).metadata;
  return { nodeCount: md.nodeCount, recordSize: md.recordSize, searchTreeSize: md.searchTreeSize, nodeBytes: md.recordSize / 4 };
}

function left(buf: Buffer, o: number, recordSize: number): number {
  if (recordSize === 24) return buf.readUIntBE(o, 3);
  if (recordSize === 28) return ((buf[o + 3]! & 0xf0) << 20) | buf.readUIntBE(o, 3);
  return buf.readUInt32BE(o);
}

/** A tree node (past the middle of the tree) whose left record points at data. */
function nodeWithData(buf: Buffer): { node: number; pointer: number } {
  const m = meta(buf);
  for (let n = Math.floor(m.nodeCount / 2); n < m.nodeCount; n++) {
    const v = left(buf, n * m.nodeBytes, m.recordSize);
    if (v > m.nodeCount) return { node: n, pointer: v };
  }
  throw new Error('no data pointer found');
}

t.test('the shipped country database verifies', async (t) => {
  const t0 = Date.now();
  t.doesNotThrow(() => verifyMmdb(openMmdb(GOOD, 'country MMDB'), GOOD, 'country MMDB'));
  t.comment(`verified ${GOOD.length} bytes in ${Date.now() - t0} ms`);
});

t.test('a tree record pointing past the data section: opens, fails verification', async (t) => {
  const bad = Buffer.from(GOOD);
  const m = meta(bad);
  const { node } = nodeWithData(bad);
  const o = node * m.nodeBytes;
  t.equal(m.recordSize, 24, 'the fixture arithmetic below is for 24-bit records');
  bad.writeUIntBE(0xffffff, o, 3);
  const reader = openMmdb(bad, 'country MMDB');
  t.ok(reader, 'opening and the probe lookups still pass');
  t.throws(() => verifyMmdb(reader, bad, 'country MMDB'), /country MMDB: corrupt MaxMind DB file \(node \d+ points outside the data section\)/);
});

t.test('a data record that does not decode: opens, fails verification; a lookup that meets it answers null', async (t) => {
  const bad = Buffer.from(GOOD);
  const m = meta(bad);
  const { pointer } = nodeWithData(bad);
  const at = pointer - m.nodeCount + m.searchTreeSize;
  // An extended type byte naming a type that does not exist.
  bad[at] = 0x00;
  bad[at + 1] = 0xf0;
  const reader = openMmdb(bad, 'country MMDB');
  t.throws(() => verifyMmdb(reader, bad, 'country MMDB'), /country MMDB: corrupt MaxMind DB file \(the data record at \d+ does not decode/);
  // Find an address whose lookup lands on the broken record: walk any IPv4 /16 until one throws in the raw reader.
  const raw = new Reader(bad);
  let hit: string | null = null;
  for (let a = 1; a < 224 && hit === null; a++) {
    for (let b = 0; b < 256 && hit === null; b += 1) {
      const ip = `${a}.${b}.0.1`;
      try {
        raw.get(ip);
      } catch {
        hit = ip;
      }
    }
  }
  if (hit === null) {
    t.comment('no /16 start address lands on the broken record; the null fallback is not exercised here');
    return;
  }
  t.throws(() => raw.get(hit!), 'the raw reader throws on that address');
  t.equal(new MmdbTree(reader, (r) => r, null).get(parseIp(hit)!), null, 'the lookup path answers none instead of throwing');
});

t.test('a missing data section separator fails verification', async (t) => {
  const bad = Buffer.from(GOOD);
  const m = meta(bad);
  bad[m.searchTreeSize + 7] = 1;
  t.throws(() => verifyMmdb(openMmdb(bad, 'country MMDB'), bad, 'country MMDB'), /no data section separator/);
});

t.test('a reload refuses a subtly corrupt MMDB whole, names its path, and keeps serving the old data', async (t) => {
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const { startTestServer } = await import('../helpers/server.ts');
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-mmdb-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'Country.mmdb');
  writeFileSync(path, GOOD);
  const s = await startTestServer({ mmdbCountry: path });
  t.teardown(() => s.stop());
  const bad = Buffer.from(GOOD);
  const m = meta(bad);
  bad.writeUIntBE(0xffffff, nodeWithData(bad).node * m.nodeBytes, 3);
  writeFileSync(path, bad);
  const r = await s.server.reload();
  t.equal(r.ok, false, 'the reload is refused');
  t.match(r.errors.join('; '), path, 'the error names the bad file by its path');
  t.notMatch(r.errors.join('; '), /asn\.bin/, 'and does not blame the embedded ASN table');
  const res = await fetch(`${s.prebid}/health-check`);
  t.equal(res.status, 200, 'still serving');
});
