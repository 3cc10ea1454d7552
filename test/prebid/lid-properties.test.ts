// Properties of the lookup id (src/prebid/lid.ts), drawn by fast-check (seeded:
// test/helpers/property.ts): whatever a lookup signs reads back as it was made, by the
// WebAssembly SipHash and the JavaScript one alike; any one-bit change of the token (of its
// bytes, or of its text's characters, the last one's spare bits among them) is refused; a
// token made with another secret is refused; no text of any other shape is read.
import t from 'tap';
import fc from 'fast-check';
import { LID_BYTES, LID_CHARS, LidCodec, emptyLidFacts, emptyLidInput, lidSipWasm, type LidInput } from '../../src/prebid/lid.ts';
import { checkProperty, PROPERTY_SEED } from '../helpers/property.ts';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const u32 = fc.integer({ min: 0, max: 0xffffffff });
const u16 = fc.integer({ min: 0, max: 0xffff });
const input: fc.Arbitrary<LidInput> = fc.record({
  customerId: fc.uuid({ version: [1, 2, 3, 4, 5] }).chain((u) => fc.constantFrom(u, u.toUpperCase())),
  band: fc.constantFrom('low', 'medium', 'high'),
  at: fc.integer({ min: 0, max: 2 ** 48 - 1 }),
  ipNet: u32, uaFamily: u16, device: u16,
  ipHi: u32, ipLo: u32, uidHi: u32, uidLo: u32, ifaHi: u32, ifaLo: u32, tupleHi: u32, tupleLo: u32,
});
const secret = fc.uint8Array({ minLength: 16, maxLength: 16 });
// Codecs are made once for a pool of drawn secrets (making one instantiates its WebAssembly).
const POOL = fc.sample(fc.tuple(secret, u32), { numRuns: 16, seed: PROPERTY_SEED }).map(([key, salt]) => ({ key, wasm: new LidCodec(key, salt, true), js: new LidCodec(key, salt, false), other: new LidCodec(key) }));
const pooled = fc.constantFrom(...POOL);

t.test('sign → verify: every field back as it was made, by both SipHash implementations', async (t) => {
  if (!lidSipWasm) t.comment('no WebAssembly here: the JavaScript SipHash twice');
  checkProperty(
    t,
    'sign then verify',
    fc.property(pooled, input, ({ wasm, js, other }, x) => {
      const lid = wasm.make(x);
      if (lid.length !== LID_CHARS || !/^[A-Za-z0-9_-]+$/.test(lid)) throw new Error(`not a lid: ${lid}`);
      if (js.make(x) !== lid) throw new Error('the two SipHash implementations made different lids');
      for (const reader of [wasm, js, other]) {
        const f = emptyLidFacts();
        const err = reader.read(lid, f);
        if (err !== '') throw new Error(`refused: ${err}`);
        const { tagHi, tagLo, ...facts } = f;
        const want = { ...x, customerId: x.customerId.toLowerCase(), uaFamily: x.uaFamily & 0xffff, device: x.device & 0xffff };
        if (JSON.stringify(facts, Object.keys(want).sort()) !== JSON.stringify(want, Object.keys(want).sort())) throw new Error(`read ${JSON.stringify(facts)}, made ${JSON.stringify(want)}`);
        if (tagHi === 0 && tagLo === 0) throw new Error('no tag');
      }
    }),
    1000,
  );
});

t.test('any one-bit change is refused: of the bytes, of the characters, and of the secret', async (t) => {
  const f = emptyLidFacts();
  checkProperty(
    t,
    'one bit of the bytes',
    fc.property(pooled, input, fc.integer({ min: 0, max: LID_BYTES * 8 - 1 }), ({ wasm: codec }, x, bit) => {
      const bytes = Buffer.from(codec.make(x), 'base64url');
      bytes[bit >> 3]! ^= 1 << (bit & 7);
      const err = codec.read(bytes.toString('base64url'), f);
      if (err === '') throw new Error(`bit ${bit} changed and the lid was still read`);
    }),
    2000,
  );
  checkProperty(
    t,
    'one bit of a character',
    fc.property(pooled, input, fc.integer({ min: 0, max: LID_CHARS - 1 }), fc.integer({ min: 0, max: 7 }), ({ js: codec }, x, at, bit) => {
      const lid = codec.make(x);
      const c = lid.charCodeAt(at) ^ (1 << bit);
      // Within the alphabet (the sixth bit of the last character's value among them), or out of it.
      const changed = lid.slice(0, at) + String.fromCharCode(c) + lid.slice(at + 1);
      const err = codec.read(changed, f);
      if (err === '') throw new Error(`character ${at} changed (${lid[at]} → ${String.fromCharCode(c)}) and the lid was still read`);
    }),
    2000,
  );
  checkProperty(
    t,
    'one bit of a character\'s value (every other text of the alphabet)',
    fc.property(pooled, input, fc.integer({ min: 0, max: LID_CHARS - 1 }), fc.integer({ min: 0, max: 5 }), ({ wasm: codec }, x, at, bit) => {
      const lid = codec.make(x);
      const changed = lid.slice(0, at) + ALPHABET[ALPHABET.indexOf(lid[at]!) ^ (1 << bit)] + lid.slice(at + 1);
      if (codec.read(changed, f) !== 'signature' && codec.read(changed, f) !== 'version') throw new Error(`character ${at}, bit ${bit}: read as ${JSON.stringify(codec.read(changed, f))}`);
    }),
    2000,
  );
  checkProperty(
    t,
    'one bit of the secret',
    fc.property(pooled, input, fc.integer({ min: 0, max: 127 }), ({ key, wasm }, x, bit) => {
      const lid = wasm.make(x);
      const other = Uint8Array.from(key);
      other[bit >> 3]! ^= 1 << (bit & 7);
      if (new LidCodec(other, 0, false).read(lid, f) !== 'signature') throw new Error(`secret bit ${bit} changed and the lid was still read`);
    }),
    500,
  );
});

t.test('no other text is read as a lid', async (t) => {
  const codec = new LidCodec(new Uint8Array(16).fill(9));
  const f = emptyLidFacts();
  const texts = fc.oneof(
    fc.string({ unit: fc.constantFrom(...ALPHABET), minLength: LID_CHARS, maxLength: LID_CHARS }),
    fc.string({ unit: 'binary', maxLength: 2 * LID_CHARS }),
    fc.string({ unit: fc.constantFrom(...ALPHABET, '=', '+', '/', '%'), minLength: LID_CHARS - 2, maxLength: LID_CHARS + 2 }),
  );
  checkProperty(
    t,
    'random texts refused',
    fc.property(texts, (s) => {
      if (codec.read(s, f) === '') throw new Error(`read ${JSON.stringify(s)}`);
    }),
    5000,
  );
});

t.test('the last character\'s spare bits: only the text made is read (found by the one-bit property)', async (t) => {
  const codec = new LidCodec(new Uint8Array(16).fill(3), 1);
  const x = emptyLidInput();
  x.customerId = '0b6c7c8e-3a52-4f0e-9a51-5d2f3e4a1b2c';
  const lid = codec.make(x);
  const v = ALPHABET.indexOf(lid[LID_CHARS - 1]!);
  t.equal(v & 3, 0, 'the lid made has them 0');
  for (const b of [1, 2, 3]) t.equal(codec.read(lid.slice(0, -1) + ALPHABET[v | b], emptyLidFacts()), 'signature', `spare bits ${b}: refused`);
  t.equal(codec.read(lid, emptyLidFacts()), '', 'the lid itself is read');
});
