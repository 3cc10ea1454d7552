// The lookup response (src/prebid/response.ts): num4 writes what String() writes, from a
// table for the four-decimal values the score produces; the flags' part, also from a table,
// says what each signal says in every combination.
import t from 'tap';
import { emptySignals } from '../../src/prebid/gather.ts';
import { num4, responseJson } from '../../src/prebid/response.ts';
import type { ScoreResult } from '../../src/signals/score.ts';

t.test('every four-decimal value in [0, 1] is written as String() writes it, twice (the table)', async (t) => {
  let wrong = 0;
  for (let pass = 0; pass < 2; pass++) {
    for (let k = 0; k <= 10_000; k++) {
      const x = k / 10_000;
      if (num4(x) !== String(x)) wrong++;
      const r = Math.round((x + 0.00003) * 10_000) / 10_000; // as score.ts's round4 makes them
      if (num4(r) !== String(r)) wrong++;
    }
  }
  t.equal(wrong, 0);
});

t.test('any other number is formatted as usual', async (t) => {
  for (const x of [-0, 0.00005, 0.12345, 1.0001, 1.5, -0.25, 1e-7, 12, NaN, Infinity, 0.1 + 0.2]) {
    t.equal(num4(x), String(x), String(x));
  }
});

t.test('the flags read as the signals say, in every combination, twice (the table)', async (t) => {
  const r = { score: 0.1234, band: 'medium', confidence: 0.9, p_hard: 0, p_givt: 0.05, p_sivt: 0.0123, p_hist: 0.5 } as ScoreResult;
  let wrong = 0;
  for (let pass = 0; pass < 2; pass++) {
    // Ten signals behind the seven flags: each on or off.
    for (let i = 0; i < 1024; i++) {
      const s = emptySignals();
      const on = (bit: number) => (i & (1 << bit)) !== 0;
      s.ipBotActivity = on(0);
      s.ipHosting = on(1);
      s.ip.hosting = on(2);
      s.ipVpn = on(3);
      s.ipTor = on(4);
      s.uaMalformed = on(5);
      s.schainValid = on(6);
      s.schainVerified = on(7);
      s.schainCompleteFlag = on(8) ? 1 : 0;
      s.automation = on(9);
      const got = JSON.parse(responseJson(s, r, i % 3 === 0 ? '' : 'lid-' + i, i % 5 === 0 ? ',"id":"x"' : ''));
      const want = {
        botRisk: { score: 0.1234, band: 'medium', confidence: 0.9 },
        components: { p_hard: 0, p_givt: 0.05, p_sivt: 0.0123, p_hist: 0.5 },
        ipReputation: { ipBotActivity: on(0), ipHosting: on(1) || on(2), ipVpn: on(3) || on(4) },
        uaValid: !on(5) && !on(9),
        schain: { valid: on(6), verified: on(7), complete: on(8) ? 1 : 0 },
        ...(i % 3 === 0 ? {} : { lid: 'lid-' + i }),
        ...(i % 5 === 0 ? { id: 'x' } : {}),
      };
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        wrong++;
        if (wrong === 1) t.same(got, want, `combination ${i}`);
      }
    }
  }
  t.equal(wrong, 0);
});
