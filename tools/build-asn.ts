// Builds data/generated/asn.bin (format: src/signals/asn-table.ts) from the
// @ip-location-db/asn CSVs (`start,end,asn,org`, numeric addresses).
//
//   node --import tsx tools/build-asn.ts [--if-missing] [--out DIR]
//
// Overlapping source rows are resolved deterministically: the narrowest range wins the
// overlap (like a longest-prefix match); equal widths go to the earlier row. Adjacent
// ranges of the same ASN are merged. Each ASN keeps the first org name seen for it.
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AsnTable, encodeAsnTable } from '../src/signals/asn-table.ts';

const SOURCE_PACKAGE = '@ip-location-db/asn';
const V4_FILE = 'asn-ipv4-num.csv';
const V6_FILE = 'asn-ipv6-num.csv';

/** One source row; addresses as number (IPv4) or bigint (IPv6), end exclusive. */
interface Row<K extends number | bigint> {
  start: K;
  endx: K;
  width: K;
  asn: number;
  seq: number;
}

interface Piece<K extends number | bigint> {
  start: K;
  endx: K;
  asn: number;
}

export interface AsnBuildStats {
  v4Rows: number;
  v6Rows: number;
  v4Ranges: number;
  v6Ranges: number;
  orgs: number;
  /** Source rows that overlapped another row and were clipped. */
  overlappingRows: number;
}

const DIGITS = /^\d{1,39}$/;
const V4_MAX = 0xffffffff;
const V6_MAX = (1n << 128n) - 1n;

/** Splits a CSV line `start,end,asn,org` (org may be quoted with "" escapes). */
function splitLine(line: string, where: () => string): [string, string, string, string] {
  const c1 = line.indexOf(',');
  const c2 = line.indexOf(',', c1 + 1);
  const c3 = line.indexOf(',', c2 + 1);
  if (c1 < 0 || c2 < 0 || c3 < 0) throw new Error(`${where()}: expected start,end,asn,org`);
  let org = line.slice(c3 + 1);
  if (org.startsWith('"')) {
    if (org.length < 2 || !org.endsWith('"')) throw new Error(`${where()}: unterminated quoted org name`);
    org = org.slice(1, -1);
    if (/"(?!")/.test(org.replace(/""/g, ''))) throw new Error(`${where()}: stray quote in org name`);
    org = org.replace(/""/g, '"');
  }
  return [line.slice(0, c1), line.slice(c1 + 1, c2), line.slice(c2 + 1, c3), org];
}

/** Parses one CSV into rows (in file order), recording the first org name of each ASN. */
function parseCsv<K extends number | bigint>(
  text: string,
  name: string,
  toAddr: (field: string) => K | null,
  width: (start: K, endx: K) => K,
  inc: (end: K) => K,
  orgs: Map<number, string>,
): Row<K>[] {
  const rows: Row<K>[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i] as string;
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line === '') continue;
    const where = (): string => `${name}:${i + 1}`;
    const [s, e, a, org] = splitLine(line, where);
    const start = toAddr(s);
    const end = toAddr(e);
    if (start === null || end === null || end < start) throw new Error(`${where()}: bad address range "${s}" .. "${e}"`);
    if (!/^\d{1,10}$/.test(a) || Number(a) > V4_MAX) throw new Error(`${where()}: bad ASN "${a}"`);
    const asn = Number(a);
    if (asn === 0) continue; // AS0 means "not routed"
    if (!orgs.has(asn)) orgs.set(asn, org);
    const endx = inc(end);
    rows.push({ start, endx, width: width(start, endx), asn, seq: rows.length });
  }
  return rows;
}

/** Min-heap of rows by (width, seq): the top is the range that wins an overlap. */
class NarrowestFirst<K extends number | bigint> {
  private readonly a: Row<K>[] = [];
  private less(x: Row<K>, y: Row<K>): boolean {
    return x.width < y.width || (x.width === y.width && x.seq < y.seq);
  }
  get top(): Row<K> | undefined {
    return this.a[0];
  }
  push(r: Row<K>): void {
    const a = this.a;
    let i = a.push(r) - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(a[i] as Row<K>, a[p] as Row<K>)) break;
      [a[i], a[p]] = [a[p] as Row<K>, a[i] as Row<K>];
      i = p;
    }
  }
  pop(): void {
    const a = this.a;
    const last = a.pop() as Row<K>;
    if (a.length === 0) return;
    a[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && this.less(a[l] as Row<K>, a[m] as Row<K>)) m = l;
      if (r < a.length && this.less(a[r] as Row<K>, a[m] as Row<K>)) m = r;
      if (m === i) return;
      [a[i], a[m]] = [a[m] as Row<K>, a[i] as Row<K>];
      i = m;
    }
  }
}

/** Turns possibly overlapping rows into sorted, disjoint, merged pieces. */
function resolveRanges<K extends number | bigint>(rows: Row<K>[]): { pieces: Piece<K>[]; overlapping: number } {
  let sorted = true;
  for (let i = 1; i < rows.length && sorted; i++) sorted = (rows[i - 1] as Row<K>).start <= (rows[i] as Row<K>).start;
  if (!sorted) rows.sort((x, y) => (x.start < y.start ? -1 : x.start > y.start ? 1 : x.seq - y.seq));

  const pieces: Piece<K>[] = [];
  const emit = (start: K, endx: K, asn: number): void => {
    const prev = pieces[pieces.length - 1];
    if (prev && prev.endx === start && prev.asn === asn) prev.endx = endx;
    else pieces.push({ start, endx, asn });
  };

  let overlapping = 0;
  for (let i = 0; i < rows.length; ) {
    // A cluster is a run of rows that overlap (transitively); most clusters are one row.
    let j = i + 1;
    let maxEnd = (rows[i] as Row<K>).endx;
    while (j < rows.length && (rows[j] as Row<K>).start < maxEnd) {
      if ((rows[j] as Row<K>).endx > maxEnd) maxEnd = (rows[j] as Row<K>).endx;
      j++;
    }
    if (j === i + 1) {
      const r = rows[i] as Row<K>;
      emit(r.start, r.endx, r.asn);
    } else {
      overlapping += j - i;
      sweepCluster(rows.slice(i, j), emit);
    }
    i = j;
  }
  return { pieces, overlapping };
}

/** Sweeps the boundaries of one cluster; between two boundaries the narrowest covering row wins. */
function sweepCluster<K extends number | bigint>(cluster: Row<K>[], emit: (s: K, e: K, asn: number) => void): void {
  const points = [...new Set<K>(cluster.flatMap((r) => [r.start, r.endx]))].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  const heap = new NarrowestFirst<K>();
  let next = 0;
  for (let k = 0; k + 1 < points.length; k++) {
    const p = points[k] as K;
    while (next < cluster.length && (cluster[next] as Row<K>).start === p) heap.push(cluster[next++] as Row<K>);
    while (heap.top && heap.top.endx <= p) heap.pop();
    if (heap.top) emit(p, points[k + 1] as K, heap.top.asn);
  }
}

function v4Addr(field: string): number | null {
  if (!/^\d{1,10}$/.test(field)) return null;
  const n = Number(field);
  return n <= V4_MAX ? n : null;
}

function v6Addr(field: string): bigint | null {
  if (!DIGITS.test(field)) return null;
  const n = BigInt(field);
  return n <= V6_MAX ? n : null;
}

/** Builds the table and reports what went into it. */
export function compileAsnTable(v4csv: string, v6csv: string): { bytes: Uint8Array; stats: AsnBuildStats } {
  const orgNames = new Map<number, string>();
  const v4Rows = parseCsv<number>(v4csv, V4_FILE, v4Addr, (s, e) => e - s, (e) => e + 1, orgNames);
  const v6Rows = parseCsv<bigint>(v6csv, V6_FILE, v6Addr, (s, e) => e - s, (e) => e + 1n, orgNames);
  const v4 = resolveRanges(v4Rows);
  const v6 = resolveRanges(v6Rows);

  const asns = [...orgNames.keys()].sort((a, b) => a - b);
  const orgIndex = new Map(asns.map((asn, i) => [asn, i]));
  const idx = (asn: number): number => orgIndex.get(asn) as number;

  const v4n = v4.pieces.length;
  const v4Start = new Uint32Array(v4n);
  const v4End = new Uint32Array(v4n);
  const v4Org = new Uint32Array(v4n);
  v4.pieces.forEach((p, i) => {
    v4Start[i] = p.start;
    v4End[i] = p.endx - 1;
    v4Org[i] = idx(p.asn);
  });

  const v6n = v6.pieces.length;
  const v6Start = new Uint32Array(4 * v6n);
  const v6End = new Uint32Array(4 * v6n);
  const v6Org = new Uint32Array(v6n);
  const words = (x: bigint, out: Uint32Array, at: number): void => {
    for (let k = 0; k < 4; k++) out[at + k] = Number((x >> BigInt(96 - 32 * k)) & 0xffffffffn);
  };
  v6.pieces.forEach((p, i) => {
    words(p.start, v6Start, 4 * i);
    words(p.endx - 1n, v6End, 4 * i);
    v6Org[i] = idx(p.asn);
  });

  const bytes = encodeAsnTable({
    v4: { starts: v4Start, ends: v4End, org: v4Org },
    v6: { starts: v6Start, ends: v6End, org: v6Org },
    orgs: { asn: asns, name: asns.map((a) => orgNames.get(a) as string) },
  });
  return {
    bytes,
    stats: {
      v4Rows: v4Rows.length,
      v6Rows: v6Rows.length,
      v4Ranges: v4n,
      v6Ranges: v6n,
      orgs: asns.length,
      overlappingRows: v4.overlapping + v6.overlapping,
    },
  };
}

/** Bytes of asn.bin built from the two CSV texts. */
export function buildAsnTable(v4csv: string, v6csv: string): Uint8Array {
  return compileAsnTable(v4csv, v6csv).bytes;
}

/** Directory of the installed @ip-location-db/asn package. */
export function asnSourceDir(): string {
  return dirname(createRequire(import.meta.url).resolve(`${SOURCE_PACKAGE}/package.json`));
}

export const DEFAULT_OUT_DIR = fileURLToPath(new URL('../data/generated/', import.meta.url));

/**
 * Writes asn.bin and asn.meta.json into `outDir`. With `ifMissing`, does nothing when both
 * exist and are newer than the source CSVs. Returns what it did, as one line.
 */
export function writeAsnFiles(outDir: string, opts: { ifMissing?: boolean } = {}): { built: boolean; message: string } {
  const srcDir = asnSourceDir();
  const v4Path = join(srcDir, V4_FILE);
  const v6Path = join(srcDir, V6_FILE);
  const binPath = join(outDir, 'asn.bin');
  const metaPath = join(outDir, 'asn.meta.json');

  if (opts.ifMissing && existsSync(binPath) && existsSync(metaPath)) {
    const sourceTime = Math.max(statSync(v4Path).mtimeMs, statSync(v6Path).mtimeMs);
    if (statSync(binPath).mtimeMs >= sourceTime) return { built: false, message: `asn table: ${binPath} is up to date` };
  }

  const t0 = performance.now();
  const pkg = JSON.parse(readFileSync(join(srcDir, 'package.json'), 'utf8')) as { name: string; version: string };
  const { bytes, stats } = compileAsnTable(readFileSync(v4Path, 'utf8'), readFileSync(v6Path, 'utf8'));
  AsnTable.fromBytes(bytes); // never publish a file the reader would reject

  mkdirSync(outDir, { recursive: true });
  // Write-then-rename so a concurrently starting server never reads half a file.
  writeFileSync(`${binPath}.tmp`, bytes);
  renameSync(`${binPath}.tmp`, binPath);
  const meta = {
    source: { package: pkg.name, version: pkg.version },
    built_at: new Date().toISOString(),
    format_version: 1,
    v4_ranges: stats.v4Ranges,
    v6_ranges: stats.v6Ranges,
    orgs: stats.orgs,
    source_rows: { v4: stats.v4Rows, v6: stats.v6Rows, overlapping: stats.overlappingRows },
    bytes: bytes.byteLength,
  };
  writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);
  const ms = Math.round(performance.now() - t0);
  return {
    built: true,
    message:
      `asn table: wrote ${binPath} (${(bytes.byteLength / 1048576).toFixed(1)} MB: ${stats.v4Ranges} IPv4 + ${stats.v6Ranges} IPv6 ranges, ` +
      `${stats.orgs} ASNs, ${stats.overlappingRows} overlapping rows resolved) from ${pkg.name}@${pkg.version} in ${ms} ms`,
  };
}

function main(argv: string[]): void {
  let ifMissing = false;
  let outDir = DEFAULT_OUT_DIR;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--if-missing') ifMissing = true;
    else if (a === '--out' && argv[i + 1]) outDir = resolve(argv[++i] as string);
    else throw new Error(`build-asn: unknown argument "${a}" (usage: build-asn.ts [--if-missing] [--out DIR])`);
  }
  console.log(writeAsnFiles(outDir, { ifMissing }).message);
}

const invokedAs = process.argv[1];
if (invokedAs && import.meta.url === pathToFileURL(realpathSync(invokedAs)).href) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    console.error(`build-asn: ${(e as Error).message}`);
    process.exitCode = 1;
  }
}
