// AssemblyScript, not TypeScript: compiled to WebAssembly by tools/build-wasm.ts (`asc`), and
// the module embedded as src/prebid/ortb/json-scan-wasm.ts. Excluded from tsc (tsconfig.json).
//
// The scan behind src/prebid/ortb/pruned-json.ts: one validating pass over a bid request's bytes that
// checks everything (grammar, nesting, array length, keys per object, duplicate and prototype
// keys, escapes) and writes a tape of what the shape wants built: the containers it reads,
// each value with its depth, its key's index in the shape and its byte span (small whole
// numbers and literals with their value). JavaScript builds the pruned object from the tape
// (strings cut from the body's text). It never says what is wrong: anything it does not
// accept, or leaves to the reference (an escaped key, a \u escape of a surrogate, an object
// with more keys than `maxKeys`, a tape too long), ends the scan with a negative result.
//
// Memory (one instance per thread, not shared): the body from IN (JS writes it, then one
// NUL byte after it: every loop stops at the NUL, which is never valid where it is read),
// the shape (JS writes it), the open containers, the open objects' key spans, the tape.

export const IN: i32 = 0;
/** Longest body: src/prebid/ortb/body.ts's ORTB_MAX_JSON_BYTES. */
export const IN_CAPACITY: i32 = 65536;
/** The shape's nodes (i32 words) and their keys' bytes; 16 bytes after the body's room, for the NUL and the string scan's 16-byte loads. */
export const SHAPE: i32 = IN + IN_CAPACITY + 16;
export const SHAPE_WORDS: i32 = 2048;
export const KEYS: i32 = SHAPE + SHAPE_WORDS * 4;
export const KEYS_CAPACITY: i32 = 4096;
/** Open containers: 48 bytes per depth (kind, aux, node, emit key, start as i32; an object's 128-bit key filter as two i64 at 24). */
const STACK: i32 = KEYS + KEYS_CAPACITY;
export const MAX_DEPTH: i32 = 64;
const FRAME_BYTES: i32 = 48;
/** Key spans (start, length) of the open objects, for the duplicate check. */
const SPANS: i32 = STACK + MAX_DEPTH * FRAME_BYTES;
export const MAX_KEYS: i32 = 64;
/** The tape: records of four i32 (op, key, a, b): see the ops below. */
export const TAPE: i32 = SPANS + MAX_DEPTH * MAX_KEYS * 8;
export const TAPE_RECORDS: i32 = 8192;

// Tape ops: a record's op is its kind, its flags (a string's: with an escape, with a byte past
// ASCII) and, from bit DEPTH_SHIFT, its depth: the open containers around it, the one it goes
// into being the innermost (the root object's record has depth 0). Containers are not closed
// on the tape: the next record's depth says where it goes. `key` is the key's index in the
// shape node of the object it goes into, -1 in an array. Kinds and their a, b:
/** A container the shape reads: built from the records after it (a: where it starts). */
export const OPEN_OBJECT: i32 = 1;
export const OPEN_ARRAY: i32 = 2;
/** A string: its text from a to b (between its quotes). */
export const STRING: i32 = 3;
/** A whole number of at most nine digits, without sign, fraction or exponent: a is its value. */
export const INT: i32 = 4;
/** Any other number: its text from a to b (finite or not: the caller checks). */
export const NUMBER: i32 = 5;
/** true (a = 1), false (a = 0), null (a = 2). */
export const LITERAL: i32 = 6;
/** A value the shape reads whole (a container of another type than the shape's): its text from a to b. */
export const WHOLE_VALUE: i32 = 7;
/** A number stepped over that the caller must check is finite (an exponent, or 300 characters or more): its text from a to b. */
export const CHECK_NUMBER: i32 = 8;
export const ESCAPED: i32 = 16;
export const WIDE: i32 = 32;
export const DEPTH_SHIFT: i32 = 8;

// Shape nodes (word offsets from SHAPE): an object is [1, n, its keys' 128-bit filter (four
// words: bit keyHash of each key, set by JS through keyHash()), then n × (key offset from
// KEYS, key length, child node or WHOLE)]; an array is [2, element node or WHOLE] (the types
// are OBJ and ARR).
/** A value built whole; SKIP: a value not built at all. */
const WHOLE: i32 = -1;
const SKIP: i32 = -2;
/** A container's emit key when it is not emitted as one value. */
const NO_EMIT: i32 = -3;

const OBJ: i32 = 1;
const ARR: i32 = 2;

// Results besides a record count.
const FAULT: i32 = -1;

let records: i32 = 0;
let spanTop: i32 = 0;
/** What the last string stepped over had: ESCAPED, WIDE. */
let stringFlags: i32 = 0;
/** Whether a string of this body had a byte past ASCII (outside strings such a byte is a fault). */
let wideBytes: bool = false;
/** Where the last key starts, how long it is, and its keyHash. */
let keyStart: i32 = 0;
let keyLen: i32 = 0;
let keyBits: u32 = 0;

@inline function isWs(c: u32): bool {
  return c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09;
}

@inline function byte(k: i32): u32 {
  return <u32>load<u8>(<usize>k);
}

/** Word `i` of the shape. */
@inline function shapeWord(i: i32): i32 {
  return load<i32>(<usize>(SHAPE + (i << 2)));
}

/** Appends a record; false when the tape is full. */
function emit(op: i32, key: i32, start: i32, end: i32): bool {
  if (records == TAPE_RECORDS) return false;
  const at = <usize>(TAPE + (records << 4));
  store<i32>(at, op);
  store<i32>(at, key, 4);
  store<i32>(at, start, 8);
  store<i32>(at, end, 12);
  records++;
  return true;
}

function hex(c: u32): i32 {
  if (c >= 0x30 && c <= 0x39) return <i32>c - 0x30;
  if (c >= 0x61 && c <= 0x66) return <i32>c - 0x57;
  if (c >= 0x41 && c <= 0x46) return <i32>c - 0x37;
  return -1;
}

const QUOTES = i8x16.splat(0x22);
const BACKSLASHES = i8x16.splat(0x5c);
const SPACES = i8x16.splat(0x20);

/** Steps over the string whose opening quote is at `k`: where it ends, or FAULT. Sets stringFlags. */
@inline function skipString(k: i32): i32 {
  k++;
  let flags = 0;
  for (;;) {
    // The plain run (not a quote, a backslash, a control character or past ASCII), 16 bytes
    // at a time: bytes past ASCII are negative as i8, so one signed compare finds them and
    // the control characters. The run stops at the NUL after the body, so no load reaches
    // past IN + IN_CAPACITY + 16.
    for (;;) {
      const v = v128.load(<usize>k);
      const stops = v128.or(v128.or(i8x16.eq(v, QUOTES), i8x16.eq(v, BACKSLASHES)), i8x16.lt_s(v, SPACES));
      const bits = i8x16.bitmask(stops);
      if (bits != 0) {
        k += ctz(bits);
        break;
      }
      k += 16;
    }
    const c = byte(k);
    if (c == 0x22) {
      stringFlags = flags;
      return k + 1;
    }
    if (c >= 0x80) {
      // (Whether these bytes are UTF-8 is the caller's to check: it asks wide() after a scan.)
      flags |= WIDE;
      wideBytes = true;
      k++;
      continue;
    }
    if (c != 0x5c) return FAULT; // a raw control character, or the end of the body
    flags |= ESCAPED;
    const e = byte(k + 1);
    if (e == 0x75) {
      // \uXXXX: four hex digits, and not a surrogate (a pair is left to the reference).
      let u = 0;
      for (let h = k + 2; h < k + 6; h++) {
        const d = hex(byte(h));
        if (d < 0) return FAULT;
        u = u * 16 + d;
      }
      if (u >= 0xd800 && u <= 0xdfff) return FAULT;
      k += 6;
      continue;
    }
    // \" \\ \/ \b \f \n \r \t
    if (e != 0x22 && e != 0x5c && e != 0x2f && e != 0x62 && e != 0x66 && e != 0x6e && e != 0x72 && e != 0x74) return FAULT;
    k += 2;
  }
  return FAULT; // (never reached: asc wants a return after the loop)
}

/** The value of the number skipNumber stepped over last when it is a whole number of at most nine digits without sign, fraction or exponent; else -1. */
let intValue: i32 = -1;

/** Steps over the number at `k`: where it ends, or FAULT; one the caller must range-check goes on the tape. Sets intValue. */
function skipNumber(k: i32): i32 {
  const start = k;
  let c = byte(k);
  let n: i32 = -1;
  if (c == 0x2d) c = byte(++k);
  if (c == 0x30) {
    c = byte(++k);
    n = 0;
  } else if (c > 0x30 && c <= 0x39) {
    n = <i32>(c - 0x30);
    for (;;) {
      c = byte(++k);
      if (!(c >= 0x30 && c <= 0x39)) break;
      n = n * 10 + <i32>(c - 0x30); // (wraps past nine digits: not read then)
    }
  } else return FAULT;
  if (c == 0x2e) {
    n = -1;
    c = byte(++k);
    if (!(c >= 0x30 && c <= 0x39)) return FAULT;
    do c = byte(++k); while (c >= 0x30 && c <= 0x39);
  }
  let plain = true;
  if (c == 0x65 || c == 0x45) {
    n = -1;
    plain = false;
    c = byte(++k);
    if (c == 0x2b || c == 0x2d) c = byte(++k);
    if (!(c >= 0x30 && c <= 0x39)) return FAULT;
    do c = byte(++k); while (c >= 0x30 && c <= 0x39);
  }
  intValue = byte(start) == 0x2d || k - start > 9 ? -1 : n;
  // Without an exponent, fewer than 300 characters cannot pass Number.MAX_VALUE.
  if (!(plain && k - start < 300) && !emit(CHECK_NUMBER, 0, start, k)) return FAULT;
  return k;
}

function sameBytes(a: i32, b: i32, len: i32): bool {
  for (let k = 0; k < len; k++) if (load<u8>(<usize>(a + k)) != load<u8>(<usize>(b + k))) return false;
  return true;
}

/**
 * A key's 7-bit hash, 0-127, from its length and bytes (the first and last eight): equal keys
 * hash alike, whatever follows them. Bit `hash` of a 128-bit filter stands for the key: an
 * object's keys so far (a duplicate is looked for only among keys of a set bit) and a shape
 * node's keys (a key of another bit is none of them).
 */
@inline function hashOf(start: i32, len: i32): u32 {
  let w: u64 = 0;
  // (Loads may read past the key, never past the memory: the body has 16 bytes after it, the shape's keys the stack.)
  if (len >= 8) w = load<u64>(<usize>start) ^ rotl<u64>(load<u64>(<usize>(start + len - 8)), 29);
  else if (len > 0) w = load<u64>(<usize>start) & ((<u64>-1) >> <u64>((8 - len) << 3));
  w = (w ^ (<u64>len << 56)) * 0x9e3779b97f4a7c15;
  return <u32>(w >> 57);
}

/** hashOf for JavaScript: the shape's filters are set with it (pruned-json.ts, load). */
export function keyHash(start: i32, len: i32): u32 {
  return hashOf(start, len);
}

/** Bit `h` (0-127) of the 128-bit filter at `at`: its u64 word and the bit in it. */
@inline function filterWord(at: usize, h: u32): usize {
  return at + ((<usize>(h >> 6)) << 3);
}

@inline function filterBit(h: u32): u64 {
  return (<u64>1) << <u64>(h & 63);
}

/** `__proto__`, `prototype`, `constructor` (little-endian words of their bytes): the reference refuses them. */
function isPrototypeKey(start: i32, len: i32): bool {
  const w = load<u64>(<usize>start);
  if (len == 9) return (w == 0x5f6f746f72705f5f && byte(start + 8) == 0x5f) || (w == 0x7079746f746f7270 && byte(start + 8) == 0x65);
  return len == 11 && w == 0x63757274736e6f63 && load<u16>(<usize>(start + 8)) == 0x6f74 && byte(start + 10) == 0x72;
}

/**
 * Reads the key at `k` (after whitespace) of the object of frame `f`, and its
 * colon: where the value starts, or FAULT. Leaves the key in keyStart/keyLen.
 */
@inline function readKey(k: i32, f: usize, maxKeys: i32): i32 {
  const base = load<i32>(f, 4);
  let c = byte(k);
  while (isWs(c)) c = byte(++k);
  if (c != 0x22) return FAULT;
  const start = k + 1;
  k = skipString(k);
  if (k < 0 || stringFlags & ESCAPED) return FAULT; // the reference compares what escaped keys mean
  const len = k - 1 - start;
  if ((len == 9 || len == 11) && isPrototypeKey(start, len)) return FAULT;
  // A key whose filter bit is new to the object is no duplicate; only one whose bit is set
  // is compared with the object's keys so far.
  const h = hashOf(start, len);
  const word = filterWord(f + 24, h);
  const bit = filterBit(h);
  const seen = load<u64>(word);
  if (seen & bit) {
    for (let at = base; at < spanTop; at += 2) {
      const s = <usize>(SPANS + (at << 2));
      if (load<i32>(s, 4) == len && sameBytes(load<i32>(s), start, len)) return FAULT;
    }
  }
  store<u64>(word, seen | bit);
  if (spanTop - base >= 2 * maxKeys) return FAULT;
  const s = <usize>(SPANS + (spanTop << 2));
  store<i32>(s, start);
  store<i32>(s, len, 4);
  spanTop += 2;
  c = byte(k);
  while (isWs(c)) c = byte(++k);
  if (c != 0x3a) return FAULT;
  keyStart = start;
  keyLen = len;
  keyBits = h;
  return k + 1;
}

/** What the value of the key just read is: its index in object node `node` (in `wantKey`) and its node, WHOLE or SKIP. */
let wantKey: i32 = 0;
@inline function wantOf(node: i32): i32 {
  if (node < 0) return SKIP;
  if ((load<u64>(filterWord(<usize>(SHAPE + ((node + 2) << 2)), keyBits)) & filterBit(keyBits)) == 0) return SKIP;
  const n = shapeWord(node + 1);
  let rec = node + 6;
  for (let j = 0; j < n; j++, rec += 3) {
    if (shapeWord(rec + 1) == keyLen && sameBytes(KEYS + shapeWord(rec), keyStart, keyLen)) {
      wantKey = j;
      return shapeWord(rec + 2);
    }
  }
  return SKIP;
}

/** How the elements of array node `node` are wanted: their node, WHOLE or SKIP. */
@inline function elementWant(node: i32): i32 {
  return node < 0 ? SKIP : shapeWord(node + 1);
}

// The open containers: depth d + 1 at STACK + FRAME_BYTES d.
@inline function frame(sp: i32): usize {
  return <usize>(STACK + sp * FRAME_BYTES);
}

/** Closes the container of frame `f` at depth `sp`, whose closing byte ends before `end`: a container read whole is recorded now. */
@inline function close(f: usize, sp: i32, end: i32): bool {
  if (load<i32>(f) == OBJ) spanTop = load<i32>(f, 4);
  const emitKey = load<i32>(f, 12);
  return emitKey == NO_EMIT || emit(WHOLE_VALUE | (sp << DEPTH_SHIFT), emitKey, load<i32>(f, 16), end);
}

/**
 * Scans the body of `len` bytes at IN (a NUL after it) as one JSON object by the shape node
 * at `root` (an object node). The number of records on the tape, or a negative number when
 * the reference must read the body.
 */
export function scan(len: i32, root: i32, maxDepth: i32, maxArray: i32, maxKeys: i32): i32 {
  if (len > IN_CAPACITY || maxDepth > MAX_DEPTH || maxKeys > MAX_KEYS || maxArray < 1) return FAULT;
  records = 0;
  spanTop = 0;
  wideBytes = false;
  let k = 0;
  let sp = 0;
  let c = byte(k);
  while (isWs(c)) c = byte(++k);
  if (c != 0x7b) return FAULT;
  // How the value at k is wanted: a node (>= 0), WHOLE or SKIP; under key index `key` (-1 in an array).
  let want: i32 = root;
  let key: i32 = -1;
  for (;;) {
    // A value at k.
    c = byte(k);
    while (isWs(c)) c = byte(++k);
    if (c == 0x7b || c == 0x5b) {
      if (sp + 1 > maxDepth) return FAULT;
      const kind = c == 0x7b ? OBJ : ARR;
      const f = frame(sp++);
      let node = SKIP;
      let emitKey = NO_EMIT;
      if (want >= 0 && shapeWord(want) == kind) {
        node = want;
        if (!emit((kind == OBJ ? OPEN_OBJECT : OPEN_ARRAY) | ((sp - 1) << DEPTH_SHIFT), key, k, 0)) return FAULT;
      } else if (want != SKIP) emitKey = key; // built whole: one value, recorded when it closes
      store<i32>(f, kind);
      store<i32>(f, kind == OBJ ? spanTop : 1, 4);
      store<i32>(f, node, 8);
      store<i32>(f, emitKey, 12);
      store<i32>(f, k, 16);
      store<u64>(f, 0, 24);
      store<u64>(f, 0, 32);
      const end = c + 2; // '}' after '{', ']' after '['
      c = byte(++k);
      while (isWs(c)) c = byte(++k);
      if (c == end) {
        k++;
        sp--;
        if (!close(f, sp, k)) return FAULT;
      } else if (kind == OBJ) {
        k = readKey(k, f, maxKeys);
        if (k < 0) return FAULT;
        want = wantOf(node);
        key = wantKey;
        continue;
      } else {
        want = elementWant(node);
        key = -1;
        continue;
      }
    } else {
      const start = k;
      let op = 0, a = 0, b = 0;
      if (c == 0x22) {
        k = skipString(k);
        op = STRING | stringFlags;
        a = start + 1;
        b = k - 1;
      } else if (c == 0x2d || (c >= 0x30 && c <= 0x39)) {
        k = skipNumber(k);
        if (k < 0) return FAULT;
        if (intValue >= 0) {
          op = INT;
          a = intValue;
        } else {
          op = NUMBER;
          a = start;
          b = k;
        }
      } else if (c == 0x74 && byte(k + 1) == 0x72 && byte(k + 2) == 0x75 && byte(k + 3) == 0x65) {
        k += 4;
        op = LITERAL;
        a = 1;
      } else if (c == 0x66 && byte(k + 1) == 0x61 && byte(k + 2) == 0x6c && byte(k + 3) == 0x73 && byte(k + 4) == 0x65) {
        k += 5;
        op = LITERAL;
      } else if (c == 0x6e && byte(k + 1) == 0x75 && byte(k + 2) == 0x6c && byte(k + 3) == 0x6c) {
        k += 4;
        op = LITERAL;
        a = 2;
      } else return FAULT;
      if (k < 0) return FAULT;
      if (want != SKIP && !emit(op | (sp << DEPTH_SHIFT), key, a, b)) return FAULT;
    }
    // After a value (k is past it): close what ends here, up to the next value.
    for (;;) {
      if (sp == 0) {
        c = byte(k);
        while (isWs(c)) c = byte(++k);
        return k == len ? records : FAULT;
      }
      c = byte(k++);
      while (isWs(c)) c = byte(k++);
      const f = frame(sp - 1);
      const node = load<i32>(f, 8);
      if (load<i32>(f) == OBJ) {
        if (c == 0x2c) {
          k = readKey(k, f, maxKeys);
          if (k < 0) return FAULT;
          want = wantOf(node);
          key = wantKey;
          break;
        }
        if (c != 0x7d) return FAULT;
      } else {
        if (c == 0x2c) {
          const n = load<i32>(f, 4);
          if (n == maxArray) return FAULT;
          store<i32>(f, n + 1, 4);
          want = elementWant(node);
          key = -1;
          break;
        }
        if (c != 0x5d) return FAULT;
      }
      sp--;
      if (!close(f, sp, k)) return FAULT;
    }
  }
  return FAULT; // (never reached: asc wants a return after the loop)
}

/** Whether the body of the last scan that succeeded has a byte past ASCII (all of them in strings): its UTF-8 is then the caller's to check. */
export function wide(): bool {
  return wideBytes;
}
