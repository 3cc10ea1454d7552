// Seeded 64-bit hashing of request values (IPs, uids, IFAs, user agents, policy entries,
// reporting tuples): the one mixer of the shared tables, the UA cache and customers' compiled
// policies. Keys are stored as two 32-bit words, never as strings, so no request string is
// kept alive and every entry has a fixed size. The seed is random per process (shared by
// its lookup threads), so nobody outside can aim many keys at one bucket.
//
// The scratch-output convention: a hash function returns nothing and writes its result
// into HASH, hi in HASH[0] and lo in HASH[1] (hashUa in src/signals/ua-cache.ts also writes
// a second pair, the normalised UA's, into HASH[2] and HASH[3]). No allocation, no tuple
// returned; read the words right away, before the next hash call overwrites them. hi is
// never 0 for a real key, so (0, 0) can mean "empty slot".

/** The last hash computed: [hi, lo] (and hashUa's second [hi, lo]). */
export const HASH = new Uint32Array(4);

/** murmur3's 32-bit finaliser: every input bit affects every output bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Ends a hash: (h1, h2) after `len` parts into HASH[at] (hi, never 0) and HASH[at + 1]. */
export function hashFinish(h1: number, h2: number, len: number, at = 0): void {
  h1 = fmix32(h1 ^ len);
  h2 = fmix32((h2 ^ Math.imul(len, 0x27d4eb2f)) + h1);
  h1 = (h1 + h2) >>> 0;
  HASH[at] = h1 === 0 ? 1 : h1;
  HASH[at + 1] = h2;
}

/** The first word of a hash's state for `seed` (hashSeed2 the second). */
export function hashSeed1(seed: number): number {
  return seed ^ 0x9e3779b9;
}

export function hashSeed2(seed: number): number {
  return Math.imul(seed, 0x5bd1e995) ^ 0x7f4a7c15;
}

// Streaming state: hashBegin(), then hashAdd()/hashAddLower()/hashAddNumber() per part, then
// hashEnd(). Each code unit goes into the state by one step, written out in each loop (JS
// returns one number per call): h1 an FNV-1a step, h2 a multiply-xorshift; hashUa's loop
// takes the same step for its two states.
let H1 = 0;
let H2 = 0;
let LEN = 0;

export function hashBegin(seed: number): void {
  H1 = hashSeed1(seed);
  H2 = hashSeed2(seed);
  LEN = 0;
}

/** Adds the UTF-16 code units of s[from, to). */
export function hashAdd(s: string, from = 0, to = s.length): void {
  let h1 = H1;
  let h2 = H2;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 + c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  H1 = h1;
  H2 = h2;
  LEN += to - from;
}

/** hashAdd with ASCII letters folded to lowercase (IFAs, domains: one value, either spelling). */
export function hashAddLower(s: string, from = 0, to = s.length): void {
  let h1 = H1;
  let h2 = H2;
  for (let i = from; i < to; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c |= 0x20;
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 + c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  H1 = h1;
  H2 = h2;
  LEN += to - from;
}

/** Adds a part boundary and a number (e.g. an hour): "ab"+"c" and "a"+"bc" differ. */
export function hashAddNumber(n: number): void {
  H1 = Math.imul(H1 ^ (n >>> 0), 0x01000193) ^ Math.imul((n / 4294967296) >>> 0, 0x27d4eb2f);
  H2 = Math.imul(H2 + 0x1f + (n >>> 0), 0x5bd1e995);
  H2 ^= H2 >>> 15;
  LEN += 1;
}

/**
 * Adds each part and then its position, as hashAdd(parts[i]) then hashAddNumber(i) would,
 * in one loop over locals (a reporting tuple's 19 values: about half the time of the calls).
 */
export function hashAddIndexed(parts: readonly string[]): void {
  let h1 = H1;
  let h2 = H2;
  let len = LEN;
  for (let i = 0; i < parts.length; i++) {
    const s = parts[i]!;
    for (let j = 0; j < s.length; j++) {
      const c = s.charCodeAt(j);
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 + c, 0x5bd1e995);
      h2 ^= h2 >>> 15;
    }
    // hashAddNumber(i) for a small whole i (its high word 0).
    h1 = Math.imul(h1 ^ i, 0x01000193);
    h2 = Math.imul(h2 + 0x1f + i, 0x5bd1e995);
    h2 ^= h2 >>> 15;
    len += s.length + 1;
  }
  H1 = h1;
  H2 = h2;
  LEN = len;
}

/**
 * The streaming state after the parts added so far, into `out` ([h1, h2, length]): a prefix
 * many hashes share (a tuple's customer and hour) is hashed once, then each hash resumes
 * from it (hashResume) and adds its own parts. The result is the same as adding them all.
 */
export function hashSave(out: Int32Array): void {
  out[0] = H1;
  out[1] = H2;
  out[2] = LEN;
}

/** Starts a hash from a state hashSave wrote. */
export function hashResume(state: Int32Array): void {
  H1 = state[0]!;
  H2 = state[1]!;
  LEN = state[2]!;
}

/** Finishes into HASH. */
export function hashEnd(): void {
  hashFinish(H1, H2, LEN);
}

/** Hashes `s` (UTF-16 code units) with `seed` into HASH. */
export function hashString(s: string, seed: number): void {
  hashBegin(seed);
  hashAdd(s);
  hashEnd();
}

/** A number from a hash pair: 32 bits of hi and 21 of lo, exact in a double (53 bits). */
export function hashId(hi: number, lo: number): number {
  return hi * 2097152 + (lo >>> 11);
}

/** Hashes `s` with ASCII letters folded to lowercase (IFAs: one device, either spelling). */
export function hashStringLower(s: string, seed: number): void {
  hashBegin(seed);
  hashAddLower(s);
  hashEnd();
}

/** Hashes up to four 32-bit words (an IPv4 address or an IPv6 address / prefix) into HASH. */
export function hashWords(tag: number, a: number, b: number, c: number, d: number, seed: number): void {
  let h1 = fmix32(seed ^ Math.imul(tag, 0x9e3779b1));
  let h2 = fmix32(h1 ^ 0x7f4a7c15);
  h1 = fmix32(h1 ^ a) + Math.imul(b, 0xcc9e2d51);
  h2 = fmix32(h2 ^ b) + Math.imul(a, 0x1b873593);
  h1 = fmix32(h1 ^ c) + Math.imul(d, 0xe6546b64);
  h2 = fmix32(h2 ^ d) + Math.imul(c, 0x85ebca6b);
  hashFinish(h1 >>> 0, h2 >>> 0, tag);
}

/** A random per-process seed (the main thread draws it and hands it to every thread). */
export function randomSeed(): number {
  const a = new Uint32Array(1);
  crypto.getRandomValues(a);
  return a[0]!;
}

/** Set bits of a 32-bit word. */
export function popcount32(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}
