// Fleet-wide activity at scale (issue 55): many simulated hosts in this one process, each
// with its own delta table, view and history, each running the real exchange
// (src/fleet/activity.ts) against one real ClickHouse, under background traffic of a
// realistic key distribution (most keys seen once or twice, a pool of returning users with a
// Zipf skew). One bot (one uid, one IP, --bot-rate lookups/s) is sent round-robin over every
// host and, in the same seconds, to a reference host of its own (history alone, no fleet):
// both are scored by the real model on a clean request. Prints rows/s and bytes/s into
// ClickHouse, what ClickHouse stores, the pull's cost per exchange, and, side by side, the
// share of the bot's lookups answered `high` and the second from which it is high on one
// host and over the fleet.
//   npm run bench:fleet-activity -- [--hosts 50] [--rate 200] [--bot-rate 40] [--seconds 40] [--clickhouse-url URL]
import { loadavg } from 'node:os';
import { ClickHouse } from '../src/fleet/clickhouse.ts';
import { ActivityExchange } from '../src/fleet/activity.ts';
import { migrateClickHouse } from '../src/fleet/schema.ts';
import { parseClickHouseUrl } from '../src/base/clickhouse-url.ts';
import { emptySignals } from '../src/prebid/gather.ts';
import { ActivityDeltas, FleetActivity, allocateActivityDeltas, allocateFleetActivity } from '../src/signals/fleet-activity.ts';
import { History, type HistoryKeys } from '../src/signals/history.ts';
import { score } from '../src/signals/score.ts';
import { startClickHouse, type ClickHouseServer } from '../test/helpers/clickhouse.ts';
import { numArg, strArg } from './processes.ts';

const urlArg = strArg('clickhouse-url', '') || undefined;
const HOSTS = numArg('hosts', 50);
const RATE = numArg('rate', 200);
const BOT_RATE = numArg('bot-rate', 40);
const SECONDS = numArg('seconds', 40);
const POOL = numArg('pool', 20_000);
const SEED = 0x5eed;

/** A small deterministic generator (xorshift32). */
let rnd = 0x9e3779b9;
function random(): number {
  rnd ^= rnd << 13;
  rnd ^= rnd >>> 17;
  rnd ^= rnd << 5;
  return (rnd >>> 0) / 4294967296;
}

interface SimHost {
  name: string;
  history: History;
  deltas: ActivityDeltas;
  view: FleetActivity;
  exchange: ActivityExchange;
}

/** The bot's verdict on one host: the real model on a clean request with these history facts. */
function band(h: History, view: FleetActivity | null, k: HistoryKeys, now: number): string {
  const f = h.observe(k, now);
  if (view !== null) view.complete(k, f, now);
  const s = emptySignals();
  s.history = f;
  return score(s).band;
}

async function main(): Promise<void> {
  let server: ClickHouseServer | null = null;
  let url = urlArg;
  if (!url) {
    server = await startClickHouse();
    url = server.url('fleet_activity_bench');
  }
  const ch = new ClickHouse(parseClickHouseUrl(url), { requestTimeoutMs: 10_000 });
  await migrateClickHouse(ch);
  const ref = History.create({ bytes: 1 << 20, seed: SEED, epoch: 0 });
  const keysOf = (ip: string, uid: string) => ({ ...ref.keysFor({ ip, uid, ifa: '', ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/124.0.0.0' }) });
  const hosts: SimHost[] = [];
  for (let i = 0; i < HOSTS; i++) {
    const deltas = new ActivityDeltas(allocateActivityDeltas(8192));
    const view = new FleetActivity(allocateFleetActivity());
    const hostCh = new ClickHouse(parseClickHouseUrl(url), { requestTimeoutMs: 5000 });
    // Host 0 plays the full instance: it computes the fleet's view each interval; the others read it.
    const exchange = new ActivityExchange(hostCh, { computes: i === 0, drain: () => deltas.drain(), onView: (keys, asOf) => void view.replace(keys, asOf) }, `sim-${i}`);
    hosts.push({ name: `sim-${i}`, history: History.create({ bytes: 1 << 20, seed: SEED, epoch: 0 }), deltas, view, exchange });
  }
  // Background keys: a pool of returning users (Zipf-like: user j with weight 1/(j+1)), else one-off visitors.
  const pool = Array.from({ length: POOL }, (_, j) => keysOf(`10.${(j >> 16) & 255}.${(j >> 8) & 255}.${j & 255}`, `user-${j}`));
  const logPool = Math.log(POOL + 1);
  let oneOff = 0;
  const background = (): HistoryKeys => {
    if (random() < 0.5) {
      const j = Math.min(POOL - 1, Math.floor(Math.exp(random() * logPool)) - 1);
      return pool[j]!;
    }
    oneOff++;
    return keysOf(`172.${(oneOff >> 16) & 255}.${(oneOff >> 8) & 255}.${oneOff & 255}`, `visitor-${oneOff}`);
  };

  const botKeys = keysOf('73.162.10.22', 'bot-fleet');
  const refKeys = keysOf('73.162.10.21', 'bot-single');
  // Warm: every host exchanges once before the bot starts (the fleet is running).
  for (const h of hosts) h.exchange.start();
  const tick = 50;
  const warmUntil = Date.now() + 3000;
  while (Date.now() < warmUntil) {
    const now = Date.now();
    for (const h of hosts) for (let i = 0; i < (RATE * tick) / 1000; i++) h.deltas.note(background(), false);
    await new Promise((r) => setTimeout(r, Math.max(0, tick - (Date.now() - now))));
  }
  const sent0 = hosts.reduce((s, h) => s + h.exchange.rowsSent, 0);
  const bytes0 = hosts.reduce((s, h) => s + h.exchange.bytesSent, 0);
  const recv0 = hosts.reduce((s, h) => s + h.exchange.rowsReceived, 0);
  const t0 = Date.now();
  let botSent = 0;
  const single: Array<{ at: number; band: string }> = [];
  const fleet: Array<{ at: number; band: string }> = [];
  const pulls: number[] = [];
  const computes: number[] = [];
  let lastSample = 0;
  let carry = 0;
  while (Date.now() - t0 < SECONDS * 1000) {
    const now = Date.now();
    const el = (now - t0) / 1000;
    carry += (RATE * tick) / 1000;
    const n = Math.floor(carry);
    carry -= n;
    for (const h of hosts) for (let i = 0; i < n; i++) h.deltas.note(background(), false);
    while (botSent < Math.floor(el * BOT_RATE) + 1) {
      const h = hosts[botSent % hosts.length]!;
      fleet.push({ at: el, band: band(h.history, h.view, botKeys, now) });
      h.deltas.note(botKeys, false);
      single.push({ at: el, band: band(ref, null, refKeys, now) });
      botSent++;
    }
    if (now - lastSample >= 1000) {
      lastSample = now;
      for (const h of hosts) if (h.exchange.lastPullMs > 0) pulls.push(h.exchange.lastPullMs);
      if (hosts[0]!.exchange.lastComputeMs > 0) computes.push(hosts[0]!.exchange.lastComputeMs);
    }
    await new Promise((r) => setTimeout(r, Math.max(0, tick - (Date.now() - now))));
  }
  const dur = (Date.now() - t0) / 1000;
  for (const h of hosts) h.exchange.stop();
  await Promise.all(hosts.map((h) => h.exchange.settled()));
  const rows = hosts.reduce((s, h) => s + h.exchange.rowsSent, 0) - sent0;
  const bytes = hosts.reduce((s, h) => s + h.exchange.bytesSent, 0) - bytes0;
  const recv = hosts.reduce((s, h) => s + h.exchange.rowsReceived, 0) - recv0;
  const failures = hosts.reduce((s, h) => s + h.exchange.failures, 0);
  const stored = await ch.rows<{ rows: string; bytes: string }>("SELECT sum(rows) AS rows, sum(bytes_on_disk) AS bytes FROM system.parts WHERE database = currentDatabase() AND table = 'activity' AND active");
  const sum = (l: Array<{ at: number; band: string }>) => {
    const high = l.filter((a) => a.band === 'high').length;
    let steady = Infinity;
    for (let i = l.length - 1; i >= 0 && l[i]!.band === 'high'; i--) steady = l[i]!.at;
    const first = l.find((a) => a.band === 'high')?.at ?? Infinity;
    return { share: high / Math.max(1, l.length), first, steady };
  };
  const s = sum(single);
  const f = sum(fleet);
  pulls.sort((a, b) => a - b);
  const q = (p: number) => pulls[Math.min(pulls.length - 1, Math.floor(p * pulls.length))] ?? NaN;
  console.log(`fleet activity bench: ${HOSTS} simulated hosts in one process, ${RATE} background lookups/s each (${HOSTS * RATE}/s in all), bot ${BOT_RATE}/s for ${SECONDS} s; load average ${loadavg()[0]!.toFixed(1)} on this machine`);
  console.log(`into ClickHouse: ${(rows / dur).toFixed(0)} rows/s, ${(bytes / dur / 1024).toFixed(0)} KiB/s (JSONEachRow), ${(rows / dur / HOSTS).toFixed(0)} rows/s per host (${((rows / dur / HOSTS) / (RATE + BOT_RATE / HOSTS)).toFixed(2)} per lookup); stored now: ${Number(stored[0]?.rows ?? 0)} rows, ${(Number(stored[0]?.bytes ?? 0) / 1048576).toFixed(1)} MiB`);
  console.log(`pull per host per interval: p50 ${q(0.5).toFixed(0)} ms, p95 ${q(0.95).toFixed(0)} ms, max ${q(1).toFixed(0)} ms; ${(recv / dur / HOSTS).toFixed(0)} keys received per host per second; ${failures} failed exchanges`);
  computes.sort((a, b) => a - b);
  const cq = (p: number) => computes[Math.min(computes.length - 1, Math.floor(p * computes.length))] ?? NaN;
  const fallback = hosts.slice(1).reduce((n, h) => n + h.exchange.computed, 0);
  console.log(`the view's computation (once an interval, the full instance): p50 ${cq(0.5).toFixed(0)} ms, p95 ${cq(0.95).toFixed(0)} ms; ${hosts[0]!.exchange.computed} computed; ${fallback} computed by other hosts (no fresh view)`);
  console.log('                      share high   first high   high for good from');
  console.log(`one host alone        ${(s.share * 100).toFixed(1).padStart(8)} %   ${s.first.toFixed(1).padStart(8)} s   ${s.steady.toFixed(1).padStart(8)} s`);
  console.log(`${String(HOSTS).padStart(3)} hosts round-robin ${(f.share * 100).toFixed(1).padStart(8)} %   ${f.first.toFixed(1).padStart(8)} s   ${f.steady.toFixed(1).padStart(8)} s   (${(f.share / Math.max(1e-9, s.share)).toFixed(2)} × one host's share)`);
  await Promise.all(hosts.map((h) => (h.exchange as unknown as { ch: ClickHouse }).ch.close()));
  await ch.close();
  await server?.destroy();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
