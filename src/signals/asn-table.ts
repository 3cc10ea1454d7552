// IP range -> ASN table, held as typed arrays and searched by binary search.
//
// File format of data/generated/asn.bin (written by tools/build-asn.ts, version 1).
// Every integer is a little-endian uint32; every section starts on a 4-byte boundary.
//
//   header (32 bytes)
//     0  magic 0x4e534149 ("IASN")
//     4  format version (1)
//     8  v4Count   IPv4 ranges
//     12 v6Count   IPv6 ranges
//     16 orgCount  distinct ASNs (one org name each)
//     20 strBytes  length of the UTF-8 org-name blob
//     24 checksum  FNV-1a style hash of every uint32 word after the header
//     28 reserved  (0)
//   v4Start  u32[v4Count]       range starts, ascending, ranges disjoint
//   v4End    u32[v4Count]       inclusive ends
//   v4Org    u32[v4Count]       index into the org table
//   v6Start  u32[4 * v6Count]   4 words per address, most significant word first
//   v6End    u32[4 * v6Count]   inclusive ends, same layout
//   v6Org    u32[v6Count]
//   orgAsn   u32[orgCount]      ASN numbers, ascending (org index -> ASN)
//   orgOff   u32[orgCount + 1]  byte offsets of each org name in the blob
//   strings  u8[strBytes]       UTF-8 org names, zero-padded to a multiple of 4
import type { ParsedIp } from './ip-address.ts';
import { cmp128, lastStartV4, lastStartV6 } from './ip-intervals.ts';

export interface AsnHit {
  readonly asn: number;
  readonly org: string;
}

/** Plain arrays describing a table; the builder fills this and `encodeAsnTable` lays it out. */
export interface AsnTableInput {
  v4: { starts: ArrayLike<number>; ends: ArrayLike<number>; org: ArrayLike<number> };
  /** starts/ends hold 4 words per range (most significant first). */
  v6: { starts: ArrayLike<number>; ends: ArrayLike<number>; org: ArrayLike<number> };
  orgs: { asn: ArrayLike<number>; name: readonly string[] };
}

const MAGIC = 0x4e534149;
const VERSION = 1;
const HEADER_WORDS = 8;

/** Hash of a word array; detects truncation/bit rot, not tampering. */
export function asnTableChecksum(words: Uint32Array, from: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < words.length; i++) h = Math.imul(h ^ (words[i] as number), 0x01000193);
  return h >>> 0;
}

export function encodeAsnTable(input: AsnTableInput): Uint8Array {
  const v4n = input.v4.org.length;
  const v6n = input.v6.org.length;
  const orgn = input.orgs.asn.length;
  const enc = new TextEncoder();
  const names = input.orgs.name.map((s) => enc.encode(s));
  let strBytes = 0;
  for (const b of names) strBytes += b.length;
  const words = HEADER_WORDS + 3 * v4n + 9 * v6n + 2 * orgn + 1 + Math.ceil(strBytes / 4);
  const buf = new ArrayBuffer(words * 4);
  const u32 = new Uint32Array(buf);
  const u8 = new Uint8Array(buf);
  u32.set([MAGIC, VERSION, v4n, v6n, orgn, strBytes, 0, 0]);
  let w = HEADER_WORDS;
  for (const a of [input.v4.starts, input.v4.ends, input.v4.org, input.v6.starts, input.v6.ends, input.v6.org, input.orgs.asn]) {
    u32.set(a, w);
    w += a.length;
  }
  let off = 0;
  const strBase = (w + orgn + 1) * 4;
  for (let i = 0; i < orgn; i++) {
    u32[w + i] = off;
    u8.set(names[i] as Uint8Array, strBase + off);
    off += (names[i] as Uint8Array).length;
  }
  u32[w + orgn] = off;
  u32[6] = asnTableChecksum(u32, HEADER_WORDS);
  return u8;
}

function corrupt(why: string): Error {
  return new Error(`ASN table is corrupt or truncated: ${why} (rebuild it with \`npm run build:data\`)`);
}

export class AsnTable {
  readonly v4Ranges: number;
  readonly v6Ranges: number;
  readonly asnCount: number;
  private readonly v4Start: Uint32Array;
  private readonly v4End: Uint32Array;
  private readonly v4Org: Uint32Array;
  private readonly v6Start: Uint32Array;
  private readonly v6End: Uint32Array;
  private readonly v6Org: Uint32Array;
  private readonly orgAsn: Uint32Array;
  private readonly orgOff: Uint32Array;
  private readonly strings: Uint8Array;
  // One shared result object per ASN, created on first hit, so lookups do not allocate.
  private readonly hits: (AsnHit | undefined)[];
  private readonly decoder = new TextDecoder();

  private constructor(words: Uint32Array, bytes: Uint8Array) {
    const v4n = words[2] as number;
    const v6n = words[3] as number;
    const orgn = words[4] as number;
    let w = HEADER_WORDS;
    const take = (n: number): Uint32Array => {
      const a = words.subarray(w, w + n);
      w += n;
      return a;
    };
    this.v4Start = take(v4n);
    this.v4End = take(v4n);
    this.v4Org = take(v4n);
    this.v6Start = take(4 * v6n);
    this.v6End = take(4 * v6n);
    this.v6Org = take(v6n);
    this.orgAsn = take(orgn);
    this.orgOff = take(orgn + 1);
    this.strings = bytes.subarray(w * 4, w * 4 + (words[5] as number));
    this.v4Ranges = v4n;
    this.v6Ranges = v6n;
    this.asnCount = orgn;
    this.hits = new Array<AsnHit | undefined>(orgn);
  }

  /** Opens a table from the bytes of asn.bin; throws a descriptive Error if they are not a valid table. */
  static fromBytes(bytes: Uint8Array): AsnTable {
    if (bytes.byteLength < HEADER_WORDS * 4) throw corrupt(`${bytes.byteLength} bytes is shorter than the header`);
    // Uint32Array views need 4-byte alignment; Buffers from small reads may be pool slices.
    const aligned = bytes.byteOffset % 4 === 0 && bytes.byteLength % 4 === 0 ? bytes : bytes.slice();
    if (aligned.byteLength % 4 !== 0) throw corrupt(`length ${bytes.byteLength} is not a multiple of 4`);
    const words = new Uint32Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 4);
    if (words[0] !== MAGIC) throw corrupt('bad magic number (not an asn.bin file)');
    if (words[1] !== VERSION) throw corrupt(`format version ${words[1]}, this build reads version ${VERSION}`);
    const v4n = words[2] as number;
    const v6n = words[3] as number;
    const orgn = words[4] as number;
    const strBytes = words[5] as number;
    const expected = HEADER_WORDS + 3 * v4n + 9 * v6n + 2 * orgn + 1 + Math.ceil(strBytes / 4);
    if (words.length !== expected) throw corrupt(`size is ${words.length * 4} bytes, header promises ${expected * 4}`);
    if (asnTableChecksum(words, HEADER_WORDS) !== words[6]) throw corrupt('checksum mismatch');
    const table = new AsnTable(words, aligned);
    table.validate();
    return table;
  }

  // Structural checks, so even a file with a matching checksum cannot make lookups misbehave.
  private validate(): void {
    const { v4Start, v4End, v4Org, v6Start, v6End, v6Org, orgAsn, orgOff, asnCount } = this;
    for (let i = 0; i < this.v4Ranges; i++) {
      const s = v4Start[i] as number;
      const e = v4End[i] as number;
      if (s > e || (i > 0 && s <= (v4End[i - 1] as number))) throw corrupt(`IPv4 range ${i} is out of order`);
      if ((v4Org[i] as number) >= asnCount) throw corrupt(`IPv4 range ${i} points past the org table`);
    }
    for (let i = 0; i < this.v6Ranges; i++) {
      if (cmp128(v6Start, 4 * i, v6End, 4 * i) > 0 || (i > 0 && cmp128(v6Start, 4 * i, v6End, 4 * i - 4) <= 0)) {
        throw corrupt(`IPv6 range ${i} is out of order`);
      }
      if ((v6Org[i] as number) >= asnCount) throw corrupt(`IPv6 range ${i} points past the org table`);
    }
    for (let i = 0; i < asnCount; i++) {
      if (i > 0 && (orgAsn[i] as number) <= (orgAsn[i - 1] as number)) throw corrupt(`ASN ${orgAsn[i]} is out of order`);
      if ((orgOff[i + 1] as number) < (orgOff[i] as number)) throw corrupt(`org name ${i} has a negative length`);
    }
    if (orgOff[0] !== 0 || orgOff[asnCount] !== this.strings.length) throw corrupt('org name offsets do not span the name blob');
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(this.strings);
    } catch {
      throw corrupt('org names are not valid UTF-8');
    }
  }

  lookup(ip: ParsedIp): AsnHit | null {
    const i = ip.v === 4 ? this.findV4(ip.n) : this.findV6(ip.w);
    if (i < 0) return null;
    const org = ip.v === 4 ? (this.v4Org[i] as number) : (this.v6Org[i] as number);
    return this.hits[org] ?? this.makeHit(org);
  }

  /** Org name the table holds for an ASN (not per lookup; for checks and tooling). */
  orgOf(asn: number): string | undefined {
    const a = this.orgAsn;
    let lo = 0;
    let hi = a.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = a[mid] as number;
      if (v === asn) return (this.hits[mid] ?? this.makeHit(mid)).org;
      if (v < asn) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  private makeHit(org: number): AsnHit {
    const name = this.decoder.decode(this.strings.subarray(this.orgOff[org], this.orgOff[org + 1]));
    const hit: AsnHit = Object.freeze({ asn: this.orgAsn[org] as number, org: name });
    this.hits[org] = hit;
    return hit;
  }

  /** Index of the range holding n, or -1. */
  private findV4(n: number): number {
    const i = lastStartV4(this.v4Start, 0, this.v4Start.length, n);
    return i >= 0 && n <= (this.v4End[i] as number) ? i : -1;
  }

  private findV6(w: Uint32Array): number {
    const i = lastStartV6(this.v6Start, 0, 4, this.v6Ranges, w);
    return i >= 0 && cmp128(w, 0, this.v6End, 4 * i) <= 0 ? i : -1;
  }
}

