import t from 'tap';
import { readFileSync } from 'node:fs';
import { CATEGORIES, REASON_CATEGORY, REASON_CLASS, categoryOf, noBidReason } from '../../src/signals/category.ts';
import { GIVT_WEIGHTS, HARD_WEIGHTS, HISTORY_TERMS, POLICY_REASONS, SIVT_WEIGHTS, applyPolicy, classifyTransaction, score, type ScoreInputs } from '../../src/signals/score.ts';

const BASE_INPUTS: ScoreInputs = {
  ipBogon: false, uaMalformed: false, ifaMalformed: false, ifaKnownBad: false, deviceImpossible: false, declaredBot: false,
  automation: false, ipHosting: false, ipVpn: false, ipProxy: false, ipTor: false, uaInconsistent: false, suaMismatch: false, ifaTypeMismatch: false, ssaiSpoof: false, geoMismatch: false,
  schainPresent: false, schainValid: false, schainVerified: false, schainComplete: false, zeroIfa: false, ipRelay: false, sellerUnauthorized: false,
  aiAgent: false, monitor: false, crawlerSpoofed: false, appBundleMalformed: false, history: NO_HISTORY,
};
import { NO_HISTORY } from '../../src/signals/history.ts';
import { NBR_ADS_TXT_VIOLATION, NBR_CLOUD_PROXY, NBR_NON_HUMAN, NBR_SCHAIN_INCOMPLETE, NBR_SPIDER, REASONS } from '../../src/signals/reasons.ts';

t.test('every reason code the score can give has a category from the list', async (t) => {
  const codes = [...Object.keys(HARD_WEIGHTS), ...Object.keys(GIVT_WEIGHTS), ...Object.keys(SIVT_WEIGHTS), ...Object.keys(HISTORY_TERMS), ...POLICY_REASONS];
  for (const c of codes) t.ok(CATEGORIES.includes(REASON_CATEGORY[c]!), `${c} -> ${REASON_CATEGORY[c]}`);
  t.same(Object.keys(REASON_CATEGORY).sort(), codes.sort(), 'and no category for a code that does not exist');
});

t.test("a transaction's category is its leading reason's", async (t) => {
  const base = {
    ipBogon: false, uaMalformed: false, ifaMalformed: false, ifaKnownBad: false, deviceImpossible: false, declaredBot: false,
    automation: false, ipHosting: false, ipVpn: false, ipProxy: false, ipTor: false, uaInconsistent: false, suaMismatch: false, ifaTypeMismatch: false, ssaiSpoof: false, geoMismatch: false,
    schainPresent: false, schainValid: false, schainVerified: false, schainComplete: false, zeroIfa: false, ipRelay: false, sellerUnauthorized: false, aiAgent: false, monitor: false, crawlerSpoofed: false, appBundleMalformed: false, history: NO_HISTORY,
  };
  const r = score({ ...base, ipHosting: true, geoMismatch: true, declaredBot: true });
  t.equal(r.leading, 'ua_declared_bot', 'the strongest signal leads');
  t.equal(categoryOf(false, r.leading), 'declared_crawler');
  t.equal(categoryOf(true, r.leading), 'none', 'valid transactions have none');
  t.equal(score({ ...base, ipVpn: true, uaInconsistent: true }).leading, 'ip_vpn', 'ties go to the first to fire');
  t.equal(score(base).leading, '');
});

t.test('every reason code has a class, the one classifyTransaction counts it under', async (t) => {
  t.same(Object.keys(REASON_CLASS).sort(), Object.keys(REASON_CATEGORY).sort(), 'the same codes as the categories');
  const base = {
    ipBogon: false, uaMalformed: false, ifaMalformed: false, ifaKnownBad: false, deviceImpossible: false, declaredBot: false,
    automation: false, ipHosting: false, ipVpn: false, ipProxy: false, ipTor: false, uaInconsistent: false, suaMismatch: false, ifaTypeMismatch: false, ssaiSpoof: false, geoMismatch: false,
    schainPresent: false, schainValid: false, schainVerified: false, schainComplete: false, zeroIfa: false, ipRelay: false, sellerUnauthorized: false, aiAgent: false, monitor: false, crawlerSpoofed: false, appBundleMalformed: false, history: NO_HISTORY,
  };
  // One strong reason of each component: the transaction's class is the reason's.
  const cases: Array<[Partial<typeof base>, string]> = [
    [{ ipBogon: true }, 'ip_bogon'],
    [{ declaredBot: true }, 'ua_declared_bot'],
    [{ ipTor: true, uaInconsistent: true, suaMismatch: true }, 'ip_tor'],
  ];
  for (const [over, code] of cases) {
    const r = score({ ...base, ...over });
    t.equal(r.band, 'high', `${code} alone is high`);
    t.equal(classifyTransaction(r).toUpperCase(), REASON_CLASS[code], `${code} is ${REASON_CLASS[code]}`);
  }
  t.equal(REASON_CLASS.sua_mismatch, 'SIVT');
  t.equal(REASON_CLASS.asn_hosting, 'GIVT');
  t.equal(REASON_CLASS.denylisted, 'POLICY');
});

t.test('the OpenRTB no-bid reason an invalid transaction implies', async (t) => {
  t.equal(noBidReason(true, 'ua_declared_bot'), null, 'valid: none');
  t.equal(noBidReason(false, 'ua_declared_bot'), 3, 'declared crawler: 3 known web spider');
  t.equal(noBidReason(false, 'asn_hosting'), 5, 'data center: 5');
  t.equal(noBidReason(false, 'ip_tor'), 5, 'anonymizing proxy: 5');
  t.equal(noBidReason(false, 'ua_headless'), 4, 'automation: 4 suspected non-human');
  t.equal(noBidReason(false, 'sua_mismatch'), 4, 'spoofing: 4');
  t.equal(noBidReason(false, 'denylisted'), 4, "the customer's deny list: 4");
  t.equal(noBidReason(false, 'seller_unauthorized'), 12, 'seller not authorised by ads.txt / app-ads.txt: 12');
  t.equal(noBidReason(false, 'schain_incomplete'), 16, 'incomplete supply chain: 16');
  t.equal(noBidReason(false, 'denylisted', true), 17, "a supply-chain node the customer's policy blocks: 17");
  t.equal(noBidReason(false, 'schain_unverified'), 4, 'an unverified chain has no code of its own: 4');
  t.equal(noBidReason(false, 'ssai_spoof'), 4, 'SSAI spoof: 4');
  t.equal(noBidReason(true, 'seller_unauthorized'), null, 'valid: none, whatever the reason');
});

t.test('docs/scoring.md lists every category, in order, with exactly its reason codes', async (t) => {
  const doc = readFileSync(new URL('../../docs/scoring.md', import.meta.url), 'utf8');
  const start = doc.indexOf('## Categories');
  t.ok(start > 0, 'the section is there');
  const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
  const listed: Array<[string, string[]]> = [];
  for (const line of section.split('\n')) {
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    const name = /\(`([a-z_]+)`\)$/.exec(cells[0] ?? '');
    if (name) listed.push([name[1]!, [...cells.at(-1)!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!).sort()]);
  }
  t.same(listed.map(([c]) => c), [...CATEGORIES], 'one row per category, in the order of CATEGORIES');
  for (const [category, codes] of listed) {
    const want = Object.keys(REASON_CATEGORY).filter((code) => REASON_CATEGORY[code] === category).sort();
    t.same(codes, want, `${category}: its reason codes`);
  }
});

t.test("docs/reporting-api.md's table of categories is the list", async (t) => {
  const page = readFileSync(new URL('../../docs/reporting-api.md', import.meta.url), 'utf8');
  const rows = [...page.matchAll(/^ *\| `([a-z_]+)` \| (GIVT|SIVT|—) \|/gm)].map((m) => m[1]!);
  t.same(rows, [...CATEGORIES], 'one row per category, in the order of CATEGORIES');
});

t.test('the table of reasons: class follows the component, nbr the category', async (t) => {
  const classOf = { hard: 'GIVT', givt: 'GIVT', sivt: 'SIVT', hist: 'SIVT', policy: 'POLICY' } as const;
  // Two supply-chain reasons have OpenRTB codes of their own: 12 ads.txt violation, 16 incomplete chain.
  const own: Record<string, number> = { seller_unauthorized: NBR_ADS_TXT_VIOLATION, schain_incomplete: NBR_SCHAIN_INCOMPLETE };
  const nbrOf = (code: string, c: string) => own[code] ?? (c === 'declared_crawler' || c === 'ai_agent' || c === 'monitoring' ? NBR_SPIDER : c === 'data_center' || c === 'anonymizing_proxy' ? NBR_CLOUD_PROXY : NBR_NON_HUMAN);
  t.equal(new Set(REASONS.map((r) => r.code)).size, REASONS.length, 'one row per code');
  for (const r of REASONS) {
    t.equal(r.class, classOf[r.component], `${r.code}: class of its component`);
    t.equal(r.nbr, nbrOf(r.code, r.category), `${r.code}: nbr of its category`);
    t.equal(REASON_CLASS[r.code], r.class);
    t.equal(REASON_CATEGORY[r.code], r.category);
    t.equal(noBidReason(false, r.code), r.nbr);
  }
});

t.test("a customer's deny list is its own class, policy: neither GIVT nor SIVT", async (t) => {
  const denied = applyPolicy(score({ ...BASE_INPUTS, declaredBot: true }), 'denylisted', 0.3, 0.7);
  t.equal(classifyTransaction(denied), 'policy', 'even over a declared bot: the customer decided');
  t.equal(classifyTransaction(applyPolicy(score(BASE_INPUTS), 'denylisted', 0.3, 0.7)), 'policy');
  t.equal(classifyTransaction(applyPolicy(score({ ...BASE_INPUTS, declaredBot: true }), 'allowlisted', 0.3, 0.7)), 'valid');
  t.equal(classifyTransaction(score({ ...BASE_INPUTS, declaredBot: true })), 'givt', 'without a policy, the model decides');
});
