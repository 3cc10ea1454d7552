import t from 'tap';
import {
  History,
  HISTORY_DEFAULTS,
  IP_BOT_MIN_EVIDENCE,
  IP_BOT_SINGLE_CLIENT_RATE,
  IP_BOT_UA_ROTATION_MIN_UAS,
  NO_HISTORY,
  ipBotActivity,
  type HistoryFacts,
  type Observation,
} from '../../src/signals/history.ts';

const T0 = 1_700_000_000_000;
const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

function obs(over: Partial<Observation> = {}): Observation {
  return { ip: '203.0.113.7', uid: 'u-1', ifa: '', ua: CHROME, pub: 'pub-1', now: T0, ...over };
}

/** observe() reuses its result object; tests keep copies. */
function see(h: History, over: Partial<Observation> = {}): HistoryFacts {
  return { ...h.observe(obs(over)) };
}

t.test('a first lookup counts once and has no bot share', async (t) => {
  const h = new History();
  const f = see(h);
  t.equal(f.ipRate, 1);
  t.equal(f.uidRate, 1);
  t.equal(f.ipSeen, 1);
  t.equal(f.uidSeen, 1);
  t.equal(f.ipDistinctUas, 1);
  t.equal(f.ipDistinctUids, 1);
  t.equal(f.uidDistinctIps, 1);
  t.equal(f.uidDistinctUas, 1);
  t.equal(f.ipBotShare, 0);
  t.equal(f.ifaRate, 0, 'no ifa, no ifa facts');
  t.same(h.sizes, { ips: 1, uids: 1, ifas: 0 });
});

t.test('velocity rises with repeated lookups and decays as time passes', async (t) => {
  const h = new History();
  let f = see(h);
  for (let k = 1; k < 30; k++) f = see(h, { now: T0 + k * 100 });
  t.ok(f.ipRate > 29 && f.ipRate <= 30, `30 lookups in 3 s read as about 30/min (${f.ipRate})`);
  t.ok(f.uidRate > 29 && f.uidRate <= 30);
  const burst = f.ipRate;
  // One window later the old lookups weigh e^-1; ten windows later almost nothing.
  f = see(h, { now: T0 + 2_900 + HISTORY_DEFAULTS.windowMs });
  t.ok(Math.abs(f.ipRate - (1 + burst / Math.E)) < 1e-9, `decayed by e after one window (${f.ipRate})`);
  f = see(h, { now: T0 + 2_900 + 11 * HISTORY_DEFAULTS.windowMs });
  t.ok(f.ipRate < 1.01, `back to about one lookup (${f.ipRate})`);
  t.ok(f.ipSeen > f.ipRate, 'evidence decays more slowly than velocity');
});

t.test('steady traffic converges to its per-minute rate', async (t) => {
  const h = new History();
  let f = see(h);
  // 2 lookups per second for 10 minutes = 120/min.
  for (let k = 1; k <= 1200; k++) f = see(h, { now: T0 + k * 500 });
  t.ok(Math.abs(f.ipRate - 120) < 2, `about 120/min (${f.ipRate})`);
});

t.test('distinct UAs and uids per IP, IPs and UAs per uid, within the window', async (t) => {
  const h = new History();
  let f = see(h);
  for (let k = 0; k < 5; k++) f = see(h, { ua: `${CHROME} v${k}`, uid: `u-${k}`, now: T0 + 1000 });
  t.equal(f.ipDistinctUas, 6, 'base UA plus five variants');
  t.equal(f.ipDistinctUids, 5, 'u-0..u-4 (u-1 twice)');
  f = see(h, { now: T0 + 2000 });
  t.equal(f.ipDistinctUas, 6, 'repeating a UA adds nothing');

  for (let k = 0; k < 4; k++) f = see(h, { ip: `198.51.100.${k}`, uid: 'hopper', now: T0 + 3000 });
  t.equal(f.uidDistinctIps, 4, 'one uid over four IPs');
  t.equal(f.uidDistinctUas, 1);
  f = see(h, { ip: '198.51.100.0', uid: 'hopper', ua: 'Other/1.0', now: T0 + 3000 });
  t.equal(f.uidDistinctUas, 2, 'same cookie, second UA');
  t.equal(f.uidDistinctIps, 4);

  // After the window only the current values remain.
  f = see(h, { ip: '198.51.100.9', uid: 'hopper', now: T0 + 3000 + HISTORY_DEFAULTS.windowMs + 1000 });
  t.equal(f.uidDistinctIps, 1);
  t.equal(f.uidDistinctUas, 1);
});

t.test('distinct counts saturate at maxDistinct and reuse stale slots', async (t) => {
  const h = new History({ maxDistinct: 8 });
  let f = see(h);
  for (let k = 0; k < 50; k++) f = see(h, { ua: `bot ${k}`, now: T0 + k });
  t.equal(f.ipDistinctUas, 8);
  f = see(h, { ua: 'late', now: T0 + 10 * HISTORY_DEFAULTS.windowMs });
  t.equal(f.ipDistinctUas, 1, 'everything else has gone stale');
});

t.test('ifa facts: lowercased key, zero IFA and empty ids are not tracked', async (t) => {
  const h = new History();
  const ifa = 'AB0C5E29-1D2B-4F7A-9E33-0A1B2C3D4E5F';
  see(h, { ifa, ip: '192.0.2.1' });
  let f = see(h, { ifa: ifa.toLowerCase(), ip: '192.0.2.2' });
  t.equal(f.ifaRate, 2, 'both spellings are one device');
  t.equal(f.ifaDistinctIps, 2);
  see(h, { ip: '203.0.113.7' });
  f = see(h, { ifa: '00000000-0000-0000-0000-000000000000', uid: '00000000-0000-0000-0000-000000000000' });
  t.equal(f.ifaRate, 0, 'limited-ad-tracking IFA is shared by millions: not a key');
  t.equal(f.uidRate, 0);
  t.equal(f.ipDistinctUids, 1, 'the IP still reports the uids it saw');
  f = see(h, { uid: '' });
  t.equal(f.uidSeen, 0);
  t.same(h.sizes, { ips: 3, uids: 1, ifas: 1 });
});

t.test('LRU bound holds under more keys than the cap', async (t) => {
  const h = new History({ maxIps: 100, maxUids: 50, maxIfas: 10 });
  for (let k = 0; k < 1000; k++) {
    h.observe(obs({ ip: `10.0.${k >> 8}.${k & 255}`, uid: `u${k}`, ifa: `ab0c5e29-1d2b-4f7a-9e33-${String(k).padStart(12, '0')}` }));
  }
  t.same(h.sizes, { ips: 100, uids: 50, ifas: 10 });
  // The most recent keys survive, the oldest are forgotten.
  t.equal(see(h, { ip: '10.0.3.231', uid: 'u999' }).ipRate, 2);
  t.equal(see(h, { ip: '10.0.0.0', uid: 'u0' }).ipRate, 1);
});

t.test('bot share follows recorded outcomes and decays toward new ones', async (t) => {
  const h = new History();
  const keys = { ip: '203.0.113.7', uid: 'u-1', ifa: '' };
  let f = see(h);
  for (let k = 0; k < 30; k++) {
    f = see(h, { now: T0 + k * 1000 });
    h.recordOutcome(keys, k % 3 !== 0); // two in three invalid
  }
  f = see(h, { now: T0 + 30_000 });
  t.ok(Math.abs(f.ipBotShare - 2 / 3) < 0.02, `ip share about 2/3 (${f.ipBotShare})`);
  t.ok(Math.abs(f.uidBotShare - 2 / 3) < 0.02);
  t.ok(f.ipSeen >= IP_BOT_MIN_EVIDENCE, `enough evidence (${f.ipSeen})`);
  t.ok(ipBotActivity(f), 'a mostly-invalid IP with evidence is bot-used');

  for (let k = 0; k < 60; k++) {
    see(h, { now: T0 + 31_000 + k * 10_000 });
    h.recordOutcome(keys, false);
  }
  f = see(h, { now: T0 + 700_000 });
  t.ok(f.ipBotShare < 0.3, `clean traffic dilutes the old share (${f.ipBotShare})`);
  t.notOk(ipBotActivity(f));

  const other = new History();
  other.recordOutcome(keys, true);
  t.equal(see(other).ipBotShare, 0, 'outcomes for unseen keys are ignored');
});

t.test('ipBotActivity thresholds', async (t) => {
  t.notOk(ipBotActivity(NO_HISTORY));
  t.notOk(ipBotActivity({ ...NO_HISTORY, ipBotShare: 1, ipSeen: IP_BOT_MIN_EVIDENCE - 1 }), 'too little evidence');
  t.ok(ipBotActivity({ ...NO_HISTORY, ipBotShare: 0.5, ipSeen: IP_BOT_MIN_EVIDENCE }));
  const single = { ...NO_HISTORY, ipRate: IP_BOT_SINGLE_CLIENT_RATE, ipDistinctUas: 1, ipDistinctUids: 1 };
  t.ok(ipBotActivity(single), 'one client at machine speed');
  t.notOk(ipBotActivity({ ...single, ipDistinctUids: 40, ipDistinctUas: 30 }), 'a busy NAT of many users is not');
  const rot = { ...NO_HISTORY, ipDistinctUas: IP_BOT_UA_ROTATION_MIN_UAS, ipDistinctUids: 2 };
  t.ok(ipBotActivity(rot), 'UA rotation over few cookies');
  t.notOk(ipBotActivity({ ...rot, ipDistinctUids: 30 }), 'many users, many UAs');
});
