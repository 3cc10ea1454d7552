// Fleet-wide activity, the ClickHouse side (issue 55; the lookup threads' tables are
// src/signals/fleet-activity.ts). Every interval (ACTIVITY.intervalMs, 1 s), on the wall
// clock's boundary, each host
//
//   publishes  what its lookup threads counted per key (IP, uid, IFA) since the last
//              boundary: one INSERT of at most DELTA_SLOTS rows (key hash, lookups, invalid
//              and judged outcomes, two 128-bit maps of the values seen with it) into
//              activity_buffer (a Buffer in front of the MergeTree `activity`);
//   pulls      a moment later (pullDelay of the interval, when the other hosts' rows of that
//              boundary are in) the fleet's view of the last ACTIVITY.windowSec seconds: per
//              key the OTHER hosts' lookups decayed as history decays its own (a minute's
//              rate, the ten-second burst), their outcomes, and the whole fleet's maps, for
//              keys that at least ACTIVITY.minFleetLookups lookups named and another host
//              saw, the busiest FLEET_ACTIVITY_KEYS first;
//   hands      that view to the lookup threads (FleetActivity.replace), which add it to
//              their local facts when they score.
//
// Bounded: the delta table and the view are fixed-size; a failed or slow exchange drops
// its rows (counted) and the lookup threads go on with local history alone (the view is
// emptied); one log line per change of state. Every host drops the partitions (ten
// minutes each) older than the window: ClickHouse 18.16 has no TTL.
import { randomBytes } from 'node:crypto';
import { log } from '../log.ts';
import { DELTA_SLOTS, FLEET_ACTIVITY_KEYS, type ActivityKind, type ActivityRow, type FleetKey } from '../signals/fleet-activity.ts';
import type { ClickHouse } from './clickhouse.ts';
import { sqlInt, sqlString } from './sql.ts';

export const ACTIVITY = {
  /** Publication and pull period (ms). */
  intervalMs: 1000,
  /** Share of the interval after the boundary at which the pull runs (the other hosts' inserts are in). */
  pullDelay: 0.3,
  /** Seconds of rows a pull reads (history's rate window). */
  windowSec: 60,
  /** Time constant of the ten-second burst (s), as history's BURST_MID_MS. */
  burstSec: 10,
  /** Lookups over the window below which a key is not worth pulling. */
  minFleetLookups: 3,
  /** The view is emptied when no pull succeeded for this long (ms; ClickHouse slow or away)... */
  staleMs: 5000,
  /** ...or for this many intervals, whichever is longer. */
  staleIntervals: 5,
  /** Seconds of the other hosts' newest rows whose rate the lookups carry forward (fleet-activity.ts, PROJECT_MAX_MS). */
  recentSec: 2,
  /** Seconds of one partition of `activity`. */
  partitionSec: 600,
} as const;

/** What the exchange reads and feeds on this host (src/server/fleet.ts wires the shared tables). */
export interface ActivityHooks {
  /** This host's rows since the last call (the lookup threads' delta table, drained). */
  drain(): ActivityRow[];
  /** Receives the fleet's view, complete to `asOf` (ms; empty: local only). */
  onView(keys: FleetKey[], asOf: number): void;
  /** Period (default ACTIVITY.intervalMs; tests and the bench shorten or keep it). */
  intervalMs?: number;
  /** History's rate window in ms (HistoryMemory.windowMs): the decay of the fleet's rate. */
  windowMs?: number;
  /** False while the fleet's schema is not checked yet: the exchange waits (no failure counted). */
  ready?: () => boolean;
}

interface ViewRow {
  kind: number | string;
  key_hi: number | string;
  key_lo: number | string;
  rate: number | string;
  burst: number | string;
  seen: number | string;
  bad: number | string;
  outcomes: number | string;
  a0: string;
  a1: string;
  b0: string;
  b1: string;
  recent: number | string;
  newest: number | string;
}

/** Two u32 words (lo first) as a UInt64 in decimal (JSONEachRow). */
function u64(lo: number, hi: number): string {
  return ((BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0)).toString();
}

/** A UInt64 from JSON into words at out[at], out[at + 1]. */
function words(s: string | number, out: number[], at: number): void {
  const v = BigInt(s);
  out[at] = Number(v & 0xffffffffn);
  out[at + 1] = Number(v >> 32n);
}

/** One delta row as inserted. */
export function insertRow(r: ActivityRow, t: number, host: string): object {
  return {
    t, host, kind: r.kind, key_hi: r.hi >>> 0, key_lo: r.lo >>> 0, n: r.n, bad: r.bad, outcomes: r.outcomes,
    a0: u64(r.a[0]!, r.a[1]!), a1: u64(r.a[2]!, r.a[3]!), b0: u64(r.b[0]!, r.b[1]!), b1: u64(r.b[2]!, r.b[3]!),
  };
}

/** The pull's statement: the fleet's view at `nowMs` for host `host` (its own counts left out). */
export function viewSql(host: string, nowMs: number, windowMs: number = ACTIVITY.windowSec * 1000, limit: number = FLEET_ACTIVITY_KEYS): string {
  const me = sqlString(host);
  const since = Math.floor(nowMs / 1000) - ACTIVITY.windowSec;
  // Decayed as history decays: exp(-(now - t) / tau); t is the interval's end (the drain second).
  const age = `(${sqlInt(nowMs)} - toInt64(t) * 1000)`;
  const tauRate = sqlInt(Math.round(windowMs));
  const perMinute = 60_000 / windowMs;
  // The other hosts' newest second: their rows of the running interval may not be in yet.
  const newest = `(SELECT max(t) FROM activity_buffer WHERE t >= toDateTime(${sqlInt(since)}) AND host != ${me})`;
  return (
    `SELECT kind, key_hi, key_lo, ` +
    `sumIf(n * exp(-${age} / ${tauRate}), host != ${me}) * ${perMinute} AS rate, ` +
    `sumIf(n * exp(-${age} / ${sqlInt(ACTIVITY.burstSec * 1000)}), host != ${me}) AS burst, ` +
    `sumIf(n, host != ${me}) AS seen, sumIf(bad, host != ${me}) AS bad, sumIf(outcomes, host != ${me}) AS outcomes, ` +
    `groupBitOr(a0) AS a0, groupBitOr(a1) AS a1, groupBitOr(b0) AS b0, groupBitOr(b1) AS b1, ` +
    `sumIf(n, host != ${me} AND t > ${newest} - ${sqlInt(ACTIVITY.recentSec)}) AS recent, toUInt32(${newest}) AS newest ` +
    `FROM activity_buffer WHERE t >= toDateTime(${sqlInt(since)}) ` +
    `GROUP BY kind, key_hi, key_lo ` +
    `HAVING sum(n) >= ${sqlInt(ACTIVITY.minFleetLookups)} AND sumIf(n, host != ${me}) > 0 ` +
    `ORDER BY sum(n) DESC LIMIT ${sqlInt(limit)}`
  );
}

/** The view's rows as keys for the lookup threads. */
export function parseView(rows: readonly ViewRow[]): FleetKey[] {
  const out: FleetKey[] = [];
  for (const r of rows) {
    const kind = Number(r.kind);
    if (kind !== 0 && kind !== 1 && kind !== 2) continue;
    const a: number[] = [0, 0, 0, 0];
    const b: number[] = [0, 0, 0, 0];
    words(r.a0, a, 0);
    words(r.a1, a, 2);
    words(r.b0, b, 0);
    words(r.b1, b, 2);
    out.push({
      kind: kind as ActivityKind,
      hi: Number(r.key_hi) >>> 0,
      lo: Number(r.key_lo) >>> 0,
      rate: Number(r.rate),
      burst10: Number(r.burst),
      seen: Number(r.seen),
      recent: (Number(r.recent) || 0) / ACTIVITY.recentSec,
      bad: Number(r.bad),
      outcomes: Number(r.outcomes),
      a,
      b,
    });
  }
  return out;
}

/** A pull's result: the keys, and the time (ms) they are complete to (the other hosts' newest second). */
export interface FleetView {
  keys: FleetKey[];
  asOf: number;
}

/** Rows of failed publications kept for the next (two intervals of the busiest host, all of a quiet one's window's). */
export const BACKLOG_ROWS = 2 * DELTA_SLOTS;

export type ActivityState = 'starting' | 'up' | 'down';

export class ActivityExchange {
  /** This process's name in the rows: its own are left out of its view (a restart is a new host). */
  readonly host: string;
  state: ActivityState = 'starting';
  /** Cumulative figures (/metrics). */
  rowsSent = 0;
  rowsReceived = 0;
  bytesSent = 0;
  failures = 0;
  /** Rows dropped: past the backlog's bound, or older than the window before ClickHouse came back. */
  rowsDropped = 0;
  /** Keys in the view last handed to the lookup threads. */
  viewKeys = 0;
  /** ms of the last successful pull (0: none yet). */
  lastPullAt = 0;
  /** ms the last pull took. */
  lastPullMs = 0;
  /** Rows of intervals whose publication failed, by their second (bounded: BACKLOG_ROWS). */
  private backlog: Array<{ t: number; rows: object[] }> = [];
  private timer: NodeJS.Timeout | null = null;
  private pullTimer: NodeJS.Timeout | null = null;
  private publishing: Promise<void> | null = null;
  private pulling: Promise<void> | null = null;
  private stopped = false;
  private lastRetention = 0;
  private readonly intervalMs: number;
  private readonly windowMs: number;

  constructor(
    private readonly ch: ClickHouse,
    private readonly hooks: ActivityHooks,
    hostName = 'host',
  ) {
    this.host = `${hostName}-${randomBytes(4).toString('hex')}`;
    this.intervalMs = hooks.intervalMs ?? ACTIVITY.intervalMs;
    this.windowMs = hooks.windowMs ?? ACTIVITY.windowSec * 1000;
  }

  /**
   * Publishes this host's rows of the interval ending at `nowMs`, with those of earlier
   * intervals whose publication failed and that are still within the window (one INSERT).
   * The backlog is bounded (BACKLOG_ROWS): past it, and past the window, rows are dropped.
   */
  async publish(rows: readonly ActivityRow[], nowMs = Date.now()): Promise<number> {
    const t = Math.floor(nowMs / 1000);
    const fresh = rows.map((r) => insertRow(r, t, this.host));
    const oldest = t - ACTIVITY.windowSec;
    const kept = this.backlog.filter((b) => b.t > oldest);
    for (const b of this.backlog) if (b.t <= oldest) this.rowsDropped += b.rows.length;
    const body = kept.flatMap((b) => b.rows).concat(fresh);
    this.backlog = [];
    if (body.length === 0) return 0;
    try {
      await this.ch.insert('activity_buffer', body);
    } catch (e) {
      // Kept for the next publication, newest first within the bound.
      let room = BACKLOG_ROWS;
      const next: Array<{ t: number; rows: object[] }> = [];
      for (const b of [...kept, { t, rows: fresh }].reverse()) {
        if (b.rows.length > room) {
          this.rowsDropped += b.rows.length;
          continue;
        }
        room -= b.rows.length;
        next.unshift(b);
      }
      this.backlog = next;
      throw e;
    }
    this.rowsSent += body.length;
    const sent = body.length;
    // JSONEachRow bytes on the wire (the bench's bytes/s): ~190 a row.
    this.bytesSent += sent * 2 + body.reduce((s: number, o) => s + JSON.stringify(o).length, 0);
    return sent;
  }

  /** The fleet's view now (without this host's counts). */
  async pull(nowMs = Date.now()): Promise<FleetView> {
    const t0 = performance.now();
    const rows = await this.ch.rows<ViewRow>(viewSql(this.host, nowMs, this.windowMs), 'fleet activity');
    this.lastPullMs = performance.now() - t0;
    this.rowsReceived += rows.length;
    const newest = rows.length > 0 ? Number(rows[0]!.newest) * 1000 : nowMs;
    return { keys: parseView(rows), asOf: Number.isFinite(newest) && newest > 0 ? Math.min(newest, nowMs) : nowMs };
  }

  /**
   * One interval's publication (at the boundary): the delta table drained and sent. One at a
   * time: while ClickHouse is slow, the counts wait in the (bounded) delta table.
   */
  publishNow(): Promise<void> {
    if (this.publishing) return this.publishing;
    if (this.hooks.ready && !this.hooks.ready()) return Promise.resolve();
    const run = (async () => {
      try {
        await this.publish(this.hooks.drain(), Date.now());
      } catch (e) {
        this.failed(e as Error);
      }
    })().finally(() => {
      this.publishing = null;
    });
    this.publishing = run;
    return run;
  }

  /** One pull (pullDelay after the boundary), handed to the lookup threads. One at a time. */
  pullNow(): Promise<void> {
    if (this.pulling) return this.pulling;
    if (this.hooks.ready && !this.hooks.ready()) return Promise.resolve();
    const run = (async () => {
      try {
        const view = await this.pull();
        if (this.stopped) return;
        this.hooks.onView(view.keys, view.asOf);
        this.viewKeys = view.keys.length;
        this.lastPullAt = Date.now();
        this.changeState('up', null);
        await this.retention();
      } catch (e) {
        this.failed(e as Error);
      }
    })().finally(() => {
      this.pulling = null;
    });
    this.pulling = run;
    return run;
  }

  /** A publication and a pull (tests, the bench). */
  async exchange(): Promise<void> {
    await this.publishNow();
    await this.pullNow();
  }

  private failed(e: Error): void {
    this.failures++;
    this.changeState('down', e);
    this.clearView();
  }

  /** Empties a view no pull refreshed for too long (ClickHouse slow): local history alone. */
  private checkStale(now = Date.now()): void {
    const staleMs = Math.max(ACTIVITY.staleMs, ACTIVITY.staleIntervals * this.intervalMs);
    if (this.viewKeys > 0 && now - this.lastPullAt > staleMs) this.clearView();
  }

  private clearView(): void {
    this.hooks.onView([], Date.now());
    this.viewKeys = 0;
  }

  private changeState(next: ActivityState, err: Error | null): void {
    if (next === this.state) return;
    const was = this.state;
    this.state = next;
    if (next === 'down') log.warn({ err: err?.message }, 'fleet activity: exchange with ClickHouse failed; lookups score on local history alone until it is back');
    else if (was === 'down') log.info({}, 'fleet activity: ClickHouse is back; lookups see the fleet again');
  }

  /** Drops partitions older than the window (every host, every few minutes; idempotent). */
  private async retention(now = Date.now()): Promise<void> {
    if (now - this.lastRetention < 5 * 60_000) return;
    this.lastRetention = now;
    await dropOldActivity(this.ch, now);
  }

  /** Runs the exchange on each interval boundary of the wall clock (the hosts' rows then line up). */
  start(): void {
    const next = () => {
      if (this.stopped) return;
      const delay = this.intervalMs - (Date.now() % this.intervalMs);
      this.timer = setTimeout(() => {
        this.checkStale();
        void this.publishNow();
        this.pullTimer = setTimeout(() => void this.pullNow(), this.intervalMs * ACTIVITY.pullDelay);
        this.pullTimer.unref();
        next();
      }, delay);
      this.timer.unref();
    };
    next();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.pullTimer) clearTimeout(this.pullTimer);
    this.timer = null;
    this.pullTimer = null;
  }

  async settled(): Promise<void> {
    await Promise.all([this.publishing, this.pulling]);
  }
}

/** Drops the partitions of `activity` wholly older than the window. Returns how many. */
export async function dropOldActivity(ch: ClickHouse, now = Date.now()): Promise<number> {
  const keepFrom = Math.floor((Math.floor(now / 1000) - ACTIVITY.windowSec) / ACTIVITY.partitionSec);
  const parts = await ch.rows<{ partition: string }>(
    `SELECT DISTINCT partition FROM system.parts WHERE database = ${sqlString(ch.database)} AND table = 'activity' AND active`,
    'activity partitions',
  );
  let dropped = 0;
  for (const p of parts) {
    const id = Number(p.partition);
    if (!Number.isSafeInteger(id) || id >= keepFrom) continue;
    await ch.command(`ALTER TABLE activity DROP PARTITION ${sqlInt(id)}`, 'activity retention');
    dropped++;
  }
  return dropped;
}
