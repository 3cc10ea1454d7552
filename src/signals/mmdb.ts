// Opening MaxMind DB files (GeoIP2/GeoLite2 Country, ASN, Anonymous-IP, or compatible)
// from bytes, with a check that they decode and carry the fields we read.
import { LRUCache } from 'lru-cache';
import { Reader, type Response } from 'maxmind';
import type { ParsedIp } from './ip-address.ts';

/**
 * Records remembered per database and lookup thread (MmdbTree, by pointer, least recently
 * used out first): many networks share one record (a country, an ASN).
 */
const MMDB_RECORDS_KEPT = 10_000;

// Well-known public resolvers' addresses, used to probe that a database decodes.
const PROBE_IPS = ['8.8.8.8', '1.1.1.1', '9.9.9.9', '2001:4860:4860::8888'];

/**
 * Opens an MMDB from bytes, checking that it decodes and (when a probe address is found)
 * that its records carry `field`; throws an Error naming `label` otherwise.
 */
export function openMmdb<T extends Response>(bytes: Uint8Array, label: string, field?: (rec: T) => unknown): Reader<T> {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let reader: Reader<T>;
  const found: T[] = [];
  try {
    // No decoder cache: the lookup path keeps what it reads of each record (MmdbTree), and
    // verifyMmdb decodes each record once.
    reader = new Reader<T>(buf);
    const md = reader.metadata;
    if (md.binaryFormatMajorVersion !== 2 || (md.ipVersion !== 4 && md.ipVersion !== 6) || !(md.nodeCount > 0)) {
      throw new Error(`unsupported metadata (format ${md.binaryFormatMajorVersion}, ip version ${md.ipVersion})`);
    }
    if (buf.length < md.searchTreeSize + 16) throw new Error('file is shorter than its search tree');
    for (const ip of PROBE_IPS) {
      if (md.ipVersion === 4 && ip.includes(':')) continue;
      const rec = reader.get(ip);
      if (rec !== null) found.push(rec);
    }
  } catch (e) {
    throw new Error(`${label}: not a readable MaxMind DB file (${(e as Error).message})`);
  }
  if (field && found.length > 0 && found.every((r) => field(r) === undefined)) {
    throw new Error(`${label}: records lack the expected fields (database type "${reader.metadata.databaseType}")`);
  }
  return reader;
}

const METADATA_MARKER = Buffer.from('\xab\xcd\xefMaxMind.com', 'latin1');

/**
 * Verifies a whole MMDB the way libmaxmind's verifier does, beyond what opening it and a few
 * probe lookups show: the 16 zero bytes between the search tree and the data section, every
 * record of every tree node (another node, "not found", or a pointer inside the data
 * section), and every data record a pointer names decodes to a map. Throws an Error naming
 * `label` at the first fault. Run once per file on the main thread, before a load or a
 * reload is accepted, so a subtly corrupt file never reaches a lookup; costs a tree walk and
 * one decode per distinct record (milliseconds for country and ASN databases).
 */
export function verifyMmdb(reader: Reader<Response>, bytes: Uint8Array, label: string): void {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const { nodeCount, recordSize, searchTreeSize } = reader.metadata;
  const fail = (what: string): never => {
    throw new Error(`${label}: corrupt MaxMind DB file (${what})`);
  };
  if (recordSize !== 24 && recordSize !== 28 && recordSize !== 32) fail(`record size ${recordSize}`);
  const dataStart = searchTreeSize + 16;
  const dataEnd = buf.lastIndexOf(METADATA_MARKER);
  if (dataEnd < dataStart) fail('the data section overlaps the search tree or the metadata');
  for (let i = searchTreeSize; i < dataStart; i++) if (buf[i] !== 0) fail('no data section separator after the search tree');
  const nodeBytes = recordSize / 4;
  const left = recordSize === 24 ? (o: number) => buf.readUIntBE(o, 3) : recordSize === 28 ? (o: number) => ((buf[o + 3]! & 0xf0) << 20) | buf.readUIntBE(o, 3) : (o: number) => buf.readUInt32BE(o);
  const right = recordSize === 24 ? (o: number) => buf.readUIntBE(o + 3, 3) : recordSize === 28 ? (o: number) => ((buf[o + 3]! & 0x0f) << 24) | buf.readUIntBE(o + 4, 3) : (o: number) => buf.readUInt32BE(o + 4);
  const pointers = new Set<number>();
  const check = (node: number, v: number) => {
    if (v <= nodeCount) return; // another node, or "not found"
    const at = v - nodeCount + searchTreeSize;
    if (at < dataStart || at >= dataEnd) fail(`node ${node} points outside the data section`);
    pointers.add(v);
  };
  for (let n = 0; n < nodeCount; n++) {
    const o = n * nodeBytes;
    check(n, left(o));
    check(n, right(o));
  }
  // The reader's own decoder, as lookups use it (the method is private in its types only).
  const resolve = (reader as unknown as { resolveDataPointer(p: number): unknown }).resolveDataPointer.bind(reader);
  for (const p of pointers) {
    let rec: unknown;
    try {
      rec = resolve(p);
    } catch (e) {
      fail(`the data record at ${p - nodeCount - 16} does not decode: ${(e as Error).message}`);
    }
    if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) fail(`the data record at ${p - nodeCount - 16} is not a map`);
  }
}

/**
 * A reader's search tree walked from a parsed address: no address string to format and for
 * maxmind to parse again per lookup, and the derived value of each record (a country code,
 * an ASN) remembered by the record's pointer, so the lookup path of a new address costs the
 * walk. What it finds is what `reader.get` finds (test/signals/mmdb-tree.test.ts compares
 * them on random addresses, 24-, 28- and 32-bit records, IPv4 and IPv6 trees).
 */
export class MmdbTree<T extends Response, V> {
  private readonly db: Buffer;
  private readonly nodeCount: number;
  private readonly nodeBytes: number;
  private readonly recordSize: number;
  private readonly ipv4Start: number;
  private readonly v4Only: boolean;
  /** Derived values by record pointer (the one cache of decoded records). */
  private readonly memo = new LRUCache<number, { v: V }>({ max: MMDB_RECORDS_KEPT });

  /**
   * `derive` makes the value the lookup path wants from a record (called once per record
   * met, while it stays among the MMDB_RECORDS_KEPT); `none` is the value for an address no network holds.
   */
  constructor(
    readonly reader: Reader<T>,
    private readonly derive: (rec: T) => V,
    private readonly none: V,
  ) {
    // mmdb-lib's own fields (private in its types only); checked, so an upgrade that renames
    // them fails at load, not per lookup.
    const internal = reader as unknown as { db?: unknown; ipv4StartNodeNumber?: unknown; resolveDataPointer?: unknown };
    if (!Buffer.isBuffer(internal.db) || typeof internal.ipv4StartNodeNumber !== 'number' || typeof internal.resolveDataPointer !== 'function') {
      throw new Error('maxmind Reader without db, ipv4StartNodeNumber or resolveDataPointer: the MMDB tree walk needs mmdb-lib 2.x or 3.x');
    }
    const md = reader.metadata;
    this.db = internal.db;
    this.nodeCount = md.nodeCount;
    this.nodeBytes = md.nodeByteSize;
    this.recordSize = md.recordSize;
    this.ipv4Start = internal.ipv4StartNodeNumber;
    this.v4Only = md.ipVersion === 4;
    if (this.recordSize !== 24 && this.recordSize !== 28 && this.recordSize !== 32) throw new Error(`unsupported MMDB record size ${this.recordSize}`);
  }

  /** The data pointer of the network that holds `ip` (0: none, or an IPv6 address asked of an IPv4 database). */
  pointer(ip: ParsedIp): number {
    const n = this.nodeCount;
    let node: number;
    if (ip.v === 4) {
      node = this.ipv4Start;
      const a = ip.n;
      for (let d = 0; d < 32 && node < n; d++) node = this.child(node, (a >>> (31 - d)) & 1);
    } else {
      if (this.v4Only) return 0;
      node = 0;
      const w = ip.w;
      for (let d = 0; d < 128 && node < n; d++) node = this.child(node, (w[d >>> 5]! >>> (31 - (d & 31))) & 1);
    }
    return node > n ? node : 0;
  }

  private child(node: number, right: number): number {
    const db = this.db;
    const o = node * this.nodeBytes;
    switch (this.recordSize) {
      case 24:
        return right === 0 ? (db[o]! << 16) | (db[o + 1]! << 8) | db[o + 2]! : (db[o + 3]! << 16) | (db[o + 4]! << 8) | db[o + 5]!;
      case 28:
        return right === 0
          ? ((db[o + 3]! & 0xf0) << 20) | (db[o]! << 16) | (db[o + 1]! << 8) | db[o + 2]!
          : ((db[o + 3]! & 0x0f) << 24) | (db[o + 4]! << 16) | (db[o + 5]! << 8) | db[o + 6]!;
      default:
        return right === 0 ? db.readUInt32BE(o) : db.readUInt32BE(o + 4);
    }
  }

  /** The derived value for `ip` (`none` when no network holds it, or its record does not decode). */
  get(ip: ParsedIp): V {
    const p = this.pointer(ip);
    if (p === 0) return this.none;
    const known = this.memo.get(p);
    if (known !== undefined) return known.v;
    let v: V;
    // Files are verified whole before use (verifyMmdb); this is the last line, so that a
    // fault the verifier did not foresee costs one signal, never the lookup.
    try {
      v = this.derive((this.reader as unknown as { resolveDataPointer(p: number): T }).resolveDataPointer(p));
    } catch {
      return this.none;
    }
    this.memo.set(p, { v });
    return v;
  }
}
