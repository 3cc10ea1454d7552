// Properties of the supply-chain parser (src/signals/schain.ts), drawn by fast-check (seeded:
// test/helpers/property.ts): a chain printed in the IAB string form (each field URL-encoded,
// `,` and `!` literal), or that form URL-encoded once more, parses back to itself; whatever
// parses, printed again, parses to the same chain (parse → print → parse); nothing throws.
import t from 'tap';
import fc from 'fast-check';
import { parseSchain, SCHAIN_ERRORS, SCHAIN_MAX_LENGTH, SCHAIN_MAX_NODES, type SupplyChain } from '../../src/signals/schain.ts';
import { checkProperty } from '../helpers/property.ts';

/** The IAB string form: `ver,complete!asi,sid,hp,rid,name,domain!…`, each field encodeURIComponent'd. */
function print(c: SupplyChain): string {
  // (encodeURIComponent leaves '!' as it is: the node delimiter is encoded here too.)
  const e = (f: string) => encodeURIComponent(f).replaceAll('!', '%21');
  return `${c.ver},${c.complete}` + c.nodes.map((n) => `!${e(n.asi)},${e(n.sid)},${n.hp},${e(n.rid)},${e(n.name)},${e(n.domain)}`).join('');
}

const text = (min: number) =>
  fc
    .array(fc.oneof(fc.string({ unit: 'grapheme', maxLength: 6 }), fc.constantFrom(',', '!', '%', '%2C', ' ', '+', '&', '=', '\t', 'é', '😀')), { minLength: min, maxLength: 5 })
    .map((a) => a.join(''))
    .filter((s) => s.isWellFormed() && s.length >= min);
const nonBlank = text(1).filter((s) => /[^ \t]/.test(s));
const node = fc.record({ asi: nonBlank, sid: nonBlank, hp: fc.constantFrom(0 as const, 1 as const), rid: text(0), name: text(0), domain: text(0) });
const chain: fc.Arbitrary<SupplyChain> = fc.record({
  ver: fc.tuple(fc.integer({ min: 0, max: 999 }), fc.integer({ min: 0, max: 999 })).map(([a, b]) => `${a}.${b}`),
  complete: fc.constantFrom(0 as const, 1 as const),
  nodes: fc.array(node, { minLength: 1, maxLength: SCHAIN_MAX_NODES }),
});
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

t.test('a chain printed in the string form parses back to itself', async (t) => {
  checkProperty(
    t,
    'print → parse (fields without a percent sign)',
    fc.property(chain, (c) => {
      // A field holding '%' prints as %25, which the parser reads as the sign of a value
      // encoded twice (schain.ts, "Decisions"): the twice-encoded form below covers those.
      if (c.nodes.some((n) => [n.asi, n.sid, n.rid, n.name, n.domain].some((f) => f.includes('%')))) return;
      const s = print(c);
      if (s.length > SCHAIN_MAX_LENGTH) return;
      const r = parseSchain(s);
      if (!r.ok) throw new Error(`refused (${r.error}): ${s}`);
      if (!same(r.chain, c)) throw new Error(`read ${JSON.stringify(r.chain)}`);
    }),
    2000,
  );
  checkProperty(
    t,
    'print, encode once more → parse (any fields)',
    fc.property(chain, (c) => {
      const s = encodeURIComponent(print(c));
      if (s.length > SCHAIN_MAX_LENGTH) return;
      const r = parseSchain(s);
      if (!r.ok) throw new Error(`refused (${r.error}): ${s}`);
      if (!same(r.chain, c)) throw new Error(`read ${JSON.stringify(r.chain)}`);
    }),
    2000,
  );
});

t.test('parse → print → parse: whatever parses prints to a text that parses to the same chain', async (t) => {
  // Texts near the grammar: delimiters, digits, escapes good and broken, blanks, the header's forms.
  const piece = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(',', '!', '1', '0', '1.0', 'a', 'x.com', '%2C', '%21', '%25', '%2525', '%', '%zz', '%FF', '%C3%A9', ' ', '\t', '+', '') },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 4 }) },
  );
  const field = fc.array(piece, { maxLength: 3 }).map((a) => a.join(''));
  const word = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('a', 'x.com', 'ex%2Cchange', '12%21', '%C3%A9', 'a+b') }, { weight: 1, arbitrary: field });
  const nodeText = fc
    .tuple(word, word, fc.oneof({ weight: 4, arbitrary: fc.constantFrom('0', '1') }, { weight: 1, arbitrary: field }), fc.array(word, { maxLength: 5 }))
    .map(([asi, sid, hp, rest]) => [asi, sid, hp, ...rest].join(','));
  const raw = fc.oneof(
    fc.array(piece, { maxLength: 30 }).map((a) => a.join('')),
    fc
      .tuple(fc.constantFrom('1.0,1', '1.0,0', '1.0', '1.0,2', '1,1', '2.11,1', ''), fc.array(nodeText, { maxLength: 4 }), fc.boolean())
      .map(([h, ns, twice]) => {
        const s = [h, ...ns].join('!');
        return twice ? encodeURIComponent(s) : s;
      }),
  );
  let parsed = 0;
  const errors = new Set<string>(SCHAIN_ERRORS);
  checkProperty(
    t,
    'parse, print, parse',
    fc.property(raw, (s) => {
      const r = parseSchain(s);
      if (!r.ok) {
        if (!errors.has(r.error)) throw new Error(`an unknown error ${r.error}`);
        return;
      }
      parsed++;
      const again = parseSchain(encodeURIComponent(print(r.chain)));
      if (!again.ok) throw new Error(`printed ${print(r.chain)}, refused: ${again.error}`);
      if (!same(again.chain, r.chain)) throw new Error(`printed and read ${JSON.stringify(again.chain)}, first ${JSON.stringify(r.chain)}`);
    }),
    5000,
  );
  t.ok(parsed > 50, `chains were drawn that parse (${parsed})`);
});
