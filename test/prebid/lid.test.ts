// The lookup id codec (src/prebid/lid.ts): SipHash-2-4 against the reference vectors, the
// word path equal to the byte path, every field back as it was made, and every kind of
// damage refused.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { HASH } from '../../src/memory/hash.ts';
import { LID_BYTES, LID_CHARS, LidCodec, emptyLidFacts, emptyLidInput, lidSipWasm, sipHash24, sipHash24Words, sipKey } from '../../src/prebid/lid.ts';
import { parseIp } from '../../src/signals/ip-address.ts';

const hex = (hi: number, lo: number) => hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');

t.test('SipHash-2-4: the reference vectors (key 00..0f, message 00..n-1)', async (t) => {
  const key = sipKey(Uint8Array.from({ length: 16 }, (_, i) => i));
  const msg = Uint8Array.from({ length: 64 }, (_, i) => i);
  const want: Record<number, string> = { 0: '726fdb47dd0e0e31', 1: '74f839c593dc67fd', 8: '93f5f5799a932462', 15: 'a129ca6149be45e5' };
  for (const [n, h] of Object.entries(want)) {
    sipHash24(key, msg, Number(n));
    t.equal(hex(HASH[0]!, HASH[1]!), h, `${n} bytes`);
  }
});

t.test('the word path gives the byte path\'s tag', async (t) => {
  const key = sipKey(randomBytes(16));
  for (let round = 0; round < 50; round++) {
    const bytes = new Uint8Array(randomBytes(72));
    sipHash24(key, bytes, 72);
    const a = hex(HASH[0]!, HASH[1]!);
    sipHash24Words(key, new Uint32Array(bytes.buffer, bytes.byteOffset, 18), 9);
    t.equal(hex(HASH[0]!, HASH[1]!), a);
  }
});

function sample(codec: LidCodec) {
  const x = emptyLidInput();
  x.customerId = '0b6c7c8e-3a52-4f0e-9a51-5d2f3e4a1b2c';
  x.band = 'medium';
  x.at = 1_763_950_000_123;
  x.ipNet = codec.ipNetDigest(parseIp('203.0.113.77')!);
  x.uaFamily = codec.uaFamilyDigest('android', 'chrome');
  x.device = codec.deviceDigest('6D92078A-8246-4BA4-AE5B-76104861E7DC');
  x.ipHi = 0xdeadbeef; x.ipLo = 0x01020304;
  x.uidHi = 0; x.uidLo = 0;
  x.ifaHi = 0xcafebabe; x.ifaLo = 0xfffffff1;
  x.tupleHi = 0x80000001; x.tupleLo = 0x7fffffff;
  return x;
}

t.test('the WebAssembly SipHash signs as the JavaScript one: same lids, each reads the other\'s', async (t) => {
  t.ok(lidSipWasm, 'this Node signs lids with the WebAssembly SipHash');
  for (let round = 0; round < 200; round++) {
    const secret = randomBytes(16);
    const salt = randomBytes(4).readUInt32LE(0);
    const wasm = new LidCodec(secret, salt);
    const js = new LidCodec(secret, salt, false);
    const x = sample(wasm);
    x.at = 1_700_000_000_000 + round * 7919;
    x.band = (['low', 'medium', 'high'] as const)[round % 3]!;
    const w = randomBytes(32);
    x.ipHi = w.readUInt32LE(0); x.ipLo = w.readUInt32LE(4); x.uidHi = w.readUInt32LE(8); x.uidLo = w.readUInt32LE(12);
    x.ifaHi = w.readUInt32LE(16); x.ifaLo = w.readUInt32LE(20); x.tupleHi = w.readUInt32LE(24); x.tupleLo = w.readUInt32LE(28);
    const a = wasm.make(x);
    const b = js.make(x);
    if (a !== b) return t.fail(`round ${round}: ${a} !== ${b}`);
    const f = emptyLidFacts();
    if (js.read(a, f) !== '' || wasm.read(b, f) !== '') return t.fail(`round ${round}: refused`);
  }
  t.pass('200 random lids alike');
  // A flipped bit in the tag is refused by both.
  const secret = randomBytes(16);
  const lid = new LidCodec(secret).make(sample(new LidCodec(secret)));
  const bad = lid.slice(0, -2) + (lid.at(-2) === 'A' ? 'B' : 'A') + lid.at(-1);
  t.equal(new LidCodec(secret).read(bad, emptyLidFacts()), 'signature');
  t.equal(new LidCodec(secret, 1, false).read(bad, emptyLidFacts()), 'signature');
});

t.test('a lid is URL-safe, at most 160 characters, and reads back as made', async (t) => {
  const secret = randomBytes(16);
  const codec = new LidCodec(secret);
  const x = sample(codec);
  const lid = codec.make(x);
  t.equal(lid.length, LID_CHARS);
  t.ok(lid.length <= 160);
  t.match(lid, /^[A-Za-z0-9_-]+$/);
  t.equal(encodeURIComponent(lid), lid, 'nothing to escape in a URL');
  // Another thread (another codec, same secret) reads it.
  const f = emptyLidFacts();
  t.equal(new LidCodec(secret).read(lid, f), '');
  t.match(f, {
    band: 'medium', at: x.at, customerId: x.customerId, ipNet: x.ipNet, uaFamily: x.uaFamily, device: x.device,
    ipHi: x.ipHi, ipLo: x.ipLo, uidHi: 0, uidLo: 0, ifaHi: x.ifaHi, ifaLo: x.ifaLo, tupleHi: x.tupleHi, tupleLo: x.tupleLo,
  });
  t.equal(x.device, codec.deviceDigest('6d92078a-8246-4ba4-ae5b-76104861e7dc'), 'the device digest ignores case');
  t.equal(codec.ipNetDigest(parseIp('203.0.113.1')!), x.ipNet, 'same /24, same digest');
  t.not(codec.ipNetDigest(parseIp('203.0.114.77')!), x.ipNet, 'another /24, another digest');
  t.equal(codec.ipNetDigest(parseIp('2001:db8:1:ffff::1')!), codec.ipNetDigest(parseIp('2001:db8:1:2::9')!), 'same /48');
  t.not(codec.ipNetDigest(parseIp('2001:db8:2::1')!), codec.ipNetDigest(parseIp('2001:db8:1::1')!), 'another /48');
  // Each lookup its own lid, even at the same millisecond with the same everything.
  const again = codec.make(x);
  t.not(again, lid);
  const g = emptyLidFacts();
  t.equal(codec.read(again, g), '');
  t.not(hex(g.tagHi, g.tagLo), hex(f.tagHi, f.tagLo), 'another tag: replays are told apart');
  for (const band of ['low', 'high'] as const) {
    x.band = band;
    t.equal(codec.read(codec.make(x), f), '');
    t.equal(f.band, band);
  }
});

t.test('forged, damaged and foreign lids are refused, and say why', async (t) => {
  const codec = new LidCodec(randomBytes(16));
  const lid = codec.make(sample(codec));
  const f = emptyLidFacts();
  t.equal(codec.read('', f), 'length');
  t.equal(codec.read(lid + 'A', f), 'length');
  t.equal(codec.read(lid.slice(1), f), 'length');
  t.equal(codec.read(lid.slice(0, -1) + '=', f), 'alphabet');
  t.equal(codec.read(lid.slice(0, 50) + '+' + lid.slice(51), f), 'alphabet');
  t.equal(codec.read(lid.slice(0, 50) + 'é' + lid.slice(51), f), 'alphabet');
  // Every position changed in turn: none is accepted (the tag covers every byte it reads).
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let accepted = 0;
  for (let i = 0; i < lid.length - 1; i++) {
    const c = alphabet[(alphabet.indexOf(lid[i]!) + 1) % 64]!;
    if (codec.read(lid.slice(0, i) + c + lid.slice(i + 1), f) === '') accepted++;
  }
  t.equal(accepted, 0, 'no altered lid is genuine');
  t.equal(new LidCodec(randomBytes(16)).read(lid, f), 'signature', "another secret's lid");
  const bytes = Buffer.from(lid, 'base64url');
  t.equal(bytes.length, LID_BYTES);
  bytes[0] = 9;
  t.equal(codec.read(bytes.toString('base64url'), f), 'version');
  t.equal(codec.read(lid, f), '', 'the genuine one still reads');
});

t.test('a customer id that is not a UUID gets no lid (and no crash)', async (t) => {
  const codec = new LidCodec(randomBytes(16));
  const x = sample(codec);
  x.customerId = 'not-a-uuid';
  t.equal(codec.make(x), '');
  x.customerId = '0b6c7c8e-3a52-4f0e-9a51-5d2f3e4a1b2g';
  t.equal(codec.make(x), '');
});
