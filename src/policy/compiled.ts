// A customer's policy compiled for the lookup path: built once by the main thread into one
// SharedArrayBuffer, which every lookup thread (and the main thread's explain engine)
// reads in place; an update builds a new buffer and swaps the reference, so nothing is
// copied per thread and no lookup sees half a policy. Every lookup is constant-time or
// logarithmic in the list's size:
//   IP and CIDR entries   sorted, disjoint address ranges, binary search (IPv4 and IPv6
//                         tables); overlapping blocks are split so the most specific one
//                         decides (CIDR blocks nest or are disjoint), deny on a tie
//   ua, app, domain,      one open-addressed hash set of seeded 64-bit hashes (no strings),
//   publisher, seller     a domain also matches its subdomains
//   ua_substring          one Aho-Corasick automaton (substrings.ts)
// Across kinds, a deny match wins over an allow match.
import { HASH, fmix32, hashAdd, hashAddLower, hashAddNumber, hashBegin, hashEnd, hashId, randomSeed } from '../memory/hash.ts';
import { hashUa } from '../signals/ua-cache.ts';
import type { IpScratch } from '../signals/ip-address.ts';
import { cmp128, lastStartV4, lastStartV6 } from '../signals/ip-intervals.ts';
import type { SupplyChain } from '../signals/schain.ts';
import { effectiveThresholds, ipToBigInt, PolicyError, type EntryKind, type Policy } from './model.ts';
import { buildAutomaton, scanSubstrings } from './substrings.ts';

const MAGIC = 0x504f4c33; // "POL3"
const HEADER_WORDS = 18;
const H = {
  magic: 0, medium: 1, high: 2, v4Count: 3, v4At: 4, v6Count: 5, v6At: 6, hashCap: 7, hashAt: 8,
  acAt: 9, kinds: 10, seed: 11, uaSeed: 12, entries: 13, ssai4Count: 14, ssai4At: 15, ssai6Count: 16, ssai6At: 17,
} as const;

export const ALLOW = 1;
export const DENY = 2;

// Kind tags: mixed into each value's hash (one set holds every kind) and bits of H.kinds.
const T_IP = 1, T_UA = 2, T_SUB = 3, T_APP = 4, T_DOMAIN = 5, T_PUB = 6, T_SELLER = 7, T_SSAI = 8;
const TAG: Readonly<Record<EntryKind, number>> = { ip: T_IP, ua: T_UA, ua_substring: T_SUB, app: T_APP, domain: T_DOMAIN, publisher: T_PUB, seller: T_SELLER, ssai: T_SSAI };

// The 64-bit key of a value, into HASH[0], HASH[1] (src/memory/hash.ts): its kind's tag, then
// its characters, in one pass, no allocation (a domain's suffixes and folded names are
// hashed in place).

/** Key of a value of one kind (domains folded to lowercase). */
function keyOf(tag: number, s: string, from: number, seed: number): void {
  hashBegin(seed);
  hashAddNumber(tag);
  if (tag === T_DOMAIN) hashAddLower(s, from);
  else hashAdd(s, from);
  hashEnd();
}

/** A seller's key: its asi (folded to lowercase), a part boundary, its sid. */
function keyOfSeller(asi: string, sid: string, seed: number): void {
  hashBegin(seed);
  hashAddNumber(T_SELLER);
  hashAddLower(asi);
  hashAddNumber(0);
  hashAdd(sid);
  hashEnd();
}

/** An exact UA's key: the UA cache's hash of the UA as sent (computed once per lookup anyway), tagged. */
function keyOfUa(hi: number, lo: number): void {
  HASH[0] = fmix32(hi ^ 0x75610000) || 1;
  HASH[1] = lo;
}

interface Block {
  start: bigint;
  end: bigint;
  action: number;
}

/**
 * CIDR blocks → disjoint ranges, each with the action of the most specific block covering
 * it (blocks nest or are disjoint, so one sweep with a stack does it); neighbours with the
 * same action are merged.
 */
export function rangesOf(blocks: Block[]): Block[] {
  // Same block twice (e.g. 10.0.0.0/8 allowed and denied under two spellings): deny wins.
  const byRange = new Map<string, Block>();
  for (const b of blocks) {
    const k = `${b.start}-${b.end}`;
    const prev = byRange.get(k);
    byRange.set(k, prev ? { ...b, action: prev.action | b.action } : b);
  }
  const sorted = [...byRange.values()].map((b) => ({ ...b, action: b.action & DENY ? DENY : ALLOW }));
  sorted.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.end > b.end ? -1 : a.end < b.end ? 1 : 0));
  const out: Block[] = [];
  const emit = (start: bigint, end: bigint, action: number) => {
    if (start > end) return;
    const last = out[out.length - 1];
    if (last && last.action === action && last.end + 1n === start) last.end = end;
    else out.push({ start, end, action });
  };
  const stack: Block[] = [];
  let cursor = 0n;
  const closeUntil = (limit: bigint | null) => {
    while (stack.length > 0 && (limit === null || stack[stack.length - 1]!.end < limit)) {
      const top = stack.pop()!;
      emit(cursor, top.end, top.action);
      cursor = top.end + 1n;
    }
  };
  for (const b of sorted) {
    closeUntil(b.start);
    if (stack.length > 0) emit(cursor, b.start - 1n, stack[stack.length - 1]!.action);
    cursor = b.start;
    stack.push(b);
  }
  closeUntil(null);
  return out;
}

export interface CompiledPolicy {
  buffer: SharedArrayBuffer;
  /** Bytes it takes (what counts in the memory budget's policy share). */
  bytes: number;
}

/** Compiles a checked policy (parsePolicy's output, or the store's) into one shared buffer. */
/**
 * `uaSeed` must be the seed of the lookup threads' UA cache (LookupMemory.uaCache.seed):
 * exact UA entries are keyed by its hash, which every lookup computes already.
 */
export function compilePolicy(p: Policy, uaSeed: number, seed = randomSeed()): CompiledPolicy {
  const t = effectiveThresholds(p);
  const v4: Block[] = [];
  const v6: Block[] = [];
  const hashed: Array<[number, number, number]> = [];
  const subs: Array<{ text: string; action: number }> = [];
  let kinds = 0;
  // A stitching provider's ranges (kind `ssai`): a table of their own, consulted only for server-side stitched imps.
  const s4: Block[] = [];
  const s6: Block[] = [];
  for (const e of p.entries) {
    const action = e.action === 'allow' ? ALLOW : DENY;
    kinds |= 1 << TAG[e.kind];
    if (e.kind === 'ip') {
      pushBlock(e.value, action, v4, v6);
    } else if (e.kind === 'ssai') {
      pushBlock(e.value, ALLOW, s4, s6);
    } else if (e.kind === 'ua_substring') {
      subs.push({ text: e.value, action });
    } else if (e.kind === 'seller') {
      const colon = e.value.indexOf(':');
      keyOfSeller(e.value.slice(0, colon), e.value.slice(colon + 1), seed);
      hashed.push([HASH[0]!, HASH[1]!, action]);
    } else if (e.kind === 'ua') {
      hashUa(e.value, uaSeed);
      keyOfUa(HASH[0]!, HASH[1]!);
      hashed.push([HASH[0]!, HASH[1]!, action]);
    } else {
      keyOf(TAG[e.kind], e.value, 0, seed);
      hashed.push([HASH[0]!, HASH[1]!, action]);
    }
  }
  const r4 = rangesOf(v4);
  const r6 = rangesOf(v6);
  const rs4 = rangesOf(s4);
  const rs6 = rangesOf(s6);
  let hashCap = 0;
  if (hashed.length > 0) {
    hashCap = 16;
    while (hashCap < hashed.length * 2) hashCap *= 2;
  }
  let ac: Uint32Array | null = null;
  try {
    if (subs.length > 0) ac = buildAutomaton(subs);
  } catch (e) {
    throw new PolicyError('entries', `The UA substrings are too many and too varied: ${(e as Error).message}. Remove some.`, true);
  }

  const v4At = HEADER_WORDS;
  const v6At = v4At + 3 * r4.length;
  const hashAt = v6At + 9 * r6.length;
  const acAt = hashAt + 3 * hashCap;
  const ssai4At = acAt + (ac ? ac.length : 0);
  const ssai6At = ssai4At + 3 * rs4.length;
  const total = ssai6At + 9 * rs6.length;
  const buffer = new SharedArrayBuffer(total * 4);
  const w = new Uint32Array(buffer);
  w[H.magic] = MAGIC;
  w[H.medium] = Math.round(t.medium * 10_000);
  w[H.high] = Math.round(t.high * 10_000);
  w[H.v4Count] = r4.length;
  w[H.v4At] = v4At;
  w[H.v6Count] = r6.length;
  w[H.v6At] = v6At;
  w[H.hashCap] = hashCap;
  w[H.hashAt] = hashAt;
  w[H.acAt] = ac ? acAt : 0;
  w[H.kinds] = kinds;
  w[H.seed] = seed >>> 0;
  w[H.uaSeed] = uaSeed >>> 0;
  w[H.entries] = p.entries.length;
  w[H.ssai4Count] = rs4.length;
  w[H.ssai4At] = ssai4At;
  w[H.ssai6Count] = rs6.length;
  w[H.ssai6At] = ssai6At;
  writeRanges(w, r4, v4At, r6, v6At);
  writeRanges(w, rs4, ssai4At, rs6, ssai6At);
  const mask = hashCap - 1;
  for (const [hi, lo, action] of hashed) {
    let i = (hi ^ Math.imul(lo, 0x9e3779b1)) & mask;
    for (;;) {
      const at = hashAt + 3 * i;
      if (w[at] === 0) {
        w[at] = hi;
        w[at + 1] = lo;
        w[at + 2] = action;
        break;
      }
      if (w[at] === hi && w[at + 1] === lo) {
        w[at + 2]! |= action;
        break;
      }
      i = (i + 1) & mask;
    }
  }
  if (ac) w.set(ac, acAt);
  return { buffer, bytes: buffer.byteLength };
}

/** An `ip` or `ssai` entry's CIDR as a block of its address family. */
function pushBlock(value: string, action: number, v4: Block[], v6: Block[]): void {
  const slash = value.indexOf('/');
  const addr = slash < 0 ? value : value.slice(0, slash);
  const v = addr.includes(':') ? 6 : 4;
  const bits = v === 4 ? 32 : 128;
  const len = slash < 0 ? bits : Number(value.slice(slash + 1));
  const start = ipToBigInt(addr, v);
  const size = 1n << BigInt(bits - len);
  // An IPv4-mapped IPv6 block is the IPv4 block: lookups parse ::ffff:a.b.c.d as IPv4.
  if (v === 6 && len >= 96 && start >> 32n === 0xffffn) {
    v4.push({ start: start & 0xffffffffn, end: (start & 0xffffffffn) + size - 1n, action });
    return;
  }
  (v === 4 ? v4 : v6).push({ start, end: start + size - 1n, action });
}

/** IPv4 ranges at v4At: starts, then ends, then actions (a binary search touches only the starts); IPv6 at v6At, 9 words each. */
function writeRanges(w: Uint32Array, r4: Block[], v4At: number, r6: Block[], v6At: number): void {
  const n4 = r4.length;
  r4.forEach((b, i) => {
    w[v4At + i] = Number(b.start);
    w[v4At + n4 + i] = Number(b.end);
    w[v4At + 2 * n4 + i] = b.action;
  });
  r6.forEach((b, i) => {
    const at = v6At + 9 * i;
    for (let k = 0; k < 4; k++) {
      const shift = BigInt(96 - 32 * k);
      w[at + k] = Number((b.start >> shift) & 0xffffffffn);
      w[at + 4 + k] = Number((b.end >> shift) & 0xffffffffn);
    }
    w[at + 8] = b.action;
  });
}

/** The request values a policy matches against (the lookup's own, never copied). */
export interface PolicySubject {
  ip: IpScratch;
  ua: string;
  /** The UA cache's hash of `ua` (HASH[0], HASH[1] after hashUa with the policy's uaSeed). */
  uaHi: number;
  uaLo: number;
  app: string;
  dmn: string;
  pub: string;
  sid: string;
  chain: SupplyChain | null;
}

/** Which kinds matched and how, for the admin explain. */
export interface PolicyMatch {
  kind: EntryKind;
  action: 'allow' | 'deny';
}

/** A compiled policy as a lookup thread reads it. */
export class PolicyReader {
  private readonly w: Uint32Array;
  readonly medium: number;
  readonly high: number;
  /** The UA cache seed the exact UA entries were keyed with. */
  readonly uaSeed: number;
  private readonly kinds: number;
  private readonly seed: number;

  constructor(readonly buffer: SharedArrayBuffer) {
    this.w = new Uint32Array(buffer);
    if (this.w[H.magic] !== MAGIC) throw new Error('not a compiled policy');
    this.medium = this.w[H.medium]! / 10_000;
    this.high = this.w[H.high]! / 10_000;
    this.kinds = this.w[H.kinds]!;
    this.seed = this.w[H.seed]!;
    this.uaSeed = this.w[H.uaSeed]!;
  }

  get entries(): number {
    return this.w[H.entries]!;
  }

  /** Action of the IP's range: 0 none, ALLOW, DENY. */
  ipAction(ip: IpScratch): number {
    return this.rangeAction(ip, H.v4Count, H.v4At, H.v6Count, H.v6At);
  }

  /**
   * The address is in a stitching provider's range the customer declared (kind `ssai`):
   * for a server-side stitched imp, its data centre is the stitcher's, not a bot's.
   */
  ssaiDeclared(ip: IpScratch): boolean {
    return (this.kinds & (1 << T_SSAI)) !== 0 && this.rangeAction(ip, H.ssai4Count, H.ssai4At, H.ssai6Count, H.ssai6At) !== 0;
  }

  private rangeAction(ip: IpScratch, c4: number, a4: number, c6: number, a6: number): number {
    if (ip.v === 0) return 0; // no client IP (an OpenRTB bid request without one)
    const w = this.w;
    if (ip.v === 4) {
      const n = w[c4]!;
      if (n === 0) return 0;
      const at = w[a4]!;
      const x = ip.n;
      const hit = lastStartV4(w, at, n, x);
      return hit >= 0 && x <= w[at + n + hit]! ? w[at + 2 * n + hit]! : 0;
    }
    const n = w[c6]!;
    if (n === 0) return 0;
    const at = w[a6]!;
    const q = ip.w;
    const hit = lastStartV6(w, at, 9, n, q);
    return hit >= 0 && cmp128(w, at + 9 * hit + 4, q, 0) >= 0 ? w[at + 9 * hit + 8]! : 0;
  }

  /** Action of the key in (HASH[0], HASH[1]). */
  private lookupKey(): number {
    const w = this.w;
    const cap = w[H.hashCap]!;
    if (cap === 0) return 0;
    const at0 = w[H.hashAt]!;
    const hi = HASH[0]!, lo = HASH[1]!;
    const mask = cap - 1;
    let i = (hi ^ Math.imul(lo, 0x9e3779b1)) & mask;
    for (;;) {
      const at = at0 + 3 * i;
      const h = w[at]!;
      if (h === 0) return 0;
      if (h === hi && w[at + 1] === lo) return w[at + 2]!;
      i = (i + 1) & mask;
    }
  }

  private valueAction(tag: number, value: string): number {
    if (value === '' || (this.kinds & (1 << tag)) === 0) return 0;
    keyOf(tag, value, 0, this.seed);
    return this.lookupKey();
  }

  private uaAction(s: PolicySubject): number {
    if ((this.kinds & (1 << T_UA)) === 0) return 0;
    keyOfUa(s.uaHi, s.uaLo);
    return this.lookupKey();
  }

  private domainAction(dmn: string): number {
    if (dmn === '' || (this.kinds & (1 << T_DOMAIN)) === 0) return 0;
    let found = 0;
    // The domain and each parent with a dot left in it: a.b.example.com, b.example.com, example.com.
    for (let from = 0; ; ) {
      keyOf(T_DOMAIN, dmn, from, this.seed);
      found |= this.lookupKey();
      if (found & DENY) return found;
      const dot = dmn.indexOf('.', from);
      if (dot < 0 || dmn.indexOf('.', dot + 1) < 0) return found;
      from = dot + 1;
    }
  }

  /** Action of the seller entries: (sid, pub) and each supply-chain node's (asi, sid). */
  sellerAction(s: PolicySubject): number {
    if ((this.kinds & (1 << T_SELLER)) === 0) return 0;
    let found = 0;
    if (s.sid !== '' && s.pub !== '') {
      keyOfSeller(s.sid, s.pub, this.seed);
      found |= this.lookupKey();
    }
    const nodes = s.chain?.nodes;
    if (nodes) {
      for (let i = 0; i < nodes.length && !(found & DENY); i++) {
        keyOfSeller(nodes[i]!.asi, nodes[i]!.sid, this.seed);
        found |= this.lookupKey();
      }
    }
    return found;
  }

  private substringAction(s: PolicySubject): number {
    const at = this.w[H.acAt]!;
    if (at === 0) return 0;
    // Most lookups carry one of a few thousand UAs: remember what the scan found.
    const ua = hashId(s.uaHi >>> 0, s.uaLo >>> 0);
    const i = (s.uaLo ^ this.seed) & (MEMO_SIZE - 1);
    if (memoUa[i] === ua && memoPolicy[i] === this.seed && memoResult[i] !== 0) return memoResult[i]! - 1;
    const r = scanSubstrings(this.w, at, s.ua);
    memoUa[i] = ua;
    memoPolicy[i] = this.seed;
    memoResult[i] = r + 1;
    return r;
  }

  /** The policy's decision for a request: 0 none, ALLOW or DENY (deny wins). Cheapest checks first. */
  decide(s: PolicySubject): number {
    let f = this.ipAction(s.ip);
    if (f & DENY) return DENY;
    if ((f |= this.uaAction(s)) & DENY) return DENY;
    if ((f |= this.valueAction(T_APP, s.app)) & DENY) return DENY;
    if ((f |= this.valueAction(T_PUB, s.pub)) & DENY) return DENY;
    if ((f |= this.domainAction(s.dmn)) & DENY) return DENY;
    if ((f |= this.sellerAction(s)) & DENY) return DENY;
    if ((f |= this.substringAction(s)) & DENY) return DENY;
    return f;
  }

  /** Every kind that matched and how (the admin explain; not on the lookup path). */
  matches(s: PolicySubject): PolicyMatch[] {
    const out: PolicyMatch[] = [];
    const add = (kind: EntryKind, a: number) => {
      if (a & ALLOW) out.push({ kind, action: 'allow' });
      if (a & DENY) out.push({ kind, action: 'deny' });
    };
    add('ip', this.ipAction(s.ip));
    add('ua', this.uaAction(s));
    add('app', this.valueAction(T_APP, s.app));
    add('publisher', this.valueAction(T_PUB, s.pub));
    add('domain', this.domainAction(s.dmn));
    add('seller', this.sellerAction(s));
    add('ua_substring', this.substringAction(s));
    add('ssai', this.ssaiDeclared(s.ip) ? ALLOW : 0);
    return out;
  }
}

// The substring scan's results of recent UAs, per thread (module state is per thread): a
// direct-mapped table keyed by the UA's 64-bit hash and the compiled policy's own seed (so
// a new policy never sees an old result). Fixed size, whatever the traffic: 4096 × 13 bytes.
const MEMO_SIZE = 4096;
const memoUa = new Float64Array(MEMO_SIZE);
const memoPolicy = new Uint32Array(MEMO_SIZE);
/** Result + 1 (0: empty). */
const memoResult = new Uint8Array(MEMO_SIZE);

/** The compiled policies a lookup thread (or the explain engine) holds, by customer id. */
export class PolicyTable {
  private readonly byCustomer = new Map<string, PolicyReader>();

  get(customerId: string): PolicyReader | undefined {
    return this.byCustomer.get(customerId);
  }

  /** Swaps in (or, with a null buffer, drops) customers' policies. */
  apply(updates: ReadonlyArray<{ customerId: string; buffer: SharedArrayBuffer | null }>): void {
    for (const u of updates) {
      if (u.buffer === null) this.byCustomer.delete(u.customerId);
      else this.byCustomer.set(u.customerId, new PolicyReader(u.buffer));
    }
  }

  get size(): number {
    return this.byCustomer.size;
  }
}
