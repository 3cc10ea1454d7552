// Seeded 64-bit hashing of request values (IPs, uids, IFAs, user agents) for the shared
// tables. Keys are stored as two 32-bit words, never as strings, so no request string is
// kept alive and every entry has a fixed size. The seed is random per process (shared by
// its lookup threads), so nobody outside can aim many keys at one bucket.
//
// Results land in HASH (hi, lo) to avoid allocating: read them before the next call.
// hi is never 0 for a real key, so (0, 0) can mean "empty slot".

/** [hi, lo] of the last hash computed. */
export const HASH = new Uint32Array(2);

/** murmur3's 32-bit finaliser: every input bit affects every output bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function finish(h1: number, h2: number, len: number): void {
  h1 = fmix32(h1 ^ len);
  h2 = fmix32((h2 ^ Math.imul(len, 0x27d4eb2f)) + h1);
  h1 = (h1 + h2) >>> 0;
  HASH[0] = h1 === 0 ? 1 : h1;
  HASH[1] = h2;
}

// Streaming state: hashBegin(), then hashAdd()/hashAddNumber() per part, then hashEnd().
let H1 = 0;
let H2 = 0;
let LEN = 0;

export function hashBegin(seed: number): void {
  H1 = seed ^ 0x9e3779b9;
  H2 = Math.imul(seed, 0x5bd1e995) ^ 0x7f4a7c15;
  LEN = 0;
}

/** Adds a string's UTF-16 code units. */
export function hashAdd(s: string): void {
  let h1 = H1;
  let h2 = H2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 + c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  H1 = h1;
  H2 = h2;
  LEN += s.length;
}

/** Adds a part boundary and a number (e.g. an hour): "ab"+"c" and "a"+"bc" differ. */
export function hashAddNumber(n: number): void {
  H1 = Math.imul(H1 ^ (n >>> 0), 0x01000193) ^ Math.imul((n / 4294967296) >>> 0, 0x27d4eb2f);
  H2 = Math.imul(H2 + 0x1f + (n >>> 0), 0x5bd1e995);
  H2 ^= H2 >>> 15;
  LEN += 1;
}

/** Finishes into HASH. */
export function hashEnd(): void {
  finish(H1, H2, LEN);
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
  let h1 = seed ^ 0x9e3779b9;
  let h2 = Math.imul(seed, 0x5bd1e995) ^ 0x7f4a7c15;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c |= 0x20;
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 + c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  finish(h1, h2, s.length);
}

/** Hashes up to four 32-bit words (an IPv4 address or an IPv6 address / prefix) into HASH. */
export function hashWords(tag: number, a: number, b: number, c: number, d: number, seed: number): void {
  let h1 = fmix32(seed ^ Math.imul(tag, 0x9e3779b1));
  let h2 = fmix32(h1 ^ 0x7f4a7c15);
  h1 = fmix32(h1 ^ a) + Math.imul(b, 0xcc9e2d51);
  h2 = fmix32(h2 ^ b) + Math.imul(a, 0x1b873593);
  h1 = fmix32(h1 ^ c) + Math.imul(d, 0xe6546b64);
  h2 = fmix32(h2 ^ d) + Math.imul(c, 0x85ebca6b);
  finish(h1 >>> 0, h2 >>> 0, tag);
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
