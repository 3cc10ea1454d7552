// AssemblyScript, not TypeScript: compiled to WebAssembly by tools/build-wasm.ts (`asc`), and
// the module embedded as src/prebid/query-scan-wasm.ts. Excluded from tsc (tsconfig.json).
//
// The lookup query's first pass (src/prebid/query.ts): one pass over its bytes (ASCII only:
// the caller leaves any other query to JavaScript) that refuses a character no value may hold
// raw, cuts the query into its parameters and names each. For each non-empty parameter it
// writes a record of four i32: start, the first '=' (-1: none), end, and its flags (below)
// with the parameter's slot + 1 above them (0: not a known name). It reads 16 bytes at a time
// (SIMD): each step goes to the next '&', '=' or refused character, noting on the way an
// uppercase letter in a name, or a '%' or '+' in a value.
//
// Memory (one instance per thread, not shared): the query at IN (JavaScript writes it), the
// known names (addName fills the table once), the records at SEGS, a UA's decoded bytes at
// UA_OUT and its hashes at UA_HASH (uaValue, below).

export const IN: i32 = 0;
/** Longest query (the request line and headers are 8 KB at most); 16 bytes of room after it for the loads. */
export const IN_CAPACITY: i32 = 8192;
/** The names' table: NAME_SLOTS slots of 16 bytes (the name packed in a u64, 0 for a free slot; its slot number). */
const NAMES: i32 = IN + IN_CAPACITY + 16;
const NAME_SLOTS: i32 = 128;
/** Longest known name (packed in a u64). */
export const MAX_NAME: i32 = 8;
export const SEGS: i32 = NAMES + NAME_SLOTS * 16;
export const SEG_CAPACITY: i32 = 2048;

/** A parameter's flags: an uppercase letter in its name; a second '=' (raw, in its value); a '%' or '+' in its value. */
export const UPPER: i32 = 1;
export const EQ_IN_VALUE: i32 = 2;
export const DECODE: i32 = 4;
/** Where the slot + 1 starts in a record's last word. */
export const SLOT_SHIFT: i32 = 8;

/** What scan() returns besides a count: a character no value may hold raw; more parameters than SEG_CAPACITY. */
export const UNUSUAL: i32 = -1;
export const TOO_MANY: i32 = -2;

const AMP: u8 = 0x26, EQ: u8 = 0x3d;

// @ts-ignore: decorator
@inline function packed(start: i32, len: i32): u64 {
  const bytes = load<u64>(IN + start);
  return len === 8 ? bytes : bytes & ((<u64>1 << (<u64>len << 3)) - 1);
}

// @ts-ignore: decorator
@inline function home(key: u64): i32 {
  return <i32>((key * 0x9e3779b97f4a7c15) >>> 57); // 7 bits: NAME_SLOTS
}

/** Adds the name of `len` bytes at IN as `slot`: 0, or -1 when it is empty, too long or the table is full. */
export function addName(len: i32, slot: i32): i32 {
  if (len < 1 || len > MAX_NAME) return -1;
  const key = packed(0, len);
  let h = home(key);
  for (let i = 0; i < NAME_SLOTS; i++) {
    const at = NAMES + (h << 4);
    const k = load<u64>(at);
    if (k === 0 || k === key) {
      store<u64>(at, key);
      store<i32>(at, slot, 8);
      return 0;
    }
    h = (h + 1) & (NAME_SLOTS - 1);
  }
  return -1;
}

/** The slot of the name [start, end) + 1, 0 when it is not a known one. */
function nameSlot(start: i32, end: i32): i32 {
  const len = end - start;
  if (len < 1 || len > MAX_NAME) return 0;
  const key = packed(start, len);
  let h = home(key);
  for (let i = 0; i < NAME_SLOTS; i++) {
    const at = NAMES + (h << 4);
    const k = load<u64>(at);
    if (k === key) return load<i32>(at, 8) + 1;
    if (k === 0) return 0;
    h = (h + 1) & (NAME_SLOTS - 1);
  }
  return 0;
}

// @ts-ignore: decorator
@inline function record(i: i32, start: i32, eq: i32, end: i32, flags: i32): void {
  const at = SEGS + (i << 4);
  store<i32>(at, start);
  store<i32>(at, eq, 4);
  store<i32>(at, end, 8);
  store<i32>(at, flags | (nameSlot(start, eq === -1 ? end : eq) << SLOT_SHIFT), 12);
}

/** The records of the `len` bytes at IN: their count, or UNUSUAL or TOO_MANY. */
export function scan(len: i32): i32 {
  let n = 0;
  let start = 0;
  let eq = -1;
  let flags = 0;
  let p = 0;
  while (p < len) {
    const v = v128.load(IN + p);
    const rest = len - p;
    // '&', '=', and the refused: '#', '@', ';', controls.
    const special = v128.or(
      v128.or(v128.or(i8x16.eq(v, i8x16.splat(AMP)), i8x16.eq(v, i8x16.splat(EQ))), v128.or(i8x16.eq(v, i8x16.splat(0x23)), i8x16.eq(v, i8x16.splat(0x40)))),
      v128.or(v128.or(i8x16.eq(v, i8x16.splat(0x3b)), i8x16.eq(v, i8x16.splat(0x7f))), i8x16.lt_u(v, i8x16.splat(0x20))),
    );
    const m = i8x16.bitmask(special) & (rest >= 16 ? 0xffff : (1 << rest) - 1);
    const k = m !== 0 ? ctz(m) : rest >= 16 ? 16 : rest;
    const before = (1 << k) - 1;
    if (eq === -1) {
      if ((i8x16.bitmask(v128.and(i8x16.ge_u(v, i8x16.splat(0x41)), i8x16.le_u(v, i8x16.splat(0x5a)))) & before) !== 0) flags |= UPPER;
    } else if ((i8x16.bitmask(v128.or(i8x16.eq(v, i8x16.splat(0x25)), i8x16.eq(v, i8x16.splat(0x2b)))) & before) !== 0) {
      flags |= DECODE;
    }
    p += k;
    if (m === 0) continue;
    const c = load<u8>(IN + p);
    if (c === AMP) {
      if (p > start) {
        if (n === SEG_CAPACITY) return TOO_MANY;
        record(n++, start, eq, p, flags);
      }
      start = p + 1;
      eq = -1;
      flags = 0;
    } else if (c === EQ) {
      if (eq === -1) eq = p;
      else flags |= EQ_IN_VALUE;
    } else {
      return UNUSUAL;
    }
    p++;
  }
  if (len > start) {
    if (n === SEG_CAPACITY) return TOO_MANY;
    record(n++, start, eq, len, flags);
  }
  return n;
}

/**
 * A hash of the bytes [start, end) at IN, 30 bits (a small integer to JavaScript): the key
 * by which a lookup thread remembers a UA's decoding (src/prebid/query.ts), so that a UA sent
 * again is found without V8 hashing its characters one by one. Eight bytes a step (the
 * query's region has room for the last step's load past its end; those bytes are masked).
 */
export function hashRange(start: i32, end: i32): i32 {
  let h: u64 = 0x9e3779b97f4a7c15 ^ <u64>(end - start);
  let p = start;
  while (p + 8 <= end) {
    h = (h ^ load<u64>(IN + p)) * 0xff51afd7ed558ccd;
    h ^= h >>> 29;
    p += 8;
  }
  if (p < end) {
    h = (h ^ (load<u64>(IN + p) & ((<u64>1 << (<u64>(end - p) << 3)) - 1))) * 0xff51afd7ed558ccd;
    h ^= h >>> 29;
  }
  h *= 0xc4ceb9fe1a85ec53;
  h ^= h >>> 32;
  return <i32>(h & 0x3fffffff);
}

/** Where uaValue() writes the UA's decoded bytes (at most IN_CAPACITY)... */
export const UA_OUT: i32 = SEGS + SEG_CAPACITY * 16;
/** ...and its four hash words (hashUa's HASH[0] to HASH[3]). Below 56 KiB, where asc's data starts. */
export const UA_HASH: i32 = UA_OUT + IN_CAPACITY;

// @ts-ignore: decorator
@inline function hexValue(c: u32): i32 {
  if (c - 0x30 < 10) return <i32>(c - 0x30);
  const l = (c | 0x20) - 0x61;
  return l < 6 ? <i32>l + 10 : -1;
}

// @ts-ignore: decorator
@inline function isDigit(c: u32): bool {
  return c - 0x30 < 10;
}

// @ts-ignore: decorator
@inline function isTerminator(c: u32): bool {
  return c === 0x20 || c === 0x3b || c === 0x29 || c === 0x28 || c === 0x2c; // space ; ) ( ,
}

/**
 * ua-cache.ts versionTail over the `len` decoded bytes at UA_OUT: when the '/' at `slash`
 * starts a version token `<digits>(.<digits>)+` ending the token, its first dot's index with
 * the token's last index above it (`dot | last << 16`); else -1.
 */
function versionTail(len: i32, slash: i32): i32 {
  let j = slash + 1;
  if (j >= len || !isDigit(load<u8>(UA_OUT + j))) return -1;
  let firstDot = -1;
  let prevDot = false;
  for (; j < len; j++) {
    const d = <u32>load<u8>(UA_OUT + j);
    if (isDigit(d)) prevDot = false;
    else if (d === 0x2e && !prevDot) {
      if (firstDot < 0) firstDot = j;
      prevDot = true;
    } else break;
  }
  if (firstDot < 0 || prevDot || (j < len && !isTerminator(load<u8>(UA_OUT + j)))) return -1;
  return firstDot | ((j - 1) << 16);
}

// @ts-ignore: decorator
@inline function fmix32(h: u32): u32 {
  h ^= h >>> 16;
  h *= 0x85ebca6b;
  h ^= h >>> 13;
  h *= 0xc2b2ae35;
  h ^= h >>> 16;
  return h;
}

/** hash.ts hashFinish into the words at `at`. */
// @ts-ignore: decorator
@inline function hashFinish(h1: u32, h2: u32, len: u32, at: i32): void {
  h1 = fmix32(h1 ^ len);
  h2 = fmix32((h2 ^ (len * 0x27d4eb2f)) + h1);
  h1 += h2;
  store<u32>(at, h1 === 0 ? 1 : h1);
  store<u32>(at, h2, 4);
}

/**
 * The UA's value, [start, end) at IN, decoded ('+' a space, %XX its byte) into UA_OUT, and its
 * two hashes as src/signals/ua-cache.ts hashUa makes them from `seed` (as sent and with its
 * version digits normalised: the same words, step for step) into UA_HASH: its length, or -1
 * when an escape is broken or a decoded byte is not ASCII (JavaScript then decodes it,
 * checking the UTF-8, and hashes it).
 */
export function uaValue(start: i32, end: i32, seed: u32): i32 {
  let len = 0;
  for (let p = start; p < end; p++) {
    let c = <u32>load<u8>(IN + p);
    if (c === 0x2b) c = 0x20;
    else if (c === 0x25) {
      if (p + 2 >= end) return -1;
      const hi = hexValue(load<u8>(IN + p + 1));
      const lo = hexValue(load<u8>(IN + p + 2));
      if (hi < 0 || lo < 0) return -1;
      c = <u32>((hi << 4) | lo);
      p += 2;
    }
    if (c >= 0x80) return -1;
    store<u8>(UA_OUT + len++, <u8>c);
  }
  let e1: u32 = seed ^ 0x9e3779b9;
  let e2: u32 = (seed * 0x5bd1e995) ^ 0x7f4a7c15;
  let n1 = e1, n2 = e2;
  let zeroFrom = 0, zeroTo = -1;
  for (let i = 0; i < len; i++) {
    const c = <u32>load<u8>(UA_OUT + i);
    if (c === 0x2f && i > zeroTo) {
      const t = versionTail(len, i);
      if (t >= 0) {
        zeroFrom = t & 0xffff;
        zeroTo = t >>> 16;
      }
    }
    e1 = (e1 ^ c) * 0x01000193;
    e2 = (e2 + c) * 0x5bd1e995;
    e2 ^= e2 >>> 15;
    const n = i >= zeroFrom && i <= zeroTo && isDigit(c) ? 0x30 : c;
    n1 = (n1 ^ n) * 0x01000193;
    n2 = (n2 + n) * 0x5bd1e995;
    n2 ^= n2 >>> 15;
  }
  hashFinish(e1, e2, len, UA_HASH);
  hashFinish(n1, n2, len, UA_HASH + 8);
  return len;
}
