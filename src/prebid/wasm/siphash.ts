// AssemblyScript, not TypeScript: compiled to WebAssembly by tools/build-wasm.ts (`asc`), and
// the module embedded as src/prebid/siphash-wasm.ts. Excluded from tsc (tsconfig.json).
//
// SipHash-2-4 for the lookup id's tag (src/prebid/lid.ts): the same function as lid.ts's
// JavaScript one, in native 64-bit lanes (JavaScript's works in 32-bit halves, about four
// times the instructions; this is ~0.1 µs of a lookup instead of ~0.4).
//
// Memory (one instance per LidCodec, not shared): the key at KEY (k0, k1, little-endian),
// the message at MSG (the codec's lid bytes live there), the tag written at TAG as two u32
// words, high then low (the order of lid.ts's HASH).

export const KEY: i32 = 0;
export const MSG: i32 = 16;
/** Room for the message: the lid's 80 bytes, with margin. */
export const MSG_CAPACITY: i32 = 128;
export const TAG: i32 = MSG + MSG_CAPACITY;

/**
 * The tag of `blocks` 8-byte blocks at MSG and a tail of (len mod 8) bytes given as its two
 * little-endian words (tailLo, tailHi), into TAG.
 */
export function sip(blocks: i32, tailLo: u32, tailHi: u32, len: i32): void {
  const k0 = load<u64>(KEY), k1 = load<u64>(KEY + 8);
  let v0: u64 = k0 ^ 0x736f6d6570736575;
  let v1: u64 = k1 ^ 0x646f72616e646f6d;
  let v2: u64 = k0 ^ 0x6c7967656e657261;
  let v3: u64 = k1 ^ 0x7465646279746573;
  // Blocks 0..blocks-1 are the message, block `blocks` the tail with the length in its top
  // byte, block blocks+1 the finalisation (v2 ^= 0xff, four rounds).
  for (let i = 0; i <= blocks + 1; i++) {
    let m: u64 = 0;
    let rounds = 2;
    if (i < blocks) m = load<u64>(MSG + (i << 3));
    else if (i === blocks) m = <u64>tailLo | (<u64>tailHi << 32) | (<u64>(len & 0xff) << 56);
    else {
      v2 ^= 0xff;
      rounds = 4;
    }
    v3 ^= m;
    for (let r = 0; r < rounds; r++) {
      v0 += v1; v1 = rotl<u64>(v1, 13); v1 ^= v0; v0 = rotl<u64>(v0, 32);
      v2 += v3; v3 = rotl<u64>(v3, 16); v3 ^= v2;
      v0 += v3; v3 = rotl<u64>(v3, 21); v3 ^= v0;
      v2 += v1; v1 = rotl<u64>(v1, 17); v1 ^= v2; v2 = rotl<u64>(v2, 32);
    }
    v0 ^= m;
  }
  const t: u64 = v0 ^ v1 ^ v2 ^ v3;
  store<u32>(TAG, <u32>(t >>> 32));
  store<u32>(TAG + 4, <u32>t);
}
