// The lookup id (`lid`): a signed, URL-safe token in every 200 lookup answer that names the
// customer and the lookup, so the impression beacon (GET /api/v1/ivt/imp?lid=…) can judge
// what happened after the bid without any per-lookup state kept here.
//
// Why this shape: the lookup path may spend at most 1 µs on it, so it is a fixed-length
// binary payload (no JSON, no variable fields) authenticated by SipHash-2-4 (a keyed PRF
// built for short inputs; 64-bit tag) over a 128-bit secret the fleet shares, then base64url.
// An HMAC-SHA256 through node:crypto costs several µs per call (object, native hop); SipHash
// in 32-bit halves is plain integer arithmetic. A 64-bit tag means a forger needs ~2^63
// guesses per accepted beacon, each one a request we see, and the beacon only ever counts.
//
// Layout (LID_BYTES = 80, little-endian words; base64url → LID_CHARS = 107 characters):
//    0  version (1)                 1  band (0 low, 1 medium, 2 high)
//    2  lookup time, ms (48 bits)   8  customer id (UUID, 16 bytes)
//   24  counter (32)               28  thread salt (32): with the time, unique per lookup
//   32  IP net digest (32): the /24 or /48, keyed
//   36  UA family digest (16)      38  device id digest (16): IFA, else uid (0: none)
//   40  history keys: IP (hi, lo), uid, IFA (3 × 64 bits; 0 = not tracked)
//   64  the lookup's reporting tuple (hi, lo)
//   72  tag: SipHash-2-4(secret, bytes 0..71)
// The digests and history keys are hashes: the token carries no IP, UA or device id.
import { fmix32, hashAdd, hashAddNumber, hashBegin, hashEnd, hashStringLower, hashWords, HASH } from '../memory/hash.ts';
import type { ParsedIp } from '../signals/ip-address.ts';
import { BROWSER_CODES, OS_CODES } from '../signals/ua-analysis.ts';
import { SIPHASH_WASM } from './siphash-wasm.ts';
import { compileWasm, instantiateWasm, wasmGlobal } from '../runtime/wasm.ts';

export const LID_VERSION = 1;

const OS_INDEX = new Map(OS_CODES.map((c, i) => [c, i]));
const BROWSER_INDEX = new Map(BROWSER_CODES.map((c, i) => [c, i]));
export const LID_BYTES = 80;
const SIGNED_BYTES = 72;
/** base64url without padding of LID_BYTES. */
export const LID_CHARS = Math.ceil((LID_BYTES * 4) / 3);
/** The bits of the last character past LID_BYTES (base64url carries 6 bits a character). */
const SPARE_BITS = (1 << (LID_CHARS * 6 - LID_BYTES * 8)) - 1;
/** Bytes of the shared secret (SipHash's 128-bit key). */
export const LID_SECRET_BYTES = 16;

const BANDS = ['low', 'medium', 'high'] as const;
export type LidBand = (typeof BANDS)[number];

/** What a beacon learns from a valid lid: what the lookup signed (LidInput), and its tag. */
export interface LidFacts extends Omit<LidInput, 'band'> {
  band: LidBand;
  /** The tag: unique per lookup, the replay table's key. */
  tagHi: number; tagLo: number;
}

export function emptyLidFacts(): LidFacts {
  return { band: 'low', at: 0, customerId: '', ipNet: 0, uaFamily: 0, device: 0, ipHi: 0, ipLo: 0, uidHi: 0, uidLo: 0, ifaHi: 0, ifaLo: 0, tupleHi: 0, tupleLo: 0, tagHi: 0, tagLo: 0 };
}

// ---- SipHash-2-4 over 64-bit lanes kept as 32-bit (hi, lo) pairs -------------------------
// One function with local variables only: state kept in module variables or a closure would
// box every uint32 in a heap number (about 5 µs per call instead of well under one).

function le32(b: Uint8Array, i: number): number {
  return (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;
}

/** The key as four 32-bit words: k0 lo, k0 hi, k1 lo, k1 hi (little-endian bytes). */
export function sipKey(secret: Uint8Array): Uint32Array {
  if (secret.length !== LID_SECRET_BYTES) throw new Error(`the lid secret must be ${LID_SECRET_BYTES} bytes`);
  return Uint32Array.of(le32(secret, 0), le32(secret, 4), le32(secret, 8), le32(secret, 12));
}

/**
 * SipHash-2-4 of bytes [0, len) of `b` into HASH (hi, lo). Any length (the reference vectors
 * test it): the bytes are packed into 32-bit words (lo, hi per 8-byte block) and hashed by
 * the one implementation below. Big-endian hosts and tests only; the lookup path hashes
 * its payload's words directly.
 */
export function sipHash24(key: Uint32Array, b: Uint8Array, len: number): void {
  const blocks = len >>> 3;
  const w = new Uint32Array(blocks * 2 + 2);
  for (let i = 0; i < len; i++) w[i >>> 2] = (w[i >>> 2]! | (b[i]! << (8 * (i & 3)))) >>> 0;
  sipHashBlocks(key, w, blocks, w[blocks * 2]!, w[blocks * 2 + 1]!, len);
}

/**
 * sipHash24 of `blocks` 8-byte blocks held as 32-bit words (lo, hi per block) in `w`: the
 * same result as the byte version on a little-endian host, without the byte loads.
 */
export function sipHash24Words(key: Uint32Array, w: Uint32Array, blocks: number): void {
  sipHashBlocks(key, w, blocks, 0, 0, blocks * 8);
}

/**
 * SipHash-2-4 of `blocks` full blocks in `w` and a tail of (len mod 8) bytes given as its
 * two little-endian words, into HASH (hi, lo). Its state lives in local variables: kept in
 * module variables, the numbers are boxed and a lid cost microseconds.
 */
function sipHashBlocks(key: Uint32Array, w: Uint32Array, blocks: number, tailLo: number, tailHi: number, len: number): void {
  const k0l = key[0]!, k0h = key[1]!, k1l = key[2]!, k1h = key[3]!;
  let v0h = (k0h ^ 0x736f6d65) >>> 0, v0l = (k0l ^ 0x70736575) >>> 0;
  let v1h = (k1h ^ 0x646f7261) >>> 0, v1l = (k1l ^ 0x6e646f6d) >>> 0;
  let v2h = (k0h ^ 0x6c796765) >>> 0, v2l = (k0l ^ 0x6e657261) >>> 0;
  let v3h = (k1h ^ 0x74656462) >>> 0, v3l = (k1l ^ 0x79746573) >>> 0;
  // Blocks 0..blocks-1 are the message's words, block `blocks` the tail with the length in
  // its top byte, block blocks+1 the finalisation (v2 ^= 0xff, 4 rounds).
  for (let blk = 0; blk <= blocks + 1; blk++) {
    let mh = 0, ml = 0, rounds = 2;
    if (blk < blocks) {
      ml = w[blk << 1]!;
      mh = w[(blk << 1) + 1]!;
    } else if (blk === blocks) {
      ml = tailLo >>> 0;
      mh = (tailHi | ((len & 0xff) << 24)) >>> 0;
    } else {
      v2l = (v2l ^ 0xff) >>> 0;
      rounds = 4;
    }
    v3h = (v3h ^ mh) >>> 0; v3l = (v3l ^ ml) >>> 0;
    for (let r = 0; r < rounds; r++) {
      let l: number, h: number;
      // v0 += v1; v1 = rotl(v1, 13) ^ v0; v0 = rotl(v0, 32)
      l = (v0l + v1l) >>> 0; v0h = (v0h + v1h + (l < v0l ? 1 : 0)) >>> 0; v0l = l;
      h = (v1h << 13) | (v1l >>> 19); l = (v1l << 13) | (v1h >>> 19);
      v1h = (h ^ v0h) >>> 0; v1l = (l ^ v0l) >>> 0;
      h = v0h; v0h = v0l; v0l = h;
      // v2 += v3; v3 = rotl(v3, 16) ^ v2
      l = (v2l + v3l) >>> 0; v2h = (v2h + v3h + (l < v2l ? 1 : 0)) >>> 0; v2l = l;
      h = (v3h << 16) | (v3l >>> 16); l = (v3l << 16) | (v3h >>> 16);
      v3h = (h ^ v2h) >>> 0; v3l = (l ^ v2l) >>> 0;
      // v0 += v3; v3 = rotl(v3, 21) ^ v0
      l = (v0l + v3l) >>> 0; v0h = (v0h + v3h + (l < v0l ? 1 : 0)) >>> 0; v0l = l;
      h = (v3h << 21) | (v3l >>> 11); l = (v3l << 21) | (v3h >>> 11);
      v3h = (h ^ v0h) >>> 0; v3l = (l ^ v0l) >>> 0;
      // v2 += v1; v1 = rotl(v1, 17) ^ v2; v2 = rotl(v2, 32)
      l = (v2l + v1l) >>> 0; v2h = (v2h + v1h + (l < v2l ? 1 : 0)) >>> 0; v2l = l;
      h = (v1h << 17) | (v1l >>> 15); l = (v1l << 17) | (v1h >>> 15);
      v1h = (h ^ v2h) >>> 0; v1l = (l ^ v2l) >>> 0;
      h = v2h; v2h = v2l; v2l = h;
    }
    v0h = (v0h ^ mh) >>> 0; v0l = (v0l ^ ml) >>> 0;
  }
  HASH[0] = (v0h ^ v1h ^ v2h ^ v3h) >>> 0;
  HASH[1] = (v0l ^ v1l ^ v2l ^ v3l) >>> 0;
}

/** Typed arrays use the host's byte order; the word path is taken on little-endian hosts only. */
const LITTLE_ENDIAN = new Uint8Array(Uint32Array.of(1).buffer)[0] === 1;

// The same SipHash as WebAssembly (src/prebid/wasm/siphash.ts): 64-bit lanes, about a quarter
// of the JavaScript one's time. One instance per codec, whose lid bytes live in its memory.
interface SipExports {
  memory: WebAssembly.Memory;
  sip(blocks: number, tailLo: number, tailHi: number, len: number): void;
}

/** The compiled module; null without WebAssembly (`--jitless`) or on a big-endian host (the JavaScript SipHash then). */
const SIP_MODULE = LITTLE_ENDIAN ? compileWasm('the lid SipHash', SIPHASH_WASM) : null;

/** Whether lids are signed by the WebAssembly SipHash (tests check both agree). */
export const lidSipWasm = SIP_MODULE !== null;

// ---- base64url ----------------------------------------------------------------------------
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Character code → 6-bit value, 255 for anything outside the alphabet. */
const DECODE = new Uint8Array(128).fill(255);
for (let i = 0; i < 64; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

// ---- the codec ----------------------------------------------------------------------------

function hex2(s: string, i: number): number {
  const a = hexVal(s.charCodeAt(i));
  const b = hexVal(s.charCodeAt(i + 1));
  return a < 0 || b < 0 ? -1 : (a << 4) | b;
}

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A UUID's 16 bytes into `out` at `at`; false when `id` is not a UUID. */
function uuidBytes(id: string, out: Uint8Array, at: number): boolean {
  if (id.length !== 36) return false;
  let o = at;
  for (let i = 0; i < 36; ) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (id.charCodeAt(i) !== 45) return false;
      i++;
      continue;
    }
    const v = hex2(id, i);
    if (v < 0) return false;
    out[o++] = v;
    i += 2;
  }
  return true;
}

function uuidString(b: Uint8Array, at: number): string {
  let s = '';
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) s += '-';
    s += HEX[b[at + i]!];
  }
  return s;
}

/** The lookup's side: what a lid is made of (filled per lookup, in a reused object). */
export interface LidInput {
  customerId: string;
  band: string;
  /** Lookup time, ms. */
  at: number;
  ipNet: number;
  uaFamily: number;
  device: number;
  ipHi: number; ipLo: number;
  uidHi: number; uidLo: number;
  ifaHi: number; ifaLo: number;
  tupleHi: number; tupleLo: number;
}

export function emptyLidInput(): LidInput {
  return { customerId: '', band: 'low', at: 0, ipNet: 0, uaFamily: 0, device: 0, ipHi: 0, ipLo: 0, uidHi: 0, uidLo: 0, ifaHi: 0, ifaLo: 0, tupleHi: 0, tupleLo: 0 };
}

/** Why a lid was refused (the beacon's 400 says which). */
export type LidError = 'length' | 'alphabet' | 'version' | 'signature' | 'band' | '';

/**
 * Makes and checks lids with one secret. One per lookup thread (it holds scratch buffers);
 * the main thread has its own for the explain tool and tests.
 */
export class LidCodec {
  private readonly key: Uint32Array;
  /** Seed of the keyed digests (IP net, UA family, device): derived from the secret, so the same fleet-wide. */
  readonly digestSeed: number;
  private readonly buf: Buffer;
  private readonly u8: Uint8Array;
  private readonly u32: Uint32Array;
  /** The WebAssembly SipHash whose memory holds buf (null: the JavaScript one), and its tag (hi, lo). */
  private readonly sip: SipExports | null;
  private readonly tag: Uint32Array;
  private readonly customerWords = new Uint32Array(4);
  private readCustomer = '';
  private readonly readCustomerWords = new Uint32Array(4);
  private counter: number;
  private readonly salt: number;
  /** The last customer id's bytes (most lookups in a row share one). */
  private lastCustomer = '';

  constructor(secret: Uint8Array, salt = (Math.random() * 4294967296) >>> 0, useWasm = true) {
    this.key = sipKey(secret);
    this.digestSeed = fmix32(this.key[0]! ^ fmix32(this.key[3]! ^ 0x11d5eed));
    this.sip = useWasm && SIP_MODULE !== null ? instantiateWasm<SipExports>(SIP_MODULE) : null;
    let ab: ArrayBuffer, at = 0;
    if (this.sip !== null) {
      const mem = this.sip.memory.buffer;
      new Uint32Array(mem, wasmGlobal(this.sip, 'KEY'), 4).set(this.key);
      at = wasmGlobal(this.sip, 'MSG');
      if (wasmGlobal(this.sip, 'MSG_CAPACITY') < LID_BYTES) throw new Error('siphash: its message room is smaller than a lid');
      ab = mem;
      this.tag = new Uint32Array(mem, wasmGlobal(this.sip, 'TAG'), 2);
    } else {
      ab = new ArrayBuffer(LID_BYTES);
      this.tag = HASH;
    }
    this.buf = Buffer.from(ab, at, LID_BYTES);
    this.u8 = new Uint8Array(ab, at, LID_BYTES);
    this.u32 = new Uint32Array(ab, at, LID_BYTES / 4);
    this.salt = salt >>> 0;
    this.counter = fmix32(this.salt ^ 0x5a5a5a5a) | 0;
  }

  /** Digest of the device's network: the /24 of an IPv4 address, the /48 of an IPv6 one. */
  ipNetDigest(ip: ParsedIp): number {
    if (ip.v === 4) hashWords(24, ip.n >>> 8, 0, 0, 0, this.digestSeed);
    else hashWords(48, ip.w[0]!, ip.w[1]! >>> 16, 0, 0, this.digestSeed);
    return HASH[1]!;
  }

  /** Digest of a UA family: its OS and browser codes (src/signals/ua-analysis.ts). */
  uaFamilyDigest(os: string, browser: string): number {
    // The codes are few and known: their positions, mixed (no pass over the strings).
    const o = OS_INDEX.get(os);
    const b = BROWSER_INDEX.get(browser);
    if (o !== undefined && b !== undefined) return fmix32(this.digestSeed ^ ((o << 12) | b | 0x1000000)) & 0xffff;
    hashBegin(this.digestSeed ^ 0x0a0a);
    hashAdd(os);
    hashAddNumber(0);
    hashAdd(browser);
    hashEnd();
    return HASH[1]! & 0xffff;
  }

  /** Digest of the device id (IFA, else uid; '' → 0), case-insensitive. */
  deviceDigest(id: string): number {
    if (id === '') return 0;
    hashStringLower(id, this.digestSeed ^ 0xde71ce);
    return (HASH[1]! & 0xffff) || 1;
  }

  /** The lid of one lookup, or '' when its customer id is not a UUID (no lid then). */
  make(x: LidInput): string {
    const w = this.u32;
    if (x.customerId !== this.lastCustomer) {
      if (!uuidBytes(x.customerId, this.u8, 8)) return '';
      this.lastCustomer = x.customerId;
      this.customerWords.set(w.subarray(2, 6));
    } else {
      w.set(this.customerWords, 2);
    }
    const t = x.at;
    const tl = t >>> 0;
    const th = Math.floor(t / 4294967296) & 0xffff;
    // Words as the byte layout reads on a little-endian host (see the top of the file).
    w[0] = (LID_VERSION | ((x.band === 'high' ? 2 : x.band === 'medium' ? 1 : 0) << 8) | ((tl & 0xffff) << 16)) >>> 0;
    w[1] = ((tl >>> 16) | (th << 16)) >>> 0;
    this.counter = (this.counter + 1) | 0;
    w[6] = this.counter;
    w[7] = this.salt;
    w[8] = x.ipNet;
    w[9] = ((x.uaFamily & 0xffff) | ((x.device & 0xffff) << 16)) >>> 0;
    w[10] = x.ipHi; w[11] = x.ipLo;
    w[12] = x.uidHi; w[13] = x.uidLo;
    w[14] = x.ifaHi; w[15] = x.ifaLo;
    w[16] = x.tupleHi; w[17] = x.tupleLo;
    this.sign();
    w[18] = HASH[0]!;
    w[19] = HASH[1]!;
    return this.buf.toString('base64url', 0, LID_BYTES);
  }

  /** The tag of bytes 0..71 into HASH. */
  private sign(): void {
    const sip = this.sip;
    if (sip !== null) {
      sip.sip(SIGNED_BYTES / 8, 0, 0, SIGNED_BYTES);
      const t = this.tag;
      HASH[0] = t[0]!;
      HASH[1] = t[1]!;
    } else if (LITTLE_ENDIAN) sipHash24Words(this.key, this.u32, SIGNED_BYTES / 8);
    else sipHash24(this.key, this.u8, SIGNED_BYTES);
  }

  /** Checks a lid and fills `out`; '' when it is genuine, else why not. */
  read(lid: string, out: LidFacts): LidError {
    if (lid.length !== LID_CHARS) return 'length';
    for (let i = 0; i < lid.length; i++) {
      const c = lid.charCodeAt(i);
      if (c >= 128 || DECODE[c] === 255) return 'alphabet';
    }
    // The last character's spare bits are not part of the bytes: only the text that was made
    // (those bits 0) is the lid, so no other text reads as the same one.
    if ((DECODE[lid.charCodeAt(LID_CHARS - 1)]! & SPARE_BITS) !== 0) return 'signature';
    const b = this.u8;
    this.buf.write(lid, 0, LID_BYTES, 'base64url');
    if (b[0] !== LID_VERSION) return 'version';
    this.sign();
    const tagHi = get32(b, 72), tagLo = get32(b, 76);
    // Not constant-time: a 64-bit tag cannot be guessed byte by byte over the network's jitter.
    if (tagHi !== HASH[0] || tagLo !== HASH[1]) return 'signature';
    if (b[1]! > 2) return 'band';
    out.band = BANDS[b[1]!]!;
    out.at = (b[2]! | (b[3]! << 8) | (b[4]! << 16) | (b[5]! << 24)) >>> 0;
    out.at += (b[6]! | (b[7]! << 8)) * 4294967296;
    out.customerId = this.customerOf(b);
    out.ipNet = get32(b, 32);
    out.uaFamily = b[36]! | (b[37]! << 8);
    out.device = b[38]! | (b[39]! << 8);
    out.ipHi = get32(b, 40); out.ipLo = get32(b, 44);
    out.uidHi = get32(b, 48); out.uidLo = get32(b, 52);
    out.ifaHi = get32(b, 56); out.ifaLo = get32(b, 60);
    out.tupleHi = get32(b, 64); out.tupleLo = get32(b, 68);
    out.tagHi = tagHi;
    out.tagLo = tagLo;
    return '';
  }

  /** The customer id of a read lid: the last one's string again when the bytes are the same. */
  private customerOf(b: Uint8Array): string {
    const w = this.u32;
    const c = this.readCustomerWords;
    if (this.readCustomer !== '' && w[2] === c[0] && w[3] === c[1] && w[4] === c[2] && w[5] === c[3]) return this.readCustomer;
    c.set(w.subarray(2, 6));
    this.readCustomer = uuidString(b, 8);
    return this.readCustomer;
  }
}

/**
 * The history's hash seed for a lid secret: keyed by the secret (unpredictable without it),
 * and the same wherever the secret is, so the history keys a lid carries (IP, uid, IFA)
 * name the same keys on every host of a fleet and after a restart.
 */
export function historySeedFor(secret: Uint8Array): number {
  const k = sipKey(secret);
  return fmix32(k[1]! ^ fmix32(k[2]! ^ 0x4157a7e5)) >>> 0;
}

/**
 * The reporting tuples' hash seed for a lid secret (LookupMemory.counts.seed): keyed by the
 * secret like historySeedFor, so a tuple hashes the same after a restart and the tuple hash
 * a lid carries still names its lookup's tuple in the next run (src/reporting/tuple-archive.ts).
 */
export function tupleSeedFor(secret: Uint8Array): number {
  const k = sipKey(secret);
  return fmix32(k[0]! ^ fmix32(k[3]! ^ 0x7091e5a1)) >>> 0;
}

function get32(b: Uint8Array, i: number): number {
  return (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;
}
