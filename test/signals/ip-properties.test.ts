// IP parsing (src/signals/ip-address.ts) against ipaddr.js, drawn by fast-check (seeded:
// test/helpers/property.ts). ipaddr.js is more lenient than spec 4.4 (octal, hex and short
// IPv4 forms, zone ids): the reference here is ipaddr.js restricted to the strict forms
// (four-part decimal IPv4; IPv6 without a zone id), and where both read a text they read
// the same address (an IPv4-mapped IPv6 as its IPv4).
import t from 'tap';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { formatIp, parseIp } from '../../src/signals/ip-address.ts';
import { checkProperty } from '../helpers/property.ts';

/** The reference: what ipaddr.js reads of `s` under the strict rules, as ours is shaped; null when not an address. */
function reference(s: string): { v: 4; n: number } | { v: 6; w: number[] } | null {
  if (s.indexOf(':') === -1) {
    if (!ipaddr.IPv4.isValidFourPartDecimal(s)) return null;
    const o = ipaddr.IPv4.parse(s).octets;
    return { v: 4, n: ((o[0]! << 24) | (o[1]! << 16) | (o[2]! << 8) | o[3]!) >>> 0 };
  }
  if (s.includes('%') || !ipaddr.IPv6.isValid(s)) return null;
  // An embedded IPv4 tail under the IPv4 rules (ipaddr.js takes "0.100.0.00" there).
  const tail = s.lastIndexOf(':');
  if (s.indexOf('.', tail) !== -1 && !ipaddr.IPv4.isValidFourPartDecimal(s.slice(tail + 1))) return null;
  const p = ipaddr.IPv6.parse(s).parts;
  if (p.slice(0, 5).every((x) => x === 0) && p[5] === 0xffff) return { v: 4, n: (p[6]! * 65536 + p[7]!) >>> 0 };
  return { v: 6, w: [0, 1, 2, 3].map((k) => (p[2 * k]! * 65536 + p[2 * k + 1]!) >>> 0) };
}

const ours = (s: string) => {
  const ip = parseIp(s);
  return ip === null ? null : ip.v === 4 ? { v: 4, n: ip.n } : { v: 6, w: [...ip.w] };
};

/** IPv6 texts in every form: compressed at any run, mixed case, leading zeros, an embedded IPv4 tail. */
const v6Text = fc
  .tuple(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }), fc.nat(), fc.nat(), fc.boolean(), fc.boolean(), fc.boolean())
  .map(([g, from, len, upper, pad, v4tail]) => {
    const words = g.map((x) => (pad ? x.toString(16).padStart(4, '0') : x.toString(16)));
    if (v4tail) words.splice(6, 2, `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`);
    const n = words.length;
    const a = from % n;
    const b = Math.min(n, a + (len % (n - a + 1)));
    let s = b > a ? `${words.slice(0, a).join(':')}::${words.slice(b).join(':')}` : words.join(':');
    if (upper) s = s.toUpperCase();
    return s;
  });
const v4Text = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
const mapped = fc.tuple(v4Text, fc.boolean()).map(([v4, hex]) => {
  if (!hex) return `::ffff:${v4}`;
  const o = v4.split('.').map(Number);
  return `::ffff:${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
});
/** The same texts damaged: a character deleted, doubled or replaced by one of the grammar's. */
const damaged = fc
  .tuple(fc.oneof(v4Text, v6Text, mapped), fc.nat(), fc.constantFrom('', '.', ':', '::', '0', '00', 'f', 'g', 'x', ' ', '%eth0', '/24', '1', '256', 'ffff0', '-'), fc.constantFrom('delete', 'insert', 'replace'))
  .map(([s, at, c, how]) => {
    const i = s.length === 0 ? 0 : at % s.length;
    return how === 'delete' ? s.slice(0, i) + s.slice(i + 1) : how === 'insert' ? s.slice(0, i) + c + s.slice(i) : s.slice(0, i) + c + s.slice(i + 1);
  });

t.test('parseIp reads what ipaddr.js reads (its strict forms: four-part decimal IPv4, here and as an IPv6 tail; no zone id), and the same address', async (t) => {
  let read = 0;
  let refused = 0;
  checkProperty(
    t,
    'ipaddr.js differential',
    fc.property(fc.oneof(v4Text, v6Text, mapped, damaged, damaged, fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF.:'), maxLength: 45 })), (s) => {
      const want = reference(s);
      const got = ours(s);
      // RFC 4291's deprecated "IPv4-compatible" form (::a.b.c.d): ipaddr.js reads it as mapped (test/signals/ip.test.ts).
      if (want !== null && got !== null && /^::(\d+\.){3}\d+$/.test(s)) return;
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${JSON.stringify(s)}: ours ${JSON.stringify(got)}, ipaddr.js ${JSON.stringify(want)}`);
      if (got === null) refused++;
      else read++;
    }),
    5000,
  );
  t.ok(read > 1000 && refused > 500, `both verdicts were drawn (${read} read, ${refused} refused)`);
});

t.test('formatIp → parseIp is the identity, and ipaddr.js reads the text as the same address', async (t) => {
  checkProperty(
    t,
    'format, parse',
    fc.property(fc.oneof(v4Text, v6Text), (s) => {
      const ip = parseIp(s)!;
      const text = formatIp(ip);
      if (JSON.stringify(ours(text)) !== JSON.stringify(ours(s))) throw new Error(`${s} → ${text} → ${JSON.stringify(ours(text))}`);
      if (JSON.stringify(reference(text)) !== JSON.stringify(ours(s))) throw new Error(`ipaddr.js reads ${text} otherwise`);
    }),
    3000,
  );
});
