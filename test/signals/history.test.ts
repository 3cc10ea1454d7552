import t from 'tap';
import { Worker } from 'node:worker_threads';
import {
  History,
  HISTORY_DEFAULTS,
  IP_BOT_MIN_EVIDENCE,
  IP_BOT_SINGLE_CLIENT_RATE,
  IP_BOT_UA_ROTATION_MIN_UAS,
  NO_HISTORY,
  SMALL_SET_SLOTS,
  allocateHistory,
  ipBotActivity,
  type HistoryFacts,
} from '../../src/signals/history.ts';

const T0 = 1_700_000_000_000;
const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

interface Obs {
  ip: string;
  uid: string;
  ifa: string;
  ua: string;
  now: number;
}

function obs(over: Partial<Obs> = {}): Obs {
  return { ip: '203.0.113.7', uid: 'u-1', ifa: '', ua: CHROME, now: T0, ...over };
}

/** A history with a fixed seed and epoch, so runs are repeatable. */
function fresh(opts: { bytes?: number; seed?: number } = {}): History {
  return History.create({ epoch: T0, seed: opts.seed ?? 42, ...(opts.bytes ? { bytes: opts.bytes } : {}) });
}

/** observe() reuses its result object; tests keep copies. */
function see(h: History, over: Partial<Obs> = {}): HistoryFacts {
  const o = obs(over);
  return { ...h.observe(h.keysFor(o), o.now) };
}

function record(h: History, over: Partial<Obs>, invalid: boolean): void {
  h.recordOutcome(h.keysFor(obs(over)), invalid);
}

t.test('a first lookup counts once and has no bot share', async (t) => {
  const h = fresh();
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
  const h = fresh();
  let f = see(h);
  for (let k = 1; k < 30; k++) f = see(h, { now: T0 + k * 100 });
  t.ok(f.ipRate > 29 && f.ipRate <= 30, `30 lookups in 3 s read as about 30/min (${f.ipRate})`);
  t.ok(f.uidRate > 29 && f.uidRate <= 30);
  const burst = f.ipRate;
  // One window later the old lookups weigh e^-1; ten windows later almost nothing.
  f = see(h, { now: T0 + 2_900 + HISTORY_DEFAULTS.windowMs });
  // Counters are 32-bit floats in shared memory: equal to about 7 significant digits.
  t.ok(Math.abs(f.ipRate - (1 + burst / Math.E)) < 1e-5, `decayed by e after one window (${f.ipRate})`);
  f = see(h, { now: T0 + 2_900 + 11 * HISTORY_DEFAULTS.windowMs });
  t.ok(f.ipRate < 1.01, `back to about one lookup (${f.ipRate})`);
  t.ok(f.ipSeen > f.ipRate, 'evidence decays more slowly than velocity');
});

t.test('steady traffic converges to its per-minute rate', async (t) => {
  const h = fresh();
  let f = see(h);
  // 2 lookups per second for 10 minutes = 120/min.
  for (let k = 1; k <= 1200; k++) f = see(h, { now: T0 + k * 500 });
  t.ok(Math.abs(f.ipRate - 120) < 2, `about 120/min (${f.ipRate})`);
});

t.test('distinct UAs and uids per IP, IPs and UAs per uid, within the window', async (t) => {
  const h = fresh();
  let f = see(h);
  for (let k = 0; k < 5; k++) f = see(h, { ua: `${CHROME} v${k}`, uid: `u-${k}`, now: T0 + 1000 });
  // Per IP: linear counting over 128 bits; with 6 values a shared bit has probability 6*5/256.
  t.ok(Math.abs(f.ipDistinctUas - 6) <= 1, `base UA plus five variants (${f.ipDistinctUas})`);
  t.ok(Math.abs(f.ipDistinctUids - 5) <= 1, `u-0..u-4, u-1 twice (${f.ipDistinctUids})`);
  const before = f.ipDistinctUas;
  f = see(h, { now: T0 + 2000 });
  t.equal(f.ipDistinctUas, before, 'repeating a UA adds nothing');

  for (let k = 0; k < 4; k++) f = see(h, { ip: `198.51.100.${k}`, uid: 'hopper', now: T0 + 3000 });
  t.equal(f.uidDistinctIps, 4, 'one uid over four IPs (exact per uid)');
  t.equal(f.uidDistinctUas, 1);
  f = see(h, { ip: '198.51.100.0', uid: 'hopper', ua: 'Other/1.0', now: T0 + 3000 });
  t.equal(f.uidDistinctUas, 2, 'same cookie, second UA');
  t.equal(f.uidDistinctIps, 4);

  // After the window only the current values remain.
  f = see(h, { ip: '198.51.100.9', uid: 'hopper', now: T0 + 3000 + HISTORY_DEFAULTS.windowMs + 1000 });
  t.equal(f.uidDistinctIps, 1);
  t.equal(f.uidDistinctUas, 1);
});

t.test('per-IP distinct counts: many values estimated, old generations forgotten', async (t) => {
  const h = fresh();
  let f = see(h);
  for (let k = 0; k < 100; k++) f = see(h, { ua: `bot ${k}`, uid: `farm-${k}`, now: T0 + k });
  // Linear counting over 128 bits: about ±7 % at this size.
  t.ok(f.ipDistinctUas >= 80 && f.ipDistinctUas <= 125, `about 101 UAs (${f.ipDistinctUas})`);
  t.ok(f.ipDistinctUids >= 80 && f.ipDistinctUids <= 125, `about 101 uids (${f.ipDistinctUids})`);
  t.ok(ipBotActivity(f) || f.ipDistinctUids > 32, 'a farm of that size is visible');
  // Bitmaps cover the last half window to one window: two windows later only the new value counts.
  f = see(h, { ua: 'late', now: T0 + 2 * HISTORY_DEFAULTS.windowMs });
  t.equal(f.ipDistinctUas, 1, 'everything else has gone stale');
});

t.test('per-uid distinct counts saturate at the small-set size and reuse stale slots', async (t) => {
  const h = fresh();
  let f = see(h);
  for (let k = 0; k < 50; k++) f = see(h, { ua: `bot ${k}`, now: T0 + k });
  t.equal(f.uidDistinctUas, SMALL_SET_SLOTS);
  f = see(h, { ua: 'late', now: T0 + 10 * HISTORY_DEFAULTS.windowMs });
  t.equal(f.uidDistinctUas, 1, 'everything else has gone stale');
});

t.test('ifa facts: lowercased key, zero IFA and empty ids are not tracked', async (t) => {
  const h = fresh();
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

t.test('IPs by canonical form: mapped IPv4 is IPv4, IPv6 by its /64', async (t) => {
  const h = fresh();
  see(h, { ip: '198.51.100.7' });
  t.equal(see(h, { ip: '::ffff:198.51.100.7' }).ipRate, 2, '::ffff:a.b.c.d is a.b.c.d');
  see(h, { ip: '2001:db8:1:2::1' });
  t.equal(see(h, { ip: '2001:db8:1:2:abcd::99' }).ipRate, 2, 'same /64, one subscriber');
  t.equal(see(h, { ip: '2001:db8:1:3::1' }).ipRate, 1, 'another /64');
});

t.test('memory is fixed: far more keys than the tables hold, footprint unchanged', async (t) => {
  const h = fresh({ bytes: 256 << 10 });
  const bytes = h.bytes;
  const cap = h.capacity;
  t.ok(bytes <= 256 << 10, `tables within their ${256 << 10} bytes (${bytes})`);
  const heapBefore = process.memoryUsage().heapUsed;
  const n = 20 * (cap.ips + cap.uids + cap.ifas);
  for (let k = 0; k < n; k++) {
    const ip = `10.${(k >> 16) & 255}.${(k >> 8) & 255}.${k & 255}`;
    h.observe(h.keysFor({ ip, uid: `u${k}-${'x'.repeat(k % 500)}`, ifa: `ab0c5e29-1d2b-4f7a-9e33-${String(k).padStart(12, '0')}`, ua: `UA ${k}` }), T0 + k);
  }
  const sizes = h.sizes;
  t.equal(h.bytes, bytes, 'shared bytes never change');
  t.ok(sizes.ips <= cap.ips && sizes.uids <= cap.uids && sizes.ifas <= cap.ifas, `at most the capacity (${JSON.stringify(sizes)} of ${JSON.stringify(cap)})`);
  global.gc?.();
  const grew = process.memoryUsage().heapUsed - heapBefore;
  t.ok(grew < 16 << 20, `no per-key JS memory kept (${n} keys, heap grew ${(grew / 1048576).toFixed(1)} MB)`);
});

t.test('a flood of one-off keys does not evict a busy key', async (t) => {
  const h = fresh({ bytes: 64 << 10 });
  const busy = { ip: '198.51.100.200', uid: 'busy-cookie' };
  let f = see(h, busy);
  for (let k = 0; k < 200_000; k++) {
    if (k % 50 === 0) f = see(h, { ...busy, now: T0 + k });
    h.observe(h.keysFor({ ip: `10.1.${(k >> 8) & 255}.${k & 255}`, uid: `one-off-${k}`, ifa: '', ua: CHROME }), T0 + k);
  }
  t.ok(f.uidSeen > 3000, `the busy uid kept its evidence (${f.uidSeen.toFixed(0)})`);
  t.ok(f.ipSeen > 3000, `and so did its IP (${f.ipSeen.toFixed(0)})`);
});

t.test('bot share follows recorded outcomes and decays toward new ones', async (t) => {
  const h = fresh();
  let f = see(h);
  for (let k = 0; k < 30; k++) {
    f = see(h, { now: T0 + k * 1000 });
    record(h, {}, k % 3 !== 0); // two in three invalid
  }
  f = see(h, { now: T0 + 30_000 });
  t.ok(Math.abs(f.ipBotShare - 2 / 3) < 0.02, `ip share about 2/3 (${f.ipBotShare})`);
  t.ok(Math.abs(f.uidBotShare - 2 / 3) < 0.02);
  t.ok(f.ipSeen >= IP_BOT_MIN_EVIDENCE, `enough evidence (${f.ipSeen})`);
  t.ok(ipBotActivity(f), 'a mostly-invalid IP with evidence is bot-used');

  for (let k = 0; k < 60; k++) {
    see(h, { now: T0 + 31_000 + k * 10_000 });
    record(h, {}, false);
  }
  f = see(h, { now: T0 + 700_000 });
  t.ok(f.ipBotShare < 0.3, `clean traffic dilutes the old share (${f.ipBotShare})`);
  t.notOk(ipBotActivity(f));

  const other = fresh();
  record(other, {}, true);
  t.equal(see(other).ipBotShare, 0, 'outcomes for unseen keys are ignored');
});

t.test('peek answers what observe would, and changes nothing', async (t) => {
  const h = fresh();
  for (let k = 0; k < 10; k++) see(h, { ua: `UA ${k % 3}`, now: T0 + k * 100 });
  const probe = obs({ ua: 'UA 9', ip: '198.51.100.1', now: T0 + 1500 });
  const keys = { ...h.keysFor(probe) };
  const peeked = { ...h.peek(keys, probe.now) };
  const again = { ...h.peek(keys, probe.now) };
  t.same(again, peeked, 'peeking twice gives the same facts: nothing was written');
  t.same(h.sizes, { ips: 1, uids: 1, ifas: 0 }, 'no key created by a peek');
  const observed = { ...h.observe(keys, probe.now) };
  t.same(observed, peeked, 'observe returns what peek predicted');
  const unknown = { ...h.peek(h.keysFor(obs({ ip: '192.0.2.99', uid: 'nobody' })), T0) };
  t.equal(unknown.ipRate, 1, 'an unknown key reads as a first lookup');
  t.same(h.sizes, { ips: 2, uids: 1, ifas: 0 });
});

t.test('two threads see one history', async (t) => {
  const mem = allocateHistory(1 << 20, { seed: 7, epoch: T0 });
  const here = new History(mem);
  // tsx's hooks are not inherited by worker threads on Node 20: register them first (as src/runtime/worker-entry.ts does).
  const src = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.tsx).then((api) => { api.register(); return import(workerData.url); }).then(({ History }) => {
      const h = new History(workerData.mem);
      for (let k = 0; k < 500; k++) h.observe(h.keysFor({ ip: '198.51.100.5', uid: 'shared-uid', ifa: '', ua: 'UA' }), workerData.t0 + k);
      parentPort.postMessage(h.contended);
    });`;
  const url = new URL('../../src/signals/history.ts', import.meta.url).href;
  const runWorker = () =>
    new Promise<number>((resolve, reject) => {
      const w = new Worker(src, { eval: true, workerData: { mem, url, t0: T0, tsx: import.meta.resolve('tsx/esm/api') } });
      w.once('message', (contended: number) => resolve(contended));
      w.once('error', reject);
    });
  const contended = (await Promise.all([runWorker(), runWorker()])).reduce((a, b) => a + b, 0);
  const f = { ...here.peek(here.keysFor({ ip: '198.51.100.5', uid: 'shared-uid', ifa: '', ua: 'UA' }), T0 + 500) };
  // A lock whose holder the OS preempted is not waited for: the update goes ahead unlocked
  // (counted as contended) and it or the holder's may be lost, one per such update at most.
  // Separate per-thread records would read ~500 with nothing contended.
  const floor = 990 - contended;
  t.ok(f.uidSeen > floor && f.uidSeen <= 1001, `both threads' 1000 lookups in one record (${f.uidSeen}; ${contended} updates went ahead unlocked)`);
  t.ok(f.ipSeen > floor && f.ipSeen <= 1001, `ip too (${f.ipSeen})`);
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

t.test('IFA outcomes: invalid evidence against a device id shows as its bot share; its IP set is its own', async (t) => {
  const h = History.create({ seed: 7, epoch: T0 });
  const ifa = '6d92078a-8246-4ba4-ae5b-76104861e7dc';
  // Lookups of one IFA from three addresses, seconds apart; each outcome recorded against
  // the IFA alone (other uids and IPs each time), two of three invalid.
  let f: HistoryFacts = NO_HISTORY;
  for (let i = 0; i < 30; i++) {
    const o = obs({ ip: `198.51.100.${i % 3}`, uid: `u-${i}`, ifa, now: T0 + i * 2000 });
    f = see(h, o);
    h.recordOutcome(h.keysFor(o), i % 3 !== 0);
  }
  t.equal(f.ifaDistinctIps, 3, 'three addresses within the window: the outcome words never overwrite the IP set');
  t.ok(f.ifaSeen > 20, `evidence counted (${f.ifaSeen})`);
  const next = see(h, obs({ ip: '198.51.100.1', uid: 'u-next', ifa, now: T0 + 61_000 }));
  t.ok(Math.abs(next.ifaBotShare - 2 / 3) < 0.02, `the bot share is the invalid share of its outcomes (${next.ifaBotShare})`);
  t.equal(see(h, obs({ ifa: 'aaaaaaaa-1111-4222-8333-444444444444', now: T0 + 62_000 })).ifaBotShare, 0, 'another IFA: none');
  t.equal(see(h, obs({ ifa: '', now: T0 + 63_000 })).ifaSeen, 0, 'no IFA: no evidence');
});
