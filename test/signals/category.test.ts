import t from 'tap';
import { CATEGORIES, REASON_CATEGORY, categoryOf } from '../../src/signals/category.ts';
import { GIVT_WEIGHTS, HARD_WEIGHTS, HISTORY_TERMS, POLICY_REASONS, SIVT_WEIGHTS, score } from '../../src/signals/score.ts';
import { NO_HISTORY } from '../../src/signals/history.ts';

t.test('every reason code the score can give has a category from the list', async (t) => {
  const codes = [...Object.keys(HARD_WEIGHTS), ...Object.keys(GIVT_WEIGHTS), ...Object.keys(SIVT_WEIGHTS), ...Object.keys(HISTORY_TERMS), ...POLICY_REASONS];
  for (const c of codes) t.ok(CATEGORIES.includes(REASON_CATEGORY[c]!), `${c} -> ${REASON_CATEGORY[c]}`);
  t.same(Object.keys(REASON_CATEGORY).sort(), codes.sort(), 'and no category for a code that does not exist');
});

t.test("a transaction's category is its leading reason's", async (t) => {
  const base = {
    ipBogon: false, uaMalformed: false, ifaMalformed: false, ifaKnownBad: false, deviceImpossible: false, declaredBot: false,
    automation: false, ipHosting: false, ipVpn: false, ipProxy: false, ipTor: false, uaInconsistent: false, suaMismatch: false, geoMismatch: false,
    schainPresent: false, schainValid: false, schainVerified: false, schainComplete: false, zeroIfa: false, ipRelay: false, sellerUnauthorized: false, history: NO_HISTORY,
  };
  const r = score({ ...base, ipHosting: true, geoMismatch: true, declaredBot: true });
  t.equal(r.leading, 'ua_declared_bot', 'the strongest signal leads');
  t.equal(categoryOf(false, r.leading), 'declared_crawler');
  t.equal(categoryOf(true, r.leading), 'none', 'valid transactions have none');
  t.equal(score({ ...base, ipVpn: true, uaInconsistent: true }).leading, 'ip_vpn', 'ties go to the first to fire');
  t.equal(score(base).leading, '');
});
