// kill -9 of a fleet edge at random moments under lookup load, each kill followed by a
// restart on the same data dir (`npm run bench:kill -- --fleet`, and test/fleet/kill.test.ts
// at a smaller size). A real ClickHouse (test/helpers/clickhouse.ts), a full instance
// (`--role all`: the customer and its keys) and one edge (`--role edge`) under the load.
// The cycles go in threes: ClickHouse up throughout; ClickHouse killed during the load
// (the edge's spool holds rows when the edge is killed, and it restarts without
// ClickHouse); ClickHouse started again during the load (the edge is killed while it may be
// delivering its spool). Checks: the edge always starts on its data dir (and serves: a
// restart during an outage serves with the keys it kept); the rows the spool held are
// counted in its metrics after the restart; whenever ClickHouse is up, once the edge has
// emptied its spool, ClickHouse never holds more lookups than were answered (hourly and
// daily tables alike: nothing counted twice), and the kills since the last check lost at
// most the lookups answered in each one's last flush interval (+ 1 s on their way from the
// lookup threads + `slack`); nothing dropped from the spool (logged and counted if it were).
import { startClickHouse, type ClickHouseServer } from '../test/helpers/clickhouse.ts';
import { rmSync } from 'node:fs';
import { sleep } from './processes.ts';
import { startServer, type Server } from './hostile-server.ts';
import type { IvtdTarget } from './processes.ts';
import { killLoad } from './kill-load.ts';

export interface FleetKillOptions {
  target: IvtdTarget;
  cycles: number;
  /** Seconds of load before each kill: uniform in [minLoad, maxLoad]. */
  minLoad: number;
  maxLoad: number;
  /** The edge's --flush-interval, seconds. */
  flush: number;
  /** Seconds added to each kill's window for the flush's own time. */
  slack: number;
  connections: number;
  /** The edge's lookup threads (default 2). */
  threads?: number;
  /** Uniform in [0, 1). */
  rand: () => number;
  /** Each cycle's row, as it is made. */
  onCycle?: (row: FleetKillCycle) => void;
}

export interface FleetKillCycle {
  cycle: number;
  /** ClickHouse during this cycle's load: up, killed during it, started during it. */
  clickhouse: 'up' | 'killed' | 'started';
  load_s: number;
  answered_this_run: number;
  answered_total: number;
  /** 200s in the last flush interval + 1 s + slack before the kill: what it may lose. */
  answered_in_last_interval: number;
  /** 200s in exactly the last flush interval before the kill. */
  answered_in_one_interval: number;
  /** The edge came back on the same data dir and answered a lookup 200. */
  opened: boolean;
  /** Seconds from the kill until the restarted edge answered a lookup 200. */
  restart_s: number | null;
  /** Spool rows the restarted edge found (ivtd_fleet_spool_rows at its start). */
  spool_rows_at_restart: number;
  /** Lookups of the edge in ClickHouse once the spool was delivered (null while ClickHouse is down). */
  in_clickhouse: number | null;
  /** Lost by the kills since the last check (null: no check this cycle). */
  lost_since_check: number | null;
  /** Their allowance: the sum of their last-interval counts. */
  allowed_since_check: number | null;
  /** Spool batches dropped as unreadable (ivtd_fleet_spool_dropped_batches_total), this run of the edge. */
  dropped_batches: number;
  ok: boolean;
  problem?: string;
}

export interface FleetKillSummary {
  cycles: number;
  failures: number;
  kills_with_clickhouse_down: number;
  kills_with_rows_spooled: number;
  answered_total: number;
  in_clickhouse: number | null;
  lost_total: number | null;
  /** Each check's loss / the lookups answered in the last flush interval (exactly) of the kills since the last check. */
  loss_per_flush_interval: number[];
  /** The same against the documented bound: the lookups answered in the last flush interval + 1 s (docs/fleet.md). */
  loss_per_documented_bound: number[];
  over_counted: boolean;
  dropped_batches: number;
  /** The full instance's report for the edge's node at the end (null when not read). */
  reported_at_end: number | null;
}

const NODE = 'kill-edge';

async function metric(s: Server, name: string): Promise<number | null> {
  try {
    const r = await fetch(`http://127.0.0.1:${s.ports.metrics}/metrics`);
    const text = await r.text();
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

let lastProbe = '';

async function lookupOk(s: Server): Promise<boolean> {
  const q = `p=${s.creds.partner}&k=${s.creds.key}&pub=probe&node=${NODE}-probe&ip=81.2.69.1&ua=curl%2F8&uid=probe&sid=exchange1.example&adt=1&dvt=2`;
  const r = await fetch(`http://127.0.0.1:${s.ports.prebid}/api/v1/ivt/lookup?${q}`).catch((e: Error) => e);
  lastProbe = r instanceof Error ? r.message : `${r.status} ${(await r.text()).slice(0, 200)}`;
  return !(r instanceof Error) && r.status === 200;
}

async function until(what: string, ms: number, f: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s (last lookup: ${lastProbe})`);
    await sleep(100);
  }
}

/** The edge's lookups in ClickHouse: [hourly, daily] sums for the customer and node. */
async function inClickHouse(ch: ClickHouseServer, customer: string): Promise<[number, number]> {
  const sum = async (table: string) =>
    Number((await ch.sql(`SELECT sum(total) FROM fleet.${table} WHERE customer_id = '${customer}' AND node = '${NODE}'`)).trim() || 0);
  return [await sum('rollups_hourly'), await sum('rollups_daily')];
}

async function reportedByFull(full: Server): Promise<number | null> {
  const day = new Date().toISOString().slice(0, 10);
  const auth = Buffer.from(`${full.creds.customer}:${full.creds.reporting}`).toString('base64');
  for (let attempt = 0; attempt < 5; attempt++) {
    const r = await fetch(`http://127.0.0.1:${full.ports.reporting}/v1/report?start_date=${day}&end_date=${day}&group_by=node&node=${NODE}`, {
      headers: { authorization: `Basic ${auth}` },
    });
    if (r.status === 429) {
      await sleep(1000 * Number(r.headers.get('retry-after') ?? 1));
      continue;
    }
    if (r.status !== 200) return null;
    const body = (await r.json()) as { rows: Array<{ node?: string; total_transactions?: number }> };
    return body.rows.filter((x) => x.node === NODE).reduce((n, x) => n + (x.total_transactions ?? 0), 0);
  }
  return null;
}

export async function runFleetKills(o: FleetKillOptions): Promise<{ rows: FleetKillCycle[]; summary: FleetKillSummary }> {
  const ch = await startClickHouse();
  const url = ch.url('fleet');
  const servers: Server[] = [];
  const dirs: string[] = [];
  try {
    const full = await startServer(o.target, 1, { args: ['--clickhouse-url', url, '--flush-interval', String(o.flush)] });
    servers.push(full);
    dirs.push(full.dataDir);
    const edgeArgs = ['--role', 'edge', '--clickhouse-url', url, '--flush-interval', String(o.flush)];
    let edge = await startServer(o.target, o.threads ?? 2, { args: edgeArgs, creds: full.creds });
    servers.push(edge);
    const dataDir = edge.dataDir;
    dirs.push(dataDir);
    // A new edge serves once it has pulled the key set (every 2 s).
    await until('the new edge serves the full instance’s key', 60_000, () => lookupOk(edge));

    const rows: FleetKillCycle[] = [];
    let answeredTotal = 0;
    let lostBefore = 0;
    let allowance = 0;
    let oneInterval = 0;
    let docBound = 0;
    const docRatios: number[] = [];
    const ratios: number[] = [];
    let overCounted = false;
    let failures = 0;
    let droppedTotal = 0;
    let downKills = 0;
    let spooledKills = 0;
    let lastIn: number | null = null;
    const minOutage = o.flush * 1.5 + 0.5;

    for (let k = 1; k <= o.cycles; k++) {
      const phase: FleetKillCycle['clickhouse'] = k % 3 === 2 ? 'killed' : k % 3 === 0 ? 'started' : 'up';
      const loadS = Math.max(o.minLoad + o.rand() * (o.maxLoad - o.minLoad), phase === 'killed' ? minOutage + 0.5 : 0);
      const l = killLoad(edge.ports.prebid, full.creds, o.connections, NODE);
      const t0 = Date.now();
      let side: Promise<void> = Promise.resolve();
      if (phase === 'killed') {
        // Down at least 1.5 flush intervals before the kill: the spool holds rows then.
        const at = o.rand() * (loadS - minOutage) * 1000;
        side = sleep(at).then(() => ch.kill());
      } else if (phase === 'started') {
        const at = o.rand() * loadS * 1000 * 0.7;
        side = sleep(at).then(() => ch.start());
      }
      await sleep(loadS * 1000);
      await side; // a ClickHouse start may outlast the load: the kill then comes after it
      const killedAt = Date.now();
      edge.child.kill('SIGKILL');
      l.stop();
      await new Promise((r) => (edge.child.exitCode !== null || edge.child.signalCode !== null ? r(null) : edge.child.once('exit', r)));
      if (!ch.running) downKills++;
      answeredTotal += l.answered.length;
      const window = l.answered.filter((t) => t > killedAt - (o.flush + 1 + o.slack) * 1000).length;
      allowance += window;
      const one = l.answered.filter((t) => t > killedAt - o.flush * 1000).length;
      oneInterval += one;
      docBound += l.answered.filter((t) => t > killedAt - (o.flush + 1) * 1000).length;
      const row: FleetKillCycle = {
        cycle: k,
        clickhouse: phase,
        load_s: Math.round((killedAt - t0) / 100) / 10,
        answered_this_run: l.answered.length,
        answered_total: answeredTotal,
        answered_in_last_interval: window,
        answered_in_one_interval: one,
        opened: false,
        restart_s: null,
        spool_rows_at_restart: 0,
        in_clickhouse: null,
        lost_since_check: null,
        allowed_since_check: null,
        dropped_batches: 0,
        ok: true,
      };
      try {
        edge = await startServer(o.target, o.threads ?? 2, { args: edgeArgs, dataDir, creds: full.creds });
        servers.push(edge);
        await until('the restarted edge answers a lookup', 30_000, () => lookupOk(edge));
        row.opened = true;
        row.restart_s = Math.round((Date.now() - killedAt) / 100) / 10;
        row.spool_rows_at_restart = (await metric(edge, 'ivtd_fleet_spool_rows')) ?? -1;
        if (row.spool_rows_at_restart > 0) spooledKills++;
        if (!ch.running && row.spool_rows_at_restart <= 0) {
          row.ok = false;
          row.problem = 'ClickHouse was down for 1.5 flush intervals before the kill, yet the restarted edge found no spool';
        }
        if (ch.running) {
          // Delivered: the spool empty (the probe lookups above come at the next flush: allowed for).
          await until('the restarted edge empties its spool', 60_000, async () => (await metric(edge, 'ivtd_fleet_spool_batches')) === 0);
          // Absent from /metrics (-1) fails the check too: a renamed counter must not read as 0.
          row.dropped_batches = (await metric(edge, 'ivtd_fleet_spool_dropped_batches_total')) ?? -1;
          const [hourly, daily] = await inClickHouse(ch, full.creds.customer);
          row.in_clickhouse = hourly;
          const lost = answeredTotal - hourly;
          row.lost_since_check = lost - lostBefore;
          row.allowed_since_check = allowance;
          if (hourly !== daily) {
            row.ok = false;
            row.problem = `hourly ${hourly} and daily ${daily} differ`;
          } else if (hourly > answeredTotal) {
            overCounted = true;
            row.ok = false;
            row.problem = `ClickHouse holds ${hourly}, more than the ${answeredTotal} answered`;
          } else if (lastIn !== null && hourly < lastIn) {
            row.ok = false;
            row.problem = `ClickHouse went from ${lastIn} down to ${hourly}`;
          } else if (row.lost_since_check > allowance) {
            row.ok = false;
            row.problem = `lost ${row.lost_since_check}, more than the ${allowance} answered in the kills' last intervals`;
          }
          if (oneInterval > 0) ratios.push(Math.round((row.lost_since_check / oneInterval) * 1000) / 1000);
          if (docBound > 0) docRatios.push(Math.round((row.lost_since_check / docBound) * 1000) / 1000);
          lastIn = hourly;
          lostBefore = lost;
          allowance = 0;
          oneInterval = 0;
          docBound = 0;
          droppedTotal += Math.max(0, row.dropped_batches);
          if (row.dropped_batches !== 0) {
            row.ok = false;
            row.problem = row.dropped_batches < 0 ? 'no ivtd_fleet_spool_dropped_batches_total in /metrics' : `${row.dropped_batches} spool batches dropped as unreadable`;
          }
        }
      } catch (e) {
        row.ok = false;
        row.problem = (e as Error).message.slice(0, 800);
      }
      if (!row.ok) failures++;
      rows.push(row);
      o.onCycle?.(row);
      if (!row.opened) break;
    }
    // The last kill's rows reach ClickHouse once it is up (it is, unless the run ended on a down cycle).
    if (!ch.running) await ch.start();
    let reported: number | null = null;
    if (rows.at(-1)?.opened) {
      await until('the last edge empties its spool', 60_000, async () => (await metric(edge, 'ivtd_fleet_spool_batches')) === 0);
      reported = await reportedByFull(full);
      const [hourly] = await inClickHouse(ch, full.creds.customer);
      if (reported !== hourly) {
        failures++;
        rows.push({ ...rows.at(-1)!, cycle: o.cycles + 1, ok: false, problem: `the full instance reports ${reported}, ClickHouse holds ${hourly}` });
      }
      if (hourly > answeredTotal) overCounted = true;
      lastIn = hourly;
    }
    return {
      rows,
      summary: {
        cycles: rows.filter((r) => r.cycle <= o.cycles).length,
        failures,
        kills_with_clickhouse_down: downKills,
        kills_with_rows_spooled: spooledKills,
        answered_total: answeredTotal,
        in_clickhouse: lastIn,
        lost_total: lastIn === null ? null : answeredTotal - lastIn,
        loss_per_flush_interval: ratios,
        loss_per_documented_bound: docRatios,
        over_counted: overCounted,
        dropped_batches: droppedTotal,
        reported_at_end: reported,
      },
    };
  } finally {
    for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    await ch.destroy();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
