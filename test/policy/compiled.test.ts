// The compiled policy against a plain reference (a linear scan over the entries), and the
// validation of hostile entries.
import t from 'tap';
import { ALLOW, DENY, PolicyReader, compilePolicy, rangesOf, type PolicySubject } from '../../src/policy/compiled.ts';
import { parsePolicy, parseEntries, PolicyError, MAX_ENTRIES, type Policy } from '../../src/policy/model.ts';
import { buildAutomaton, scanSubstrings } from '../../src/policy/substrings.ts';
import { ipScratch, parseIpInto } from '../../src/signals/ip-address.ts';
import { hashUa } from '../../src/signals/ua-cache.ts';
import { HASH } from '../../src/memory/hash.ts';

const UA_SEED = 0x5eed;
import { parsePolicyCsv, policyToCsv } from '../../src/policy/policy-csv.ts';

function subject(over: Partial<Omit<PolicySubject, 'ip' | 'uaHi' | 'uaLo'>> & { ip?: string } = {}): PolicySubject {
  const ip = ipScratch();
  parseIpInto(over.ip ?? '198.51.100.7', ip);
  const ua = over.ua ?? 'Mozilla/5.0';
  hashUa(ua, UA_SEED);
  return { app: '', dmn: '', pub: 'pub-1', sid: 'exchange.example', chain: null, ...over, ua, uaHi: HASH[0]!, uaLo: HASH[1]!, ip };
}

function reader(p: unknown): PolicyReader {
  return new PolicyReader(compilePolicy(parsePolicy(p), UA_SEED).buffer);
}

function refusal(fn: () => unknown): PolicyError {
  try {
    fn();
  } catch (e) {
    if (e instanceof PolicyError) return e;
    throw e;
  }
  throw new Error('not refused');
}

t.test('each kind matches its request value; deny wins across kinds', async (t) => {
  const r = reader({
    entries: [
      { kind: 'ip', value: '10.0.0.0/8', action: 'deny' },
      { kind: 'ip', value: '2001:db8::/32', action: 'deny' },
      { kind: 'ua', value: 'PartnerCrawler/1.0', action: 'allow' },
      { kind: 'ua_substring', value: 'MeasureBot', action: 'allow' },
      { kind: 'app', value: 'com.example.game', action: 'deny' },
      { kind: 'domain', value: 'cheat.example', action: 'deny' },
      { kind: 'publisher', value: 'pub-9', action: 'deny' },
      { kind: 'seller', value: 'bad-exchange.example:42', action: 'deny' },
    ],
  });
  t.equal(r.decide(subject()), 0, 'nothing matches');
  t.equal(r.decide(subject({ ip: '10.200.3.4' })), DENY, 'IPv4 in a CIDR');
  t.equal(r.decide(subject({ ip: '11.0.0.0' })), 0, 'just past it');
  t.equal(r.decide(subject({ ip: '2001:db8:ffff::1' })), DENY, 'IPv6 in a CIDR');
  t.equal(r.decide(subject({ ip: '2001:db9::1' })), 0);
  t.equal(r.decide(subject({ ua: 'PartnerCrawler/1.0' })), ALLOW, 'exact UA');
  t.equal(r.decide(subject({ ua: 'PartnerCrawler/1.01' })), 0, 'exact means exact');
  t.equal(r.decide(subject({ ua: 'Mozilla/5.0 (compatible; measurebot/2)' })), ALLOW, 'substring, ASCII case folded');
  t.equal(r.decide(subject({ app: 'com.example.game' })), DENY, 'app bundle');
  t.equal(r.decide(subject({ dmn: 'www.Cheat.example' })), DENY, 'a domain covers its subdomains');
  t.equal(r.decide(subject({ dmn: 'notcheat.example' })), 0, 'but not a longer name');
  t.equal(r.decide(subject({ pub: 'pub-9' })), DENY, 'publisher');
  t.equal(r.decide(subject({ sid: 'BAD-exchange.example', pub: '42' })), DENY, 'seller as the request names it (sid + pub)');
  const chain = { ver: '1.0', complete: 1 as const, nodes: [{ asi: 'ok.example', sid: '1', hp: 1 as const, rid: '', name: '', domain: '' }, { asi: 'bad-exchange.example', sid: '42', hp: 1 as const, rid: '', name: '', domain: '' }] };
  t.equal(r.decide(subject({ chain })), DENY, 'seller as a supply-chain node');
  t.equal(r.decide(subject({ ua: 'PartnerCrawler/1.0', ip: '10.1.1.1' })), DENY, 'allow and deny both match: deny wins');
  t.same(r.matches(subject({ ua: 'PartnerCrawler/1.0', ip: '10.1.1.1' })), [{ kind: 'ip', action: 'deny' }, { kind: 'ua', action: 'allow' }], 'explain lists both');
});

t.test('overlapping CIDRs: the most specific block decides', async (t) => {
  const r = reader({
    entries: [
      { kind: 'ip', value: '10.0.0.0/8', action: 'deny' },
      { kind: 'ip', value: '10.1.0.0/16', action: 'allow' },
      { kind: 'ip', value: '10.1.2.0/24', action: 'deny' },
      { kind: 'ip', value: '10.1.2.3', action: 'allow' },
      { kind: 'ip', value: '0.0.0.0/0', action: 'allow' },
      { kind: 'ip', value: '::ffff:192.0.2.0/120', action: 'deny' },
    ],
  });
  const at = (ip: string) => r.decide(subject({ ip }));
  t.equal(at('10.0.0.1'), DENY);
  t.equal(at('10.1.0.1'), ALLOW);
  t.equal(at('10.1.2.1'), DENY);
  t.equal(at('10.1.2.3'), ALLOW);
  t.equal(at('10.1.3.0'), ALLOW);
  t.equal(at('10.2.0.0'), DENY);
  t.equal(at('8.8.8.8'), ALLOW, '/0 covers the rest');
  t.equal(at('192.0.2.9'), DENY, 'an IPv4-mapped block matches the IPv4 address');
  t.equal(at('::1'), 0, 'IPv6 has its own table');
  // Against a reference on random blocks.
  const blocks = [];
  let seed = 7;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  for (let i = 0; i < 300; i++) {
    const len = 8 + Math.floor(rnd() * 25);
    const start = (Math.floor(rnd() * 2 ** 32) >>> (32 - len)) * 2 ** (32 - len);
    blocks.push({ start: BigInt(start), end: BigInt(start + 2 ** (32 - len) - 1), action: rnd() < 0.5 ? ALLOW : DENY, len });
  }
  const ranges = rangesOf(blocks.map(({ start, end, action }) => ({ start, end, action })));
  let unordered = 0;
  for (let i = 1; i < ranges.length; i++) if (!(ranges[i]!.start > ranges[i - 1]!.end)) unordered++;
  t.equal(unordered, 0, 'disjoint, sorted');
  let wrong = 0;
  for (let k = 0; k < 3000; k++) {
    const x = BigInt(Math.floor(rnd() * 2 ** 32));
    let best = -1, want = 0;
    for (const b of blocks) {
      if (x >= b.start && x <= b.end && (b.len > best || (b.len === best && b.action === DENY))) { best = b.len; want = b.action; }
    }
    const got = ranges.find((g) => x >= g.start && x <= g.end)?.action ?? 0;
    if (got !== want) wrong++;
  }
  t.equal(wrong, 0, 'ranges agree with the most-specific-block reference');
});

t.test('Aho-Corasick finds every substring, any Unicode', async (t) => {
  const pats = [{ text: 'he', action: 1 }, { text: 'she', action: 2 }, { text: 'hers', action: 1 }, { text: 'Ünï', action: 1 }, { text: '🤖bot', action: 2 }];
  const a = buildAutomaton(pats);
  const scan = (s: string) => scanSubstrings(a, 0, s);
  t.equal(scan('ahishers'), 3, 'overlapping matches via failure links');
  t.equal(scan('xxhexx'), 1);
  t.equal(scan('nothing'), 0);
  t.equal(scan('mit Ünïcode'), 1, 'non-ASCII code units');
  t.equal(scan('ünï'), 0, 'only ASCII is case-folded');
  t.equal(scan('a 🤖bot here'), 2, 'surrogate pairs');
  // Random reference check.
  const alphabet = 'abcAB\u00e9\u4e2d';
  let seed = 3;
  const rnd = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
  const words = Array.from({ length: 40 }, () => ({ text: Array.from({ length: 3 + rnd(4) }, () => alphabet[rnd(6)]).join(''), action: 1 + rnd(2) }));
  const b = buildAutomaton(words);
  let wrong = 0;
  for (let k = 0; k < 500; k++) {
    const s = Array.from({ length: 30 }, () => alphabet[rnd(7)]).join('');
    const fold = (x: string) => x.replace(/[A-Z]/g, (c) => c.toLowerCase());
    let want = 0;
    for (const w of words) if (fold(s).includes(fold(w.text))) want |= w.action;
    const got = scanSubstrings(b, 0, s);
    // The scan stops at the first deny: compare what it promises.
    if ((want & 2 ? 2 : want) !== (got & 2 ? 2 : got)) wrong++;
  }
  t.equal(wrong, 0, 'agrees with String.includes');
});

t.test('hostile and invalid entries are refused, naming the field', async (t) => {
  const e = (entries: unknown[]) => refusal(() => parsePolicy({ entries }));
  t.equal(e([{ kind: 'ua_substring', value: 'x'.repeat(10 * 1024), action: 'deny' }]).field, 'entries[0].value', '10 KB substring');
  t.equal(e([{ kind: 'ua', value: 'a', action: 'deny' }, { kind: 'ip', value: '10.0.0.1/8', action: 'deny' }]).field, 'entries[1].value', 'host bits set');
  t.match(e([{ kind: 'ip', value: '10.0.0.1/8', action: 'deny' }]).message, '10.0.0.0/8', 'and says what to write');
  t.equal(e([{ kind: 'ip', value: '010.0.0.1', action: 'deny' }]).field, 'entries[0].value');
  t.equal(e([{ kind: 'ip', value: '1.2.3.4/33', action: 'deny' }]).field, 'entries[0].value');
  t.equal(e([{ kind: 'ip', value: 'fe80::1%eth0', action: 'deny' }]).field, 'entries[0].value');
  t.equal(e([{ kind: 'ua', value: 'bad\ud800', action: 'deny' }]).field, 'entries[0].value', 'lone surrogate');
  t.equal(e([{ kind: 'ua', value: 'a\nb', action: 'deny' }]).field, 'entries[0].value', 'control character');
  t.equal(e([{ kind: 'ua_substring', value: 'ab', action: 'deny' }]).field, 'entries[0].value', 'too short a substring');
  t.equal(e([{ kind: 'domain', value: 'ex ample.com', action: 'deny' }]).field, 'entries[0].value');
  t.equal(e([{ kind: 'seller', value: 'exchange.example', action: 'deny' }]).field, 'entries[0].value', 'seller without sid');
  t.equal(e([{ kind: 'fish', value: 'x', action: 'deny' }]).field, 'entries[0].kind');
  t.equal(e([{ kind: 'ua', value: 'x', action: 'block' }]).field, 'entries[0].action');
  t.equal(e([{ kind: 'ua', value: 'x', action: 'deny', extra: 1 }]).field, 'entries[0].extra');
  t.equal(e([{ kind: 'domain', value: 'A.example', action: 'deny' }, { kind: 'domain', value: 'a.example', action: 'allow' }]).field, 'entries[1].value', 'the same value twice, after normalising');
  t.equal(refusal(() => parsePolicy({ medium: 0.8, high: 0.5 })).field, 'medium', 'medium below high');
  t.equal(refusal(() => parsePolicy({ high: 1.5 })).field, 'high', 'out of bounds');
  t.equal(refusal(() => parsePolicy({ medium: 0.123456 })).field, 'medium', 'at most 4 decimals');
  const big = refusal(() => parseEntries(new Array(MAX_ENTRIES + 1).fill(0), 'entries'));
  t.ok(big.tooLarge, 'past the per-customer cap: 413');
  const subs = Array.from({ length: 300 }, (_, i) => ({ kind: 'ua_substring', value: `${i}`.padEnd(250, 'x'), action: 'deny' }));
  t.ok(refusal(() => parsePolicy({ entries: subs })).tooLarge, 'past the substring characters cap: 413');
  // Unicode that is valid is kept as given.
  const p = parsePolicy({ entries: [{ kind: 'ua', value: 'Bot/1 (日本語; ✓)', action: 'allow' }, { kind: 'domain', value: 'Example.COM.', action: 'deny' }, { kind: 'ip', value: '2001:DB8:0:0::/64', action: 'deny' }] });
  t.same(p.entries.map((x) => x.value), ['Bot/1 (日本語; ✓)', 'example.com', '2001:db8::/64'], 'normalised forms');
});

t.test('thresholds set the band edges', async (t) => {
  const r = reader({ medium: 0.2, high: 0.5 });
  t.equal(r.medium, 0.2);
  t.equal(r.high, 0.5);
  const d = reader({});
  t.equal(d.medium, 0.3, 'defaults');
  t.equal(d.high, 0.7);
});

t.test('CSV export and import give the same list back', async (t) => {
  const entries = parsePolicy({
    entries: [
      { kind: 'ua', value: '=cmd|"calc"!A1, with, commas', action: 'deny' },
      { kind: 'ua_substring', value: '-leading dash', action: 'allow' },
      { kind: 'seller', value: 'x.example:1', action: 'deny' },
    ],
  }).entries;
  const csv = policyToCsv(entries);
  t.match(csv, "'=cmd", 'formulas neutralised in the file');
  t.same(parsePolicyCsv(csv), entries);
  t.equal(refusal(() => parsePolicyCsv('kind,action,value\r\nip,deny,not-an-ip\r\n')).field, 'line 2.value', 'names the line');
  t.equal(refusal(() => parsePolicyCsv('a,b\r\n')).field, 'line 1');
});

t.test('a large list compiles and stays fast to look up', async (t) => {
  const entries: Policy['entries'] = [];
  for (let i = 0; i < 50_000; i++) entries.push({ kind: 'ip', value: `${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`, action: 'deny' });
  for (let i = 0; i < 50_000; i++) entries.push({ kind: 'publisher', value: `pub-${i}`, action: 'deny' });
  const c = compilePolicy({ medium: null, high: null, entries }, UA_SEED);
  const r = new PolicyReader(c.buffer);
  t.equal(r.decide(subject({ ip: '10.0.5.77' })), DENY);
  t.equal(r.decide(subject({ pub: 'pub-49999' })), DENY);
  t.equal(r.decide(subject({ pub: 'pub-50000' })), 0);
  t.ok(c.bytes < 4 * 1024 * 1024, `compiled size ${c.bytes} bytes`);
});

t.test('ssai entries: a table of their own, allow only, never a decision', async (t) => {
  const r = reader({
    entries: [
      { kind: 'ssai', value: '203.0.113.0/24', action: 'allow' },
      { kind: 'ssai', value: '2001:db8:55::/48', action: 'allow' },
      { kind: 'ip', value: '203.0.113.0/24', action: 'deny' },
    ],
  });
  t.equal(r.ssaiDeclared(subject({ ip: '203.0.113.9' }).ip), true, 'in the declared range');
  t.equal(r.ssaiDeclared(subject({ ip: '2001:db8:55::1' }).ip), true, 'IPv6 too');
  t.equal(r.ssaiDeclared(subject({ ip: '198.51.100.7' }).ip), false, 'outside it');
  t.equal(r.decide(subject({ ip: '203.0.113.9' })), DENY, 'the ip deny of the same block still decides: ssai is no allow of the verdict');
  const only = reader({ entries: [{ kind: 'ssai', value: '203.0.113.0/24', action: 'allow' }] });
  t.equal(only.decide(subject({ ip: '203.0.113.9' })), 0, 'an ssai entry alone decides nothing');
  t.same(only.matches(subject({ ip: '203.0.113.9' })), [{ kind: 'ssai', action: 'allow' }], 'explain names it');
  const none = reader({ entries: [{ kind: 'ip', value: '203.0.113.0/24', action: 'allow' }] });
  t.equal(none.ssaiDeclared(subject({ ip: '203.0.113.9' }).ip), false, 'an ip entry declares no stitcher');
  const noIp = subject();
  noIp.ip.v = 0;
  t.equal(only.ssaiDeclared(noIp.ip), false, 'no IP, nothing declared');
  t.equal(only.decide(noIp), 0);
  t.match(refusal(() => parseEntries([{ kind: 'ssai', value: '203.0.113.0/24', action: 'deny' }], 'entries')), { field: 'entries[0].action' }, 'deny refused');
  t.same(parseEntries([{ kind: 'ssai', value: '203.0.113.0/24' }], 'entries', { actionOptional: true }), [{ kind: 'ssai', value: '203.0.113.0/24', action: 'allow' }], 'allow by default');
  t.match(refusal(() => parseEntries([{ kind: 'ssai', value: 'stitcher.example', action: 'allow' }], 'entries')), { field: 'entries[0].value' }, 'an address or CIDR');
});
