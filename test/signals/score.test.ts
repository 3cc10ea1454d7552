import { readFileSync } from 'node:fs';
import t from 'tap';
import * as historyModule from '../../src/signals/history.ts';
import { History, IP_SET_MAX, NO_HISTORY, type HistoryFacts } from '../../src/signals/history.ts';
import { categoryOf } from '../../src/signals/category.ts';
import * as scoreModule from '../../src/signals/score.ts';
import { HISTORY_FACT_FUNCTIONS, HISTORY_ROWS, REASONS, SIGNAL_ROWS, inputText, type HistoryRow, type SignalRow } from '../../src/signals/reasons.ts';
import { compileScoreKernel, scoreKernelSource } from '../../src/signals/score-kernel.ts';
import {
  BAND_HIGH_MIN,
  BAND_MEDIUM_MIN,
  CONFIDENCE_BASE,
  GIVT_WEIGHTS,
  HARD_WEIGHTS,
  HISTORY_TERMS,
  HUMAN_LOOKUPS_MAX_PER_MIN,
  POLICY_REASONS,
  SIVT_WEIGHTS,
  classifyTransaction,
  ipRatePerUser,
  outcomeForHistory,
  score,
  type ScoreInputs,
  type ScoreResult,
} from '../../src/signals/score.ts';

type Flag = Exclude<keyof ScoreInputs, 'history'>;

function clean(over: Partial<ScoreInputs> = {}): ScoreInputs {
  return {
    ipBogon: false, uaMalformed: false, ifaMalformed: false, ifaKnownBad: false,
    deviceImpossible: false, declaredBot: false, automation: false, ipHosting: false, ipVpn: false,
    ipProxy: false, ipTor: false, uaInconsistent: false, suaMismatch: false, ifaTypeMismatch: false, ssaiSpoof: false, geoMismatch: false, schainPresent: false,
    schainValid: false, schainVerified: false, schainComplete: false, zeroIfa: false,
    ipRelay: false, sellerUnauthorized: false, aiAgent: false, monitor: false, crawlerSpoofed: false, appBundleMalformed: false, history: NO_HISTORY,
    ...over,
  };
}

const FLAGS = Object.keys(clean()).filter((k) => k !== 'history') as Flag[];
/** For these the bad value is false (a broken, unverified or incomplete chain). */
const GOOD_WHEN_TRUE = new Set<Flag>(['schainValid', 'schainVerified', 'schainComplete']);
const badValue = (f: Flag): boolean => !GOOD_WHEN_TRUE.has(f);
const FACTS = Object.keys(NO_HISTORY) as (keyof HistoryFacts)[];

t.test('the lead\'s four end-to-end scenarios', async (t) => {
  // Clean residential traffic, real browser UA, first time seen (history counted it once).
  const h = History.create();
  const first = {
    ...h.observe(
      h.keysFor({
        ip: '81.2.69.142', uid: 'c0ffee-cookie', ifa: '',
        ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
      }),
      Date.UTC(2026, 0, 1),
    ),
  };
  const c = score(clean({ history: first }));
  t.equal(c.band, 'low');
  t.equal(c.score, 0);
  t.same(c.reasons, []);
  t.equal(classifyTransaction(c), 'valid');

  for (const [flag, reason] of [['declaredBot', 'ua_declared_bot'], ['automation', 'ua_headless'], ['ipBogon', 'ip_bogon']] as const) {
    const r = score(clean({ [flag]: true }));
    t.equal(r.band, 'high', flag);
    t.same(r.reasons, [reason]);
    t.equal(classifyTransaction(r), 'givt', `${flag} is GIVT`);
  }

  // Known data-centre traffic is GIVT on its own (issue 24: MRC's floor; it was medium, valid).
  const hosting = score(clean({ ipHosting: true }));
  t.equal(hosting.band, 'high');
  t.equal(hosting.score, GIVT_WEIGHTS.asn_hosting);
  t.same(hosting.reasons, ['asn_hosting']);
  t.equal(classifyTransaction(hosting), 'givt');

  const vpnSpoof = score(clean({ ipVpn: true, uaInconsistent: true }));
  t.equal(vpnSpoof.band, 'high');
  t.equal(vpnSpoof.p_sivt, 0.75);
  t.same(vpnSpoof.reasons, ['ip_vpn', 'ua_inconsistent']);
  t.equal(classifyTransaction(vpnSpoof), 'sivt');
});

t.test('noisy-OR within and across components', async (t) => {
  const r = score(clean({ ipHosting: true, geoMismatch: true, schainPresent: true, schainValid: true }));
  t.equal(r.p_givt, 0.75);
  t.equal(r.p_sivt, round4(1 - (1 - 0.25) * (1 - 0.2) * (1 - 0.1)));
  t.equal(r.score, round4(1 - 0.25 * (1 - 0.25) * 0.8 * 0.9));
  t.same(r.reasons, ['asn_hosting', 'geo_mismatch', 'schain_unverified', 'schain_incomplete']);
  const invalidChain = score(clean({ schainPresent: true, schainValid: false }));
  t.same(invalidChain.reasons, ['schain_invalid'], 'an unparseable chain is not also unverified');
  t.same(score(clean({ schainValid: false, schainVerified: false })).reasons, [], 'no chain, no schain reasons');
  const good = score(clean({ schainPresent: true, schainValid: true, schainVerified: true, schainComplete: true }));
  t.equal(good.score, 0);
});

t.test('history: quiet history adds nothing; bot share needs evidence', async (t) => {
  const quiet: HistoryFacts = { ...NO_HISTORY, ipRate: 10, uidRate: 10, ipDistinctUas: 2, ipDistinctUids: 3, uidDistinctIps: 2, uidDistinctUas: 2, ipSeen: 50, uidSeen: 40 };
  t.equal(score(clean({ history: quiet })).p_hist, 0);

  const thin = score(clean({ history: { ...NO_HISTORY, ipBotShare: 1, ipSeen: 4 } }));
  t.equal(thin.p_hist, 0, 'a handful of lookups is not evidence');
  const proven = score(clean({ history: { ...NO_HISTORY, ipBotShare: 1, ipSeen: 200 } }));
  t.ok(proven.p_hist > 0.75, `${proven.p_hist}`);
  t.same(proven.reasons, ['ip_bot_history']);
  t.equal(proven.band, 'high');
  t.equal(classifyTransaction(proven), 'sivt', 'condemned by history alone is SIVT');
  t.notOk(outcomeForHistory(proven), 'history alone is not fed back as a bot outcome');

  const hopper = score(clean({ history: { ...NO_HISTORY, uidDistinctIps: 10, uidDistinctUas: 6, uidRate: 300 } }));
  t.same(hopper.reasons, ['uid_velocity', 'uid_ip_hopping', 'uid_many_uas']);
  t.equal(hopper.band, 'high');

  // Tiny contributions count in p_hist but are not named.
  const edge = score(clean({ history: { ...NO_HISTORY, ipRate: HISTORY_TERMS.ip_velocity.floor + 1 } }));
  t.ok(edge.p_hist > 0 && edge.p_hist < 0.05);
  t.same(edge.reasons, []);
});

t.test('monotonicity: a bad signal or a worse history fact never lowers the score', async (t) => {
  const rnd = prng(42);
  let checks = 0;
  for (let n = 0; n < 400; n++) {
    const base = clean({ history: randomFacts(rnd) });
    for (const f of FLAGS) base[f] = rnd() < 0.3;
    const s0 = score(base).score;
    for (const f of FLAGS) {
      if (base[f] === badValue(f)) continue;
      const worse = { ...base, [f]: badValue(f) };
      const s1 = score(worse).score;
      if (s1 < s0) t.fail(`${f} lowered ${s0} to ${s1}`);
      checks++;
    }
    for (const k of FACTS) {
      const bumped = { ...base.history, [k]: base.history[k] + (k.endsWith('BotShare') ? 0.2 * (1 - base.history[k]) : 1 + rnd() * 50) };
      const s1 = score({ ...base, history: bumped }).score;
      if (s1 < s0) t.fail(`${k} lowered ${s0} to ${s1}`);
      checks++;
    }
  }
  t.ok(checks > 4000, `${checks} comparisons`);
});

t.test('everything stays in [0,1], even with every signal and extreme history', async (t) => {
  const all = clean({ history: { ...NO_HISTORY, ipRate: 1e9, uidRate: 1e9, ifaRate: 1e9, ipDistinctUas: 64, ipDistinctUids: 64, uidDistinctIps: 64, uidDistinctUas: 64, ifaDistinctIps: 64, ipBotShare: 1, uidBotShare: 1, ipSeen: 1e6, uidSeen: 1e6 } });
  for (const f of FLAGS) all[f] = badValue(f);
  all.schainPresent = true;
  const rs = [score(all), score(clean())];
  const rnd = prng(7);
  for (let n = 0; n < 200; n++) {
    const x = clean({ history: randomFacts(rnd) });
    for (const f of FLAGS) x[f] = rnd() < 0.5;
    rs.push(score(x));
  }
  for (const r of rs) {
    for (const k of ['p_hard', 'p_givt', 'p_sivt', 'p_hist', 'score', 'confidence'] as const) {
      if (!(r[k] >= 0 && r[k] <= 1)) t.fail(`${k} = ${r[k]}`);
      if (Math.round(r[k] * 1e4) / 1e4 !== r[k]) t.fail(`${k} not rounded: ${r[k]}`);
    }
  }
  t.equal(rs[0]!.score, 1);
  t.equal(rs[0]!.confidence, 1);
  t.ok(rs[0]!.reasons.length >= 20, 'every fired signal is named');
});

t.test('bands follow the thresholds of the rounded score', async (t) => {
  t.equal(scoreModule.bandOf(BAND_MEDIUM_MIN - 0.0001), 'low');
  t.equal(scoreModule.bandOf(BAND_MEDIUM_MIN), 'medium');
  t.equal(scoreModule.bandOf(BAND_HIGH_MIN - 0.0001), 'medium');
  t.equal(scoreModule.bandOf(BAND_HIGH_MIN), 'high');
  const r = score(clean({ ipVpn: true, sellerUnauthorized: true })); // 1 − 0.5 × 0.6 = 0.7
  t.equal(r.score, 0.7);
  t.equal(r.band, 'high');
});

t.test('classifyTransaction', async (t) => {
  const res = (band: ScoreResult['band'], p_hard: number, p_givt: number, p_sivt: number, p_hist: number): ScoreResult =>
    ({ p_hard, p_givt, p_sivt, p_hist, band, score: 0, confidence: 0, reasons: [], leading: '' });
  const table: [ScoreResult, string][] = [
    [res('low', 0, 0, 0, 0), 'valid'],
    [res('medium', 0.6, 0, 0.5, 0), 'valid'],
    [res('high', 0.95, 0, 0.5, 0), 'givt'],
    [res('high', 0, 0.6, 0.75, 0), 'sivt'],
    [res('high', 0, 0.6, 0.2, 0.6), 'givt'],  // a tie goes to GIVT
    [res('high', 0.3, 0.2, 0.1, 0.8), 'sivt'],
    [res('high', 0.9, 0.98, 0.8, 0.99), 'sivt'],
  ];
  for (const [r, want] of table) t.equal(classifyTransaction(r), want, JSON.stringify(r));
});

t.test('confidence grows with sources and evidence; decisive facts are confident at once', async (t) => {
  const none = score(clean()).confidence;
  t.equal(none, CONFIDENCE_BASE);
  t.ok(score(clean({ schainPresent: true, schainValid: true, schainVerified: true, schainComplete: true })).confidence > none);
  let last = none;
  for (const n of [1, 5, 20, 100, 1000]) {
    const c = score(clean({ history: { ...NO_HISTORY, ipSeen: n, uidSeen: n } })).confidence;
    t.ok(c > last, `evidence ${n}: ${c}`);
    last = c;
  }
  t.ok(last <= 1);
  t.equal(score(clean({ declaredBot: true })).confidence, 0.98);
  t.equal(score(clean({ ipVpn: true })).confidence, CONFIDENCE_BASE, 'an inferred signal alone does not add certainty');
});

t.test('outcomeForHistory uses request evidence only', async (t) => {
  t.ok(outcomeForHistory(score(clean({ declaredBot: true }))));
  t.ok(outcomeForHistory(score(clean({ ipVpn: true, uaInconsistent: true }))));
  t.ok(outcomeForHistory(score(clean({ ipHosting: true }))), 'known data-centre traffic is invalid evidence');
  t.notOk(outcomeForHistory(score(clean({ ipVpn: true }))));
  t.notOk(outcomeForHistory(score(clean())));
});

// The doc quotes the constants; these tests make it fail when either side changes alone.
t.test('docs/scoring.md matches the code', async (t) => {
  const doc = readFileSync(new URL('../../docs/scoring.md', import.meta.url), 'utf8');
  const rows = new Map<string, string[]>();
  for (const line of doc.split('\n')) {
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    const m = /^`([A-Za-z_]+)`$/.exec(cells[0] ?? '');
    if (m) rows.set(m[1]!, cells.slice(1));
  }

  // One table of reasons (src/signals/reasons.ts): every row is a doc row with its numbers.
  const expected = new Set<string>();
  for (const r of REASONS) {
    if (r.component === 'policy') continue;
    expected.add(r.code);
    const row = rows.get(r.code);
    if (!row) { t.fail(`${r.code} missing from the doc`); continue; }
    if (r.component === 'hist') {
      t.same([Number(row[1]), Number(row[2]), Number(row[3])], [r.term.weight, r.term.floor, r.term.half], `${r.code} weight/floor/half`);
      continue;
    }
    t.equal(row[0], r.component, `${r.code} component`);
    t.equal(row[1], inputText(r), `${r.code} input`);
    t.equal(Number(row[2]), r.weight, `${r.code} weight`);
  }
  // The views score.ts exports are the table's.
  const components = { hard: HARD_WEIGHTS, givt: GIVT_WEIGHTS, sivt: SIVT_WEIGHTS } as const;
  for (const [component, weights] of Object.entries(components)) {
    t.same(weights, Object.fromEntries(SIGNAL_ROWS.filter((r) => r.component === component).map((r) => [r.code, r.weight])), `${component} weights`);
  }
  t.same(Object.keys(HISTORY_TERMS), HISTORY_ROWS.map((r) => r.code), 'history terms');
  const constants: Record<string, unknown> = {};
  for (const mod of [scoreModule, historyModule] as Record<string, unknown>[]) {
    for (const [name, value] of Object.entries(mod)) if (/^[A-Z][A-Z_]+$/.test(name) && typeof value === 'number') constants[name] = value;
  }
  t.ok(Object.keys(constants).length >= 14, 'found the numeric constants');
  for (const [name, value] of Object.entries(constants)) {
    expected.add(name);
    const row = rows.get(name);
    if (!row) { t.fail(`${name} missing from the doc`); continue; }
    t.equal(Number(row[0]), value, name);
  }
  for (const name of rows.keys()) if (!expected.has(name)) t.fail(`doc row ${name} names nothing in the code`);

  const list = doc.slice(doc.indexOf('## Reason codes'));
  const listed = new Set([...list.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!));
  listed.delete('reasons');
  const codes = [...Object.keys(HARD_WEIGHTS), ...Object.keys(GIVT_WEIGHTS), ...Object.keys(SIVT_WEIGHTS), ...Object.keys(HISTORY_TERMS), ...POLICY_REASONS];
  t.same([...listed].sort(), codes.sort(), 'reason code list is complete');
  t.same([...listed].sort(), REASONS.map((r) => r.code).sort(), 'and it is the table of reasons');
  // Each component's line names its codes in the table's order, the order `reasons` uses.
  const lines: Record<string, string> = { hard: '- hard:', givt: '- GIVT:', sivt: '- SIVT:', hist: '- history:' };
  for (const [component, prefix] of Object.entries(lines)) {
    const line = list.split('\n').find((l) => l.startsWith(prefix)) ?? '';
    t.same([...line.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!), REASONS.filter((r) => r.component === component).map((r) => r.code), `${component}: in the table's order`);
  }
});

function round4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

/** Small deterministic PRNG (mulberry32) so failures reproduce. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

function randomFacts(rnd: () => number): HistoryFacts {
  const f = { ...NO_HISTORY };
  if (rnd() < 0.3) return f;
  f.ipRate = rnd() * 1000; f.uidRate = rnd() * 300; f.ifaRate = rnd() * 300;
  f.ipDistinctUas = Math.floor(rnd() * 64); f.ipDistinctUids = Math.floor(rnd() * 64);
  f.uidDistinctIps = Math.floor(rnd() * 10); f.uidDistinctUas = Math.floor(rnd() * 10);
  f.ifaDistinctIps = Math.floor(rnd() * 10);
  f.ipBotShare = rnd(); f.uidBotShare = rnd();
  f.ipSeen = rnd() * 100; f.uidSeen = rnd() * 100;
  return f;
}

t.test('activity beyond one person is high on its own; a carrier NAT of ordinary users is not', async (t) => {
  const facts = (over: Partial<HistoryFacts>): HistoryFacts => ({ ...NO_HISTORY, ...over });
  const human = score(clean({ history: facts({ uidRate: HUMAN_LOOKUPS_MAX_PER_MIN, ipRate: HUMAN_LOOKUPS_MAX_PER_MIN, ipDistinctUids: 1, ipDistinctUas: 1, uidDistinctIps: 1, uidDistinctUas: 1 }) }));
  t.notOk(human.reasons.includes('uid_activity_excessive'), 'the human bound itself is not excessive');
  t.not(human.band, 'high');
  for (const [name, over, code] of [
    ['uid', { uidRate: 2000 }, 'uid_activity_excessive'],
    ['ifa', { ifaRate: 2000 }, 'ifa_activity_excessive'],
    // uids rotated per request fill the bitmaps: the rate per user stays in the thousands.
    ['ip', { ipRate: 1_200_000, ipDistinctUids: IP_SET_MAX, ipDistinctUas: IP_SET_MAX }, 'ip_activity_excessive'],
  ] as const) {
    const r = score(clean({ history: facts(over) }));
    t.equal(r.band, 'high', `${name}: ${r.score} (${r.reasons.join(', ')})`);
    t.equal(r.leading, code, `${name}: the activity term leads`);
    t.equal(categoryOf(false, r.leading), 'activity');
  }
  // Only the activity term: alone it reaches high at about 2 000/min.
  const T = HISTORY_TERMS.uid_activity_excessive;
  const alone = (x: number) => (T.weight * (x - T.floor)) / (x - T.floor + T.half);
  t.ok(alone(2000) >= BAND_HIGH_MIN && alone(1900) < BAND_HIGH_MIN, 'high alone from about 2 000/min');

  const cgnat = score(clean({ history: facts({ ipRate: 600, ipDistinctUids: 300, ipDistinctUas: 40, uidRate: 2, uidDistinctIps: 1, uidDistinctUas: 1 }) }));
  t.not(cgnat.band, 'high', `carrier NAT: ${cgnat.score} (${cgnat.reasons.join(', ')})`);
  t.notOk(cgnat.reasons.includes('ip_activity_excessive'), 'its users are at a human rate');
  t.equal(ipRatePerUser(facts({ ipRate: 6000, ipDistinctUids: 10, ipDistinctUas: 12 })), 0, 'few users: the IP term does not speak');
  t.equal(ipRatePerUser(facts({ ipRate: 6000, ipDistinctUids: 3, ipDistinctUas: 20 })), 300, 'uid-less users counted by their UAs');
});

t.test('real history, one address: cookie-less UAs or rotated uids beyond a person are high alone; a carrier NAT is not', async (t) => {
  const T0 = Date.UTC(2026, 0, 5, 12);
  const run = (n: number, perMs: number, o: (i: number) => { ip: string; uid: string; ua: string }) => {
    const h = History.create({ epoch: T0, seed: 7 });
    let last = NO_HISTORY;
    // n lookups spread evenly over one minute (perMs per millisecond), the real decayed history.
    for (let i = 0; i < n; i++) last = { ...h.observe(h.keysFor({ ...o(i), ifa: '' }), T0 + Math.floor(i / perMs)) };
    return score(clean({ history: last }));
  };
  const ua = (i: number) => `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/12${i % 6}.0.${6100 + i}.0 Safari/537.36`;
  // 24 UAs, no cookie, 2 000 lookups per minute each.
  const uas = run(48_000, 0.8, (i) => ({ ip: '98.33.4.21', uid: '', ua: ua(i % 24) }));
  t.equal(uas.band, 'high', `UAs: ${uas.score} (${uas.reasons.join(', ')})`);
  t.equal(uas.leading, 'ip_activity_excessive');
  // 40 uids rotated round-robin, 2 000 per minute each: the uid terms and the IP term agree.
  const uids = run(80_000, 1.4, (i) => ({ ip: '98.33.4.22', uid: `farm-${i % 40}`, ua: ua(0) }));
  t.equal(uids.band, 'high', `uids: ${uids.score} (${uids.reasons.join(', ')})`);
  t.ok(uids.reasons.includes('ip_activity_excessive') && uids.reasons.includes('uid_activity_excessive'), uids.reasons.join(', '));
  // Carrier NAT: 500 subscribers, 60 UAs, 30 lookups per minute each (15 000 per minute on one address).
  const nat = run(15_000, 0.25, (i) => ({ ip: '31.94.12.35', uid: `sub-${i % 500}`, ua: ua((i % 500) % 60) }));
  t.not(nat.band, 'high', `carrier NAT: ${nat.score} (${nat.reasons.join(', ')})`);
  t.notOk(nat.reasons.includes('ip_activity_excessive'), 'each subscriber at a human rate');
});

// The table read row by row, as plainly as can be: what the generated kernel must equal.
function interpret(i: ScoreInputs): { p: number[]; reasons: string[]; leading: string } {
  const q = { hard: 1, givt: 1, sivt: 1, hist: 1 };
  const reasons: string[] = [];
  let leading = '';
  let lead = 0;
  const name = (c: string, w: number) => {
    reasons.push(c);
    if (w > lead) { lead = w; leading = c; }
  };
  for (const r of SIGNAL_ROWS) {
    if (!r.when.every((f) => (f.startsWith('!') ? !i[f.slice(1) as keyof ScoreInputs] : i[f as keyof ScoreInputs]))) continue;
    q[r.component] *= 1 - r.weight;
    name(r.code, r.weight);
  }
  for (const r of HISTORY_ROWS) {
    const x = r.fact in HISTORY_FACT_FUNCTIONS ? HISTORY_FACT_FUNCTIONS[r.fact as keyof typeof HISTORY_FACT_FUNCTIONS](i.history) : i.history[r.fact as keyof HistoryFacts];
    const e = x - r.term.floor;
    let p = e > 0 ? (r.term.weight * e) / (e + r.term.half) : 0;
    if (r.share !== undefined) p *= i.history[r.share];
    if (p >= scoreModule.HIST_REASON_MIN) name(r.code, p);
    q.hist *= 1 - p;
  }
  return { p: [1 - q.hard, 1 - q.givt, 1 - q.sivt, 1 - q.hist], reasons, leading };
}

t.test('score() is the table of reasons: the generated kernel equals reading the rows one by one', async (t) => {
  const rnd = prng(26);
  let fired = 0;
  for (let n = 0; n < 3000; n++) {
    const over: Partial<ScoreInputs> = { history: randomFacts(rnd) };
    for (const f of FLAGS) if (rnd() < 0.15) (over as Record<string, boolean>)[f] = true;
    const inputs = clean(over);
    const want = interpret(inputs);
    const got = score(inputs);
    fired += got.reasons.length;
    if (
      got.p_hard !== round4(want.p[0]!) || got.p_givt !== round4(want.p[1]!) || got.p_sivt !== round4(want.p[2]!) || got.p_hist !== round4(want.p[3]!) ||
      got.leading !== want.leading || got.reasons.join() !== want.reasons.join()
    ) {
      t.fail(`differs on ${JSON.stringify(inputs)}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`);
      return;
    }
  }
  t.ok(fired > 3000, `the inputs fired reasons (${fired})`);
  // A row changed in the table changes the score: nothing else holds a weight.
  const rows = SIGNAL_ROWS.map((r): SignalRow => (r.code === 'asn_hosting' ? { ...r, weight: 0.9 } : r));
  const kernel = compileScoreKernel(rows, HISTORY_ROWS, scoreModule.HIST_REASON_MIN);
  const out = new Float64Array(4);
  const reasons: string[] = [];
  t.equal(kernel(clean({ ipHosting: true }), reasons, out), 'asn_hosting');
  t.equal(round4(out[1]!), 0.9, 'the new weight');
  t.same(reasons, ['asn_hosting']);
});

t.test('the kernel is generated from names only: anything else in the table is refused', async (t) => {
  const bad = { ...SIGNAL_ROWS[0]!, when: ['ipBogon) || (true'] } as unknown as SignalRow;
  t.throws(() => scoreKernelSource([bad], [], 0.05), /not an identifier/);
  const badFact = { ...HISTORY_ROWS[0]!, fact: 'ipRate; process.exit()' } as unknown as HistoryRow;
  t.throws(() => scoreKernelSource([], [badFact], 0.05), /not an identifier/);
  t.throws(() => scoreKernelSource([{ ...SIGNAL_ROWS[0]!, weight: NaN }], [], 0.05), /finite/);
});

t.test("known data-centre traffic is GIVT by default; a customer's allowed ranges pass", async (t) => {
  const dc = score(clean({ ipHosting: true }));
  t.equal(dc.band, 'high', 'a browser UA from a hosting address with nothing else against it');
  t.equal(classifyTransaction(dc), 'givt');
  t.equal(categoryOf(false, dc.leading), 'data_center');
  // Its corporate proxy or SSAI ranges, allowed by the customer's policy (an IP/CIDR allow entry).
  const allowed = scoreModule.applyPolicy(score(clean({ ipHosting: true })), 'allowlisted', BAND_MEDIUM_MIN, BAND_HIGH_MIN);
  t.equal(allowed.band, 'low');
  t.equal(classifyTransaction(allowed), 'valid');
  // A relay egress is never hosting (the IP verdict clears the flag): 0.1, low.
  t.equal(score(clean({ ipRelay: true })).band, 'low');
});

t.test('bursts: 400 lookups of one uid within two seconds are high; page-sized bursts are not; a NAT is judged per user', async (t) => {
  const T0 = Date.UTC(2026, 0, 6, 9);
  const burst = (n: number, spanMs: number, ids: (i: number) => { uid: string; ifa: string; ip: string }) => {
    const h = History.create({ epoch: T0, seed: 3 });
    let last = NO_HISTORY;
    for (let i = 0; i < n; i++) last = { ...h.observe(h.keysFor({ ...ids(i), ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36' }), T0 + Math.floor((i * spanMs) / n)) };
    return last;
  };
  const machine = burst(400, 2000, () => ({ uid: 'one-user', ifa: '', ip: '98.33.4.50' }));
  t.ok(machine.uidRate < 2 * HUMAN_LOOKUPS_MAX_PER_MIN, `a minute's rate alone would not say it (${machine.uidRate.toFixed(0)}/min)`);
  const r = score(clean({ history: machine }));
  t.equal(r.band, 'high', `400 in 2 s: ${r.score} (${r.reasons.join(', ')})`);
  t.ok(r.reasons.includes('uid_burst_second') && r.reasons.includes('uid_burst_ten_seconds'), r.reasons.join(', '));
  t.equal(categoryOf(false, r.leading), 'activity');
  // The same for a device.
  const device = score(clean({ history: burst(400, 2000, () => ({ uid: '', ifa: '6ba7b810-9dad-41d1-80b4-00c04fd430c8', ip: '98.33.4.51' })) }));
  t.equal(device.band, 'high', `IFA: ${device.score} (${device.reasons.join(', ')})`);
  t.ok(device.reasons.includes('ifa_burst_second'));
  // A reader: a heavy page (50 lookups within a second) every 10 s for a minute.
  const reader = burst(300, 60_000, (i) => ({ uid: 'reader', ifa: '', ip: '98.33.4.52' }));
  const rd = score(clean({ history: reader }));
  t.notOk(rd.reasons.some((c) => c.includes('burst')), `evenly spread: ${rd.reasons.join(', ')}`);
  const h = History.create({ epoch: T0, seed: 5 });
  let page = NO_HISTORY;
  for (let p = 0; p < 6; p++) for (let i = 0; i < 50; i++) page = { ...h.observe(h.keysFor({ uid: 'reader-2', ifa: '', ip: '98.33.4.53', ua: 'x-reader-ua' }), T0 + p * 10_000 + i * 10) };
  const pr = score(clean({ history: page }));
  t.notOk(pr.reasons.includes('uid_burst_second'), `page bursts of 50: ${pr.reasons.join(', ')}`);
  t.not(pr.band, 'high');
  // A carrier NAT's newcomers: 300 users arriving within two seconds, each with its own uid.
  const nat = score(clean({ history: burst(300, 2000, (i) => ({ uid: `subscriber-${i}`, ifa: '', ip: '98.33.4.54' })) }));
  t.not(nat.band, 'high', `NAT newcomers: ${nat.score} (${nat.reasons.join(', ')})`);
  t.notOk(nat.reasons.some((c) => c.includes('burst')));
});
