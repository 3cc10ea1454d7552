// The fast path of a bid request's JSON: one validating pass over the body's bytes that builds
// only what the mapping reads (a "shape": src/prebid/ortb/map.ts's BID_REQUEST_SHAPE) and steps over the
// rest (Prebid `ext` trees, consent strings, eids: most of a bid request's bytes) without
// making an object or a string of it. Everything it steps over is still checked against the
// same rules as bounded-json.ts (grammar, nesting, array length, keys per object, duplicate
// and prototype keys, escapes, number range).
//
// The pass is WebAssembly (src/prebid/wasm/json-scan.ts, embedded by tools/build-wasm.ts): it
// checks every byte and writes a tape of what the shape wants (the containers it reads and
// their values, each with its depth and key index); this module builds the object from the tape. On the benches' 2.1 KB
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
// What it builds is JSON.parse's value read by the shape (src/base/shape.ts: prune() makes the
// same of a value the reference built): a Fields for each object the shape reads, every
// element of an array, a value whose type is not the one the shape expects built whole.
// Strings are slices of the body's text: whatever keeps one past the request copies it
// (ownString).
import { isUtf8 } from 'node:buffer';
import type { JsonLimits, JsonValue } from '../../base/bounded-json.ts';
import { Fields, type Compiled, type Pruned } from '../../base/shape.ts';
import { JSON_SCAN_WASM } from './json-scan-wasm.ts';
import { compileWasm, instantiateWasm, wasmGlobal } from '../../runtime/wasm.ts';

// The scan: one instance per thread (each thread loads this module), its memory fixed.
interface ScanExports {
  memory: WebAssembly.Memory;
  scan(len: number, root: number, maxDepth: number, maxArray: number, maxKeys: number): number;
  /** 1 when the last scan's body has a byte past ASCII (in its strings), else 0. */
  wide(): number;
  /** The 7-bit hash of the key of `len` bytes at `start` in the scan's memory (a shape node's filter has its keys' bits). */
  keyHash(start: number, len: number): number;
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
const OPEN_OBJECT = at('OPEN_OBJECT'), OPEN_ARRAY = at('OPEN_ARRAY'), STRING = at('STRING'), INT = at('INT'), NUMBER = at('NUMBER'), LITERAL = at('LITERAL');
const CHECK_NUMBER = at('CHECK_NUMBER'), ESCAPED = at('ESCAPED'), WIDE = at('WIDE'), DEPTH_SHIFT = at('DEPTH_SHIFT');
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
    nextWord += object ? 6 + 3 * c.keys.length : 2;
    if (nextWord > SHAPE_WORDS) throw new Error('json-scan: the shape has too many keys');
    const w = SHAPE / 4 + node;
    words[w] = object ? 1 : 2;
    if (!object) words[w + 1] = c.elem === null ? -1 : put(c.elem!);
    else {
      words[w + 1] = c.keys.length;
      words.fill(0, w + 2, w + 6); // the keys' filter: bit keyHash of each
      c.keys.forEach((k, j) => {
        if (nextKey + k.length > KEYS_CAPACITY) throw new Error('json-scan: the shape\'s keys are too long');
        for (let x = 0; x < k.length; x++) mem[KEYS + nextKey + x] = k.charCodeAt(x);
        const h = wasm!.keyHash(KEYS + nextKey, k.length);
        words[w + 2 + (h >> 5)]! |= 1 << (h & 31);
        words[w + 6 + 3 * j] = nextKey;
        words[w + 7 + 3 * j] = k.length;
        nextKey += k.length;
        const child = c.shapes[j]!;
        words[w + 8 + 3 * j] = child === null ? -1 : put(child);
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
  for (let r = 0, w = TAPE / 4; r < n; r++, w += 4) {
    const op = tape[w]!;
    const kind = op & 15;
    const a = tape[w + 2]!;
    if (kind === CHECK_NUMBER) {
      if (!Number.isFinite(Number(s.slice(a, tape[w + 3]!)))) return null;
      continue;
    }
    // It goes into open[depth - 1] (the root, at depth 0, into nothing), at its key's index (-1: pushed).
    const depth = op >>> DEPTH_SHIFT;
    const key = tape[w + 1]!;
    let v: Pruned;
    if (kind === OPEN_OBJECT || kind === OPEN_ARRAY) {
      const c = depth === 0 ? shape : key === -1 ? openShapes[depth - 1]!.elem! : openShapes[depth - 1]!.shapes[key]!;
      const container = kind === OPEN_OBJECT ? new Fields(c.blank.slice()) : [];
      open[depth] = container;
      openShapes[depth] = c;
      if (depth === 0) {
        root = container as Fields;
        continue;
      }
      v = container;
    } else if (kind === STRING) {
      const end = tape[w + 3]!;
      if ((op & ESCAPED) !== 0) v = JSON.parse((op & WIDE) !== 0 ? decode(a - 1, end + 1) : s.slice(a - 1, end + 1)) as string;
      else v = (op & WIDE) !== 0 ? decode(a, end) : s.slice(a, end);
    } else if (kind === INT) v = a;
    else if (kind === NUMBER) v = Number(s.slice(a, tape[w + 3]!));
    else if (kind === LITERAL) v = a === 1 ? true : a === 0 ? false : null;
    else v = JSON.parse(decode(a, tape[w + 3]!)) as JsonValue; // WHOLE_VALUE: checked by the scan, made by JSON.parse
    const parent = open[depth - 1]!;
    if (key === -1) (parent as Pruned[]).push(v);
    else (parent as Fields).at[key] = v;
  }
  return root;
}
