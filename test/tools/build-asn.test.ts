import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { AsnTable } from '../../src/signals/asn-table.ts';
import { compileAsnTable } from '../../tools/build-asn.ts';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../tools/build-asn.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const at = (table: AsnTable, n: number): number | null => table.lookup({ v: 4, n })?.asn ?? null;

t.test('CSV quoting: commas and escaped quotes in org names, CRLF line ends', async (t) => {
  const csv = '10,19,64500,"Acme, Inc."\r\n20,29,64501,"LLC ""SPUTNIK"""\r\n30,39,64502,Plain Org\r\n';
  const table = AsnTable.fromBytes(compileAsnTable(csv, '').bytes);
  t.equal(table.orgOf(64500), 'Acme, Inc.');
  t.equal(table.orgOf(64501), 'LLC "SPUTNIK"');
  t.equal(table.orgOf(64502), 'Plain Org');
});

t.test('overlaps: narrowest range wins, ties go to the earlier row; adjacent same-ASN ranges merge', async (t) => {
  const csv = [
    '100,199,1,Wide', // wide range ...
    '150,159,2,Narrow', // ... with a narrower one inside
    '190,209,3,Straddle', // overlaps the wide range's tail and goes past it
    '300,309,4,First', // identical ranges: the earlier row wins
    '300,309,5,Second',
    '400,409,6,Left', // adjacent, same ASN: one range
    '410,419,6,Left',
    '500,509,0,Unrouted', // AS0 is dropped
  ].join('\n');
  const { bytes, stats } = compileAsnTable(csv, '');
  const table = AsnTable.fromBytes(bytes);
  const expect: [number, number | null][] = [
    [99, null], [100, 1], [149, 1], [150, 2], [159, 2], [160, 1],
    [189, 1], [190, 3], [199, 3], [209, 3], [210, null],
    [300, 4], [309, 4], [400, 6], [419, 6], [505, null],
  ];
  for (const [n, asn] of expect) t.equal(at(table, n), asn, `address ${n}`);
  t.equal(stats.overlappingRows, 5, 'rows in overlapping clusters');
  // Wide is cut into 100-149, 160-189; Narrow; Straddle 190-209; First; Left merged.
  t.equal(stats.v4Ranges, 6);
  t.equal(table.v4Ranges, 6);
  t.equal(table.orgOf(5), 'Second', 'the losing row still records its org');
});

t.test('unsorted input is sorted', async (t) => {
  const table = AsnTable.fromBytes(compileAsnTable('50,59,2,B\n10,19,1,A\n30,39,3,C', '').bytes);
  t.same([at(table, 15), at(table, 35), at(table, 55), at(table, 25)], [1, 3, 2, null]);
});

t.test('IPv6 rows use 128-bit numbers', async (t) => {
  const top = (1n << 128n) - 1n;
  const start = 0x20010db8n << 96n;
  const table = AsnTable.fromBytes(compileAsnTable('', `${start},${start + 0xffffn},64510,Six\n${top - 10n},${top},64511,Top`).bytes);
  t.equal(table.lookup({ v: 6, w: Uint32Array.of(0x20010db8, 0, 0, 0xffff) })?.asn, 64510);
  t.equal(table.lookup({ v: 6, w: Uint32Array.of(0x20010db8, 0, 0, 0x10000) }), null);
  t.equal(table.lookup({ v: 6, w: Uint32Array.of(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff) })?.asn, 64511);
});

t.test('bad rows are rejected with file and line', async (t) => {
  t.throws(() => compileAsnTable('1,2,3,ok\n5,4,1,backwards', ''), /asn-ipv4-num\.csv:2: bad address range/);
  t.throws(() => compileAsnTable('1,2,x,org', ''), /asn-ipv4-num\.csv:1: bad ASN "x"/);
  t.throws(() => compileAsnTable('1,4294967296,1,org', ''), /asn-ipv4-num\.csv:1: bad address range/);
  t.throws(() => compileAsnTable('1,2,1', ''), /asn-ipv4-num\.csv:1: expected start,end,asn,org/);
  t.throws(() => compileAsnTable('1,2,1,"open', ''), /unterminated quoted org name/);
  t.throws(() => compileAsnTable('1,2,1,"a"b"', ''), /stray quote/);
  t.throws(() => compileAsnTable('', `${1n << 128n},${1n << 128n},1,x`), /asn-ipv6-num\.csv:1: bad address range/);
  t.throws(() => compileAsnTable('', '0x10,0x20,1,x'), /asn-ipv6-num\.csv:1: bad address range/);
});

t.test('script: builds the real table, then --if-missing skips', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'ivtd-asn-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  const first = await run(process.execPath, ['--import', 'tsx', SCRIPT, '--out', out], { cwd: ROOT });
  t.match(first.stdout, /asn table: wrote .*asn\.bin .*IPv4 .*IPv6 ranges.*from @ip-location-db\/asn@/);
  const meta = JSON.parse(readFileSync(join(out, 'asn.meta.json'), 'utf8'));
  t.equal(meta.source.package, '@ip-location-db/asn');
  t.match(meta.source.version, /^\d+\.\d+\.\d+/);
  t.ok(meta.v4_ranges > 300_000 && meta.v6_ranges > 50_000 && meta.orgs > 50_000);
  t.ok(!Number.isNaN(Date.parse(meta.built_at)));
  const table = AsnTable.fromBytes(readFileSync(join(out, 'asn.bin')));
  t.equal(table.v4Ranges, meta.v4_ranges);
  t.equal(table.asnCount, meta.orgs);

  const mtime = statSync(join(out, 'asn.bin')).mtimeMs;
  const second = await run(process.execPath, ['--import', 'tsx', SCRIPT, '--if-missing', '--out', out], { cwd: ROOT });
  t.match(second.stdout, /up to date/);
  t.equal(statSync(join(out, 'asn.bin')).mtimeMs, mtime, 'file left alone');
});

t.test('script: unknown arguments fail', async (t) => {
  const r = await run(process.execPath, ['--import', 'tsx', SCRIPT, '--bogus'], { cwd: ROOT }).catch((e: { code: number; stderr: string }) => e);
  t.equal((r as { code: number }).code, 1);
  t.match((r as { stderr: string }).stderr, /unknown argument "--bogus"/);
});
