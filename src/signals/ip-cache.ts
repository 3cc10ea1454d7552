// The lookup path's IP verdicts, shared by every lookup thread: a fixed-size table keyed
// by a hash of the whole address (IPv4-mapped IPv6 as IPv4), holding the ASN, country and
// flags that IpIntel computed. Entries carry the data generation they were computed from,
// so after a reload an old verdict is never served.
import { HASH, hashWords } from '../memory/hash.ts';
import { SharedTable, type SharedTableMemory } from '../memory/shared-table.ts';
import type { IpScratch } from './ip-address.ts';
import { asParsed } from './ip-address.ts';
import type { IpIntel, IpVerdict } from './ip-intel.ts';

// Slot: 0-1 key, 2 ASN, 3 country and flags, 4 data generation and the second-chance bit.
const ASN = 2, FLAGS = 3, GEN = 4, SLOT_WORDS = 6;
const REF = 0x80000000;
const GEN_MASK = 0x3fffffff;
const BOGON = 1 << 10, HOSTING = 1 << 11, VPN = 1 << 12, PROXY = 1 << 13, TOR = 1 << 14, RELAY = 1 << 15, CRAWLER = 1 << 16;

export interface IpCacheMemory {
  readonly table: SharedTableMemory;
  readonly seed: number;
}

export function allocateIpCache(bytes: number, seed: number): IpCacheMemory {
  return { table: SharedTable.allocate(bytes, SLOT_WORDS), seed };
}

/** Two letters A-Z as 1..676; 0 for none. */
function packCountry(cc: string): number {
  if (cc.length !== 2) return 0;
  const a = cc.charCodeAt(0) - 65, b = cc.charCodeAt(1) - 65;
  return a >= 0 && a < 26 && b >= 0 && b < 26 ? a * 26 + b + 1 : 0;
}

const COUNTRIES: string[] = [''];
for (let a = 0; a < 26; a++) for (let b = 0; b < 26; b++) COUNTRIES.push(String.fromCharCode(65 + a, 65 + b));

export class IpCache {
  private readonly table: SharedTable;
  private readonly seed: number;
  hits = 0;
  misses = 0;
  private gen = 0;
  private readonly keepFn = (base: number): number => this.keepScore(base);

  constructor(readonly memory: IpCacheMemory) {
    this.table = new SharedTable(memory.table);
    this.seed = memory.seed;
  }

  static create(bytes = 1 << 20): IpCache {
    return new IpCache(allocateIpCache(bytes, 0x1d5eed));
  }

  get capacity(): number {
    return this.table.capacity;
  }

  get bytes(): number {
    return this.table.bytes;
  }

  count(): number {
    return this.table.count();
  }

  /** Share of slots in use (sampled; metrics). */
  occupancy(): number {
    return this.table.occupancy();
  }

  /**
   * The verdict on a parsed address under data generation `gen` (IpIntel `intel` is that
   * generation's data) into `out`.
   */
  verdict(ip: IpScratch, intel: IpIntel, gen: number, out: IpVerdict): IpVerdict {
    if (ip.v === 4) hashWords(4, ip.n, 0, 0, 0, this.seed);
    else hashWords(6, ip.w[0]!, ip.w[1]!, ip.w[2]!, ip.w[3]!, this.seed);
    const hi = HASH[0]!, lo = HASH[1]!;
    const g = gen & GEN_MASK;
    this.gen = g;
    const t = this.table;
    const u = t.u32;
    const b = t.bucketOf(hi);
    // A bucket whose lock stays taken (its holder preempted) counts as a miss and stores nothing.
    if (t.lock(b)) {
      const base = t.find(b, hi, lo);
      if (base >= 0 && (u[base + GEN]! & GEN_MASK) === g) {
        const f = u[base + FLAGS]!;
        out.asn = u[base + ASN]!;
        out.country = COUNTRIES[f & 0x3ff] ?? '';
        out.bogon = (f & BOGON) !== 0;
        out.hosting = (f & HOSTING) !== 0;
        out.vpn = (f & VPN) !== 0;
        out.proxy = (f & PROXY) !== 0;
        out.tor = (f & TOR) !== 0;
        out.relay = (f & RELAY) !== 0;
        out.crawler = (f & CRAWLER) !== 0;
        const s = u[base + GEN]!;
        if ((s & REF) === 0) u[base + GEN] = (s | REF) >>> 0;
        t.unlock(b);
        this.hits++;
        return out;
      }
      t.unlock(b);
    }
    this.misses++;
    intel.verdict(asParsed(ip), out);
    if (t.lock(b)) {
      let base = t.find(b, hi, lo);
      if (base < 0) base = t.claim(b, hi, lo, this.keepFn);
      u[base + ASN] = out.asn;
      u[base + FLAGS] =
        packCountry(out.country) |
        (out.bogon ? BOGON : 0) |
        (out.hosting ? HOSTING : 0) |
        (out.vpn ? VPN : 0) |
        (out.proxy ? PROXY : 0) |
        (out.tor ? TOR : 0) |
        (out.relay ? RELAY : 0) |
        (out.crawler ? CRAWLER : 0);
      u[base + GEN] = g;
      t.unlock(b);
    }
    return out;
  }

  /** Second chance for slots read since the last claim in their bucket; stale generations go first. */
  private keepScore(base: number): number {
    const u = this.table.u32;
    const s = u[base + GEN]!;
    if ((s & GEN_MASK) !== this.gen) return 0;
    if ((s & REF) === 0) return 1;
    u[base + GEN] = (s & ~REF) >>> 0;
    return 2;
  }
}
