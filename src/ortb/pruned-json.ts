// The fast path of a bid request's JSON: one validating pass over the body's bytes that builds
// only what the mapping reads (a "shape": src/ortb/map.ts's BID_REQUEST_SHAPE) and steps over the
// rest (Prebid `ext` trees, consent strings, eids: most of a bid request's bytes) without
// making an object or a string of it. Everything it steps over is still checked against the
// same rules as bounded-json.ts (grammar, nesting, array length, keys per object, duplicate
// and prototype keys, escapes, number range).
//
// The pass is WebAssembly (src/ortb/wasm/json-scan.ts, embedded by tools/build-wasm.ts): it
// checks every byte and writes a tape of what the shape wants (containers opened and closed,
// values as byte spans); this module builds the object from the tape. On the benches' 2.1 KB
// bid request, in one loop: the same pass as a byte loop in JavaScript took 9–11 µs, more
// than JSON.parse building everything (7.4); the scan and the build take about 3.6
// (docs/benchmarks.md).
//
// It never says what is wrong: on anything it does not accept, or does not handle (a key with
// an escape, an object with many keys, a \u escape of a surrogate, a fault anywhere) it
// answers null and the caller reads the text again with parseBoundedJson, the reference,
// which gives the verdict and the message. So it may bail on a valid text, never accept an
// invalid one (test/ortb/pruned-json.test.ts holds it to that on mutated bid requests).
//
// What it builds is JSON.parse's value read by the shape (src/ortb/shape.ts: prune() makes the
// same of a value the reference built): a Fields for each object the shape reads, every
// element of an array, a value whose type is not the one the shape expects built whole.
// Strings are slices of the body's text: whatever keeps one past the request copies it
// (ownString).
import { isUtf8 } from 'node:buffer';
import type { JsonLimits, JsonValue } from './bounded-json.ts';
import { Fields, type Compiled, type Pruned } from './shape.ts';
import { JSON_SCAN_WASM } from './json-scan-wasm.ts';
import { compileWasm, instantiateWasm, wasmGlobal } from '../runtime/wasm.ts';

// The scan: one instance per thread (each thread loads this module), its memory fixed.
interface ScanExports {
  memory: WebAssembly.Memory;
  scan(len: number, root: number, maxDepth: number, maxArray: number, maxKeys: number): number;
  /** 1 when the last scan's body has a byte past ASCII (in its strings), else 0. */
  wide(): number;
}

// Null without WebAssembly (`--jitless`) or its SIMD (an x86-64 CPU without SSE4.1): every
// body then goes to the reference, slower and as correct; the server says so at start-up
// (wasmUnavailable, with why).
const compiled = compileWasm('the JSON scan', JSON_SCAN_WASM);
const wasm = compiled === null ? null : instantiateWasm<ScanExports>(compiled);
/** Whether bodies are read by the WebAssembly scan (tests compare it with the reference). */
export const jsonScanWasm = wasm !== null;
const at = (name: string): number => (wasm === null ? 0 : wasmGlobal(wasm, name));
const IN = at('IN'), IN_CAPACITY = at('IN_CAPACITY'), SHAPE = at('SHAPE'), SHAPE_WORDS = at('SHAPE_WORDS'), KEYS = at('KEYS'), KEYS_CAPACITY = at('KEYS_CAPACITY');
const MAX_DEPTH = at('MAX_DEPTH'), MAX_KEYS = at('MAX_KEYS'), TAPE = at('TAPE'), TAPE_RECORDS = at('TAPE_RECORDS');
const OPEN_OBJECT = at('OPEN_OBJECT'), OPEN_ARRAY = at('OPEN_ARRAY'), CLOSE = at('CLOSE'), CHECK_NUMBER = at('CHECK_NUMBER'), ESCAPED = at('ESCAPED'), WIDE = at('WIDE');
const memory = wasm === null ? new ArrayBuffer(0) : wasm.memory.buffer;
if (TAPE + TAPE_RECORDS * 16 > memory.byteLength) throw new Error('json-scan: its regions do not fit its memory');
const mem = new Uint8Array(memory);
/** The same memory as a Buffer, for the body's text (latin1) without a Buffer made per body. */
const memText = Buffer.from(memory);
const words = new Int32Array(memory);

/** The shape whose copy the scan holds (its root node at word 0 from SHAPE). */
let loaded: Compiled | null = null;

/** Writes `shape` where the scan reads it: nodes as json-scan.ts lays them out, keys' bytes after. */
function load(shape: Compiled): void {
  let nextWord = 0;
  let nextKey = 0;
  const put = (c: Compiled): number => {
    const node = nextWord;
    const object = c.elem === undefined;
    nextWord += object ? 2 + 3 * c.keys.length : 2;
    if (nextWord > SHAPE_WORDS) throw new Error('json-scan: the shape has too many keys');
    const w = SHAPE / 4 + node;
    words[w] = object ? 1 : 2;
    if (!object) words[w + 1] = c.elem === null ? -1 : put(c.elem!);
    else {
      words[w + 1] = c.keys.length;
      c.keys.forEach((k, j) => {
        if (nextKey + k.length > KEYS_CAPACITY) throw new Error('json-scan: the shape\'s keys are too long');
        for (let x = 0; x < k.length; x++) mem[KEYS + nextKey + x] = k.charCodeAt(x);
        words[w + 2 + 3 * j] = nextKey;
        words[w + 3 + 3 * j] = k.length;
        nextKey += k.length;
        const child = c.shapes[j]!;
        words[w + 4 + 3 * j] = child === null ? -1 : put(child);
      });
    }
    return node;
  };
  loaded = null;
  put(shape);
  loaded = shape;
}

const EMPTY = new Uint8Array(0);
// The body being built from (one thread, synchronous, not re-entered): its bytes, and the same
// bytes as text with a character per byte, where values are cut.
let b: Uint8Array = EMPTY;
let s = '';
/** The body has a character past ASCII: `s` is its bytes as Latin-1 (offsets agree), values are decoded from the bytes. */
let wideBody = false;
/** The containers being built and their shapes (index: depth - 1). */
const open: Array<Fields | Pruned[]> = [];
const openShapes: Compiled[] = [];

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body's bytes from `from` to `to` as text. */
function decode(from: number, to: number): string {
  return wideBody ? utf8.decode(b.subarray(from, to)) : s.slice(from, to);
}

/**
 * Parses the body's `bytes` as one JSON object in UTF-8 within `lim`, building only what
 * `shape` names. The pruned object, or null when the reference must read the body: a fault
 * (bytes that are not UTF-8 among them), or a case this path leaves to it. Never throws.
 */
export function parsePruned(bytes: Uint8Array, lim: JsonLimits, shape: Compiled): Fields | null {
  if (wasm === null || lim.maxDepth > MAX_DEPTH || lim.maxArrayLength < 1 || bytes.length > IN_CAPACITY) return null;
  if (loaded !== shape) load(shape);
  mem.set(bytes, IN);
  mem[IN + bytes.length] = 0;
  const n = wasm.scan(bytes.length, 0, lim.maxDepth, lim.maxArrayLength, Math.min(MAX_KEYS, lim.maxObjectKeys));
  if (n < 0) return null;
  // Outside its strings a byte past ASCII is a fault: with none in them the body is ASCII,
  // else whether it is UTF-8 is checked here (the reference then says it is not).
  wideBody = wasm.wide() !== 0;
  if (wideBody && !isUtf8(bytes)) return null;
  b = bytes;
  s = memText.toString('latin1', IN, IN + bytes.length);
  try {
    return build(n, shape);
  } finally {
    s = '';
    b = EMPTY;
    open.fill(EMPTY_ARRAY); // (what was built belongs to the caller, or to nobody)
  }
}

const EMPTY_ARRAY: Pruned[] = [];

/** The object the tape's `n` records describe (the first opens it), or null for a number out of range. */
function build(n: number, shape: Compiled): Fields | null {
  const tape = words;
  let root: Fields | null = null;
  let sp = -1;
  for (let r = 0, w = TAPE / 4; r < n; r++, w += 4) {
    const op = tape[w]!;
    const kind = op & 15;
    if (kind === CLOSE) {
      sp--;
      continue;
    }
    const start = tape[w + 2]!;
    if (kind === CHECK_NUMBER) {
      if (!Number.isFinite(Number(s.slice(start, tape[w + 3]!)))) return null;
      continue;
    }
    const key = tape[w + 1]!;
    if (kind === OPEN_OBJECT || kind === OPEN_ARRAY) {
      const c = sp < 0 ? shape : key === -1 ? openShapes[sp]!.elem! : openShapes[sp]!.shapes[key]!;
      const v = kind === OPEN_OBJECT ? new Fields(c.blank.slice()) : [];
      if (sp < 0) root = v as Fields;
      else attach(sp, key, v);
      open[++sp] = v;
      openShapes[sp] = c;
      continue;
    }
    attach(sp, key, valueAt(start, tape[w + 3]!, op));
  }
  return root;
}

function attach(sp: number, key: number, v: Pruned): void {
  if (key === -1) (open[sp] as Pruned[]).push(v);
  else (open[sp] as Fields).at[key] = v;
}

/** The value whose text is the body's bytes from `start` to `end`. */
function valueAt(start: number, end: number, op: number): JsonValue {
  const ch = b[start]!;
  if (ch === 0x22) {
    const wide = (op & WIDE) !== 0;
    if ((op & ESCAPED) !== 0) return JSON.parse(wide ? decode(start, end) : s.slice(start, end)) as string;
    return wide ? decode(start + 1, end - 1) : s.slice(start + 1, end - 1);
  }
  if (ch >= 0x30 && ch <= 0x39 && end - start <= 9) {
    // A whole number of up to nine digits (sizes, flags, types: most of a bid request's
    // numbers) read from the bytes; anything else (a sign, a fraction, an exponent) by Number.
    let n = 0;
    for (let i = start; i < end; i++) {
      const d = b[i]! - 0x30;
      if (d < 0 || d > 9) return Number(s.slice(start, end));
      n = n * 10 + d;
    }
    return n;
  }
  if (ch === 0x2d || (ch >= 0x30 && ch <= 0x39)) return Number(s.slice(start, end));
  // A literal, or a container built whole: checked by the scan, made by JSON.parse.
  return JSON.parse(decode(start, end)) as JsonValue;
}
