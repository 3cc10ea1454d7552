// The fleet-wide activity tables (src/signals/fleet-activity.ts): what the lookup threads
// report per key and drain, how the fleet's view completes history's facts, and the bounds.
import t from 'tap';
import { ActivityDeltas, FLEET_ACTIVITY_KEYS, FleetActivity, KIND_IFA, KIND_IP, KIND_UID, PROJECT_MAX_MS, allocateActivityDeltas, allocateFleetActivity, mapBit, type FleetKey } from '../../src/signals/fleet-activity.ts';
import { History } from '../../src/signals/history.ts';

const history = History.create({ seed: 7, epoch: 0 });
const keysOf = (ip: string, uid: string, ifa: string, ua: string) => ({ ...history.keysFor({ ip, uid, ifa, ua }) });

function mapOf(...words: number[]): number[] {
  const m = [0, 0, 0, 0];
  for (const w of words) {
    const b = mapBit(w);
    m[b >>> 5] = (m[b >>> 5]! | (1 << (b & 31))) >>> 0;
  }
  return m;
}

t.test('deltas: each key of a lookup counted with its outcomes and values, drained once', async (t) => {
  const d = new ActivityDeltas(allocateActivityDeltas(1024));
  const a = keysOf('203.0.113.1', 'u1', 'AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE', 'ua-1');
  const b = keysOf('203.0.113.2', 'u1', '', 'ua-2');
  d.note(a, false);
  d.note(a, true);
  d.note(b, false);
  const rows = d.drain();
  const find = (kind: number, k: { hi: number; lo: number }) => rows.find((r) => r.kind === kind && r.hi === k.hi && r.lo === k.lo);
  const uid = find(KIND_UID, { hi: a.uidHi, lo: a.uidLo })!;
  t.match(uid, { n: 3, bad: 1, outcomes: 3 }, 'the uid: three lookups, one invalid');
  t.same([...uid.a], mapOf(a.ipLo, b.ipLo), "the uid's IPs");
  t.same([...uid.b], mapOf(a.uaFp, b.uaFp), "the uid's UAs");
  const ip = find(KIND_IP, { hi: a.ipHi, lo: a.ipLo })!;
  t.match(ip, { n: 2, bad: 1 });
  t.same([...ip.a], mapOf(a.uaFp), "the IP's UAs");
  t.same([...ip.b], mapOf(a.uidLo), "the IP's uids");
  t.match(find(KIND_IFA, { hi: a.ifaHi, lo: a.ifaLo }), { n: 2 });
  t.equal(rows.length, 4, 'two IPs, one uid, one IFA');
  t.same(d.drain(), [], 'drained: the next interval starts empty');
  d.note(a, false);
  t.equal(d.drain().length, 3, 'the other half serves the next interval');
});

t.test('deltas are bounded, and a busy key outlives a flood of one-off keys', async (t) => {
  const d = new ActivityDeltas(allocateActivityDeltas(1024));
  const bot = keysOf('198.51.100.9', 'bot', '', 'ua');
  for (let i = 0; i < 20_000; i++) {
    if (i % 10 === 0) d.note(bot, false);
    d.note(keysOf(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, '', '', 'x'), false);
  }
  const rows = d.drain();
  t.ok(rows.length <= 1024 + 8, `at most the table's slots (${rows.length})`);
  const uid = rows.find((r) => r.kind === KIND_UID && r.hi === bot.uidHi);
  t.equal(uid?.n, 2000, 'the busy uid kept every lookup');
});

const entry = (kind: FleetKey['kind'], hi: number, lo: number, o: Partial<FleetKey> = {}): FleetKey => ({
  kind, hi, lo, rate: 0, burst10: 0, seen: 0, recent: 0, bad: 0, outcomes: 0, a: [0, 0, 0, 0], b: [0, 0, 0, 0], ...o,
});

t.test("the fleet's view completes the local facts", async (t) => {
  const v = new FleetActivity(allocateFleetActivity());
  const k = keysOf('203.0.113.5', 'u5', '', 'ua-5');
  const now = 1_000_000;
  const local = () => ({ ...history.peek(k, now) });
  const f0 = local();
  t.equal(v.complete(k, f0, now), false, 'an empty view: nothing changes (a single host, or ClickHouse away)');
  t.same(f0, local());
  v.replace([
    entry(KIND_UID, k.uidHi, k.uidLo, { rate: 900, burst10: 300, seen: 400, bad: 100, outcomes: 400, a: mapOf(1111, 2222, 3333), b: mapOf(k.uaFp) }),
    entry(KIND_IP, k.ipHi, k.ipLo, { rate: 0.5, seen: 0.5, a: mapOf(k.uaFp, 9, 10), b: mapOf(k.uidLo, 77) }),
  ], now);
  const f = local();
  t.equal(v.complete(k, f, now), true);
  t.equal(f.uidRate, 900, "the fleet's rate (this host's included) where it is above the local one");
  t.equal(f.uidBurst10s, 300);
  t.equal(f.uidDistinctIps, 4, "the fleet's three IPs and this lookup's");
  t.equal(f.uidDistinctUas, 1, 'the same UA everywhere is one UA');
  t.ok(Math.abs(f.uidBotShare - 100 / 400) < 1e-6, "the fleet's share: it rests on more outcomes");
  t.equal(f.uidSeen, 400);
  t.equal(f.ipDistinctUas, 3);
  t.equal(f.ipDistinctUids, 2);
  t.equal(f.ipRate, local().ipRate, 'a fleet rate below the local one changes nothing (never a sum)');
  t.equal(f.ifaRate, 0, 'no IFA, nothing added');
  const ex = v.describe(k);
  t.match(ex, { uid: { rate: 900, burst10s: 300, distinctA: 3 }, ip: { rate: 0.5 }, ifa: null });

  // The other hosts' recent rate is carried forward from the view's time, at most PROJECT_MAX_MS.
  v.replace([entry(KIND_UID, k.uidHi, k.uidLo, { rate: 600, burst10: 100, recent: 30 })], now);
  const later = local();
  v.complete(k, later, now + 2000);
  t.equal(later.uidBurst10s, 100 + 60, 'two seconds of 30 a second carried forward');
  t.equal(later.uidRate, 600 + 60);
  const much = local();
  v.complete(k, much, now + 60_000);
  t.equal(much.uidBurst10s, 100 + (30 * PROJECT_MAX_MS) / 1000, 'at most PROJECT_MAX_MS');
});

t.test("the view holds at most FLEET_ACTIVITY_KEYS keys", async (t) => {
  const v = new FleetActivity(allocateFleetActivity());
  const many = Array.from({ length: FLEET_ACTIVITY_KEYS + 500 }, (_, i) => entry(KIND_IP, (i * 2654435761) >>> 0 || 1, i, { rate: 1 }));
  t.equal(v.replace(many), FLEET_ACTIVITY_KEYS);
  t.equal(v.size, FLEET_ACTIVITY_KEYS);
  t.equal(v.replace([]), 0, 'emptied (local only)');
});
