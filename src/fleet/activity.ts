// Fleet-wide activity, the ClickHouse side (issue 55; the lookup threads' tables are
// src/signals/fleet-activity.ts). Every interval (ACTIVITY.intervalMs, 1 s), on the wall
// clock's boundary, each host
//
//   publishes  what its lookup threads counted per key (IP, uid, IFA) since the last
//              boundary: one INSERT of at most DELTA_SLOTS rows (key hash, lookups, invalid
//              and judged outcomes, two 128-bit maps of the values seen with it) into
//              activity_buffer (a Buffer in front of the MergeTree `activity`);
//   computes   (the full instance only, computeDelay into the interval, when the hosts' rows
//              of that boundary are in) the fleet's view of the last ACTIVITY.windowSec
//              seconds into activity_view: per key the fleet's lookups decayed as history
//              decays its own (a minute's rate, the ten-second burst), its outcomes, its
//              lookups a second lately and the maps, for keys that ACTIVITY.minFleetLookups
//              lookups named or that came with minFleetMaps different maps, the busiest
//              FLEET_ACTIVITY_KEYS first.
//              One aggregation a second for the whole fleet, whatever its size;
//   pulls      (every host, pullDelay into the interval) the newest view: at most
//              FLEET_ACTIVITY_KEYS small rows, read by the sorting key;
//   hands      it to the lookup threads (FleetActivity.replace), which complete their local
//              facts with it when they score.
//
// An edge that finds no view newer than ACTIVITY.staleMs (the full instance away) computes
// one for itself, at most every fallbackIntervals intervals. Bounded: the delta table and
// the view are fixed-size, a failed publication keeps at most BACKLOG_ROWS rows for the
// next; a failed or slow exchange empties the view and the lookup threads go on with local
// history alone; one log line per change of state. Every host drops the partitions (ten
// minutes each) older than the window: ClickHouse 18.16 has no TTL.
import { randomBytes } from 'node:crypto';
import { log } from '../base/log.ts';
import { DELTA_SLOTS, FLEET_ACTIVITY_KEYS, type ActivityKind, type ActivityRow, type FleetKey } from '../signals/fleet-activity.ts';
import type { ClickHouse } from './clickhouse.ts';
import { sqlInt, sqlString } from './sql.ts';

export const ACTIVITY = {
  /** Publication and pull period (ms). */
  intervalMs: 1000,
  /** Share of the interval after the boundary at which the full instance computes the view (the hosts' inserts are in)... */
  computeDelay: 0.3,
  /** ...and at which every host pulls it. */
  pullDelay: 0.6,
  /** An edge without a fresh view computes its own at most once in this many intervals. */
  fallbackIntervals: 5,
  /** Seconds of rows a pull reads (history's rate window). */
  windowSec: 60,
  /** Time constant of the ten-second burst (s), as history's BURST_MID_MS. */
  burstSec: 10,
  /**
   * A key enters the view with at least this many lookups over the window (below it no rate
   * term of the model can fire: uid_velocity starts at 60 a minute)...
   */
  minFleetLookups: 20,
  /** ...or with at least this many distinct maps over its rows (values hopping across hosts: IPs of a uid, UAs of an IP). */
  minFleetMaps: 3,
  /** The view is emptied when no pull succeeded for this long (ms; ClickHouse slow or away)... */
  staleMs: 5000,
  /** ...or for this many intervals, whichever is longer. */
  staleIntervals: 5,
  /** Seconds of the other hosts' newest rows whose rate the lookups carry forward (fleet-activity.ts, PROJECT_MAX_MS). */
  recentSec: 2,
  /** Seconds of one partition of `activity`. */
  partitionSec: 600,
} as const;

/** What the exchange reads and feeds on this host (src/server/wire-fleet.ts wires the shared tables). */
export interface ActivityHooks {
  /** The full instance: computes the fleet's view each interval (one aggregation for the fleet). */
  computes?: boolean;
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
  at: number | string;
  kind: number | string;
  key_hi: number | string;
  key_lo: number | string;
  rate: number | string;
  burst: number | string;
  seen: number | string;
  bad: number | string;
  outcomes: number | string;
  recent: number | string;
  newest: number | string;
  ma0: string;
  ma1: string;
  mb0: string;
  mb1: string;
}

const VIEW_COLUMNS = 'at, kind, key_hi, key_lo, rate, burst, seen, bad, outcomes, recent, newest, a0, a1, b0, b1';

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

/** The fleet's view at `nowMs`, as a SELECT of VIEW_COLUMNS in order (the maps named ma0… apart from the columns; every host's counts). */
export function viewSql(nowMs: number, windowMs: number = ACTIVITY.windowSec * 1000, limit: number = FLEET_ACTIVITY_KEYS): string {
  const nowSec = Math.floor(nowMs / 1000);
  const since = `toDateTime(${sqlInt(nowSec - ACTIVITY.windowSec)})`;
  // Decayed as history decays: exp(-(now - t) / tau); t is the interval's end (the drain second).
  const age = `(${sqlInt(nowMs)} - toInt64(t) * 1000)`;
  const perMinute = 60_000 / windowMs;
  // The hosts' newest second: rows of the running interval are not in yet (the lookups carry the recent rate on).
  const newest = `(SELECT max(t) FROM activity_buffer WHERE t >= ${since})`;
  return (
    `SELECT toDateTime(${sqlInt(nowSec)}) AS at, kind, key_hi, key_lo, ` +
    `sum(n * exp(-${age} / ${sqlInt(Math.round(windowMs))})) * ${perMinute} AS rate, ` +
    `sum(n * exp(-${age} / ${sqlInt(ACTIVITY.burstSec * 1000)})) AS burst, ` +
    `toFloat64(sum(n)) AS seen, toFloat64(sum(bad)) AS bad, toFloat64(sum(outcomes)) AS outcomes, ` +
    `sumIf(n, t > ${newest} - ${sqlInt(ACTIVITY.recentSec)}) / ${sqlInt(ACTIVITY.recentSec)} AS recent, toUInt32(${newest}) AS newest, ` +
    `groupBitOr(a0) AS ma0, groupBitOr(a1) AS ma1, groupBitOr(b0) AS mb0, groupBitOr(b1) AS mb1 ` +
    `FROM activity_buffer WHERE t >= ${since} ` +
    `GROUP BY kind, key_hi, key_lo ` +
    `HAVING sum(n) >= ${sqlInt(ACTIVITY.minFleetLookups)} OR uniqExact(a0, a1, b0, b1) >= ${sqlInt(ACTIVITY.minFleetMaps)} ` +
    `ORDER BY sum(n) DESC LIMIT ${sqlInt(limit)}`
  );
}

/** The newest view computed at or after `sinceSec` (every host's pull). */
export function newestViewSql(sinceSec: number): string {
  return `SELECT at, kind, key_hi, key_lo, rate, burst, seen, bad, outcomes, recent, newest, a0 AS ma0, a1 AS ma1, b0 AS mb0, b1 AS mb1 FROM activity_view WHERE at = (SELECT max(at) FROM activity_view WHERE at >= toDateTime(${sqlInt(sinceSec)})) LIMIT ${sqlInt(FLEET_ACTIVITY_KEYS)}`;
}

/** The view's rows as keys for the lookup threads. */
export function parseView(rows: readonly ViewRow[]): FleetKey[] {
  const out: FleetKey[] = [];
  for (const r of rows) {
    const kind = Number(r.kind);
    if (kind !== 0 && kind !== 1 && kind !== 2) continue;
    const a: number[] = [0, 0, 0, 0];
    const b: number[] = [0, 0, 0, 0];
    words(r.ma0, a, 0);
    words(r.ma1, a, 2);
    words(r.mb0, b, 0);
    words(r.mb1, b, 2);
    out.push({
      kind: kind as ActivityKind,
      hi: Number(r.key_hi) >>> 0,
      lo: Number(r.key_lo) >>> 0,
      rate: Number(r.rate),
      burst10: Number(r.burst),
      seen: Number(r.seen),
      recent: Number(r.recent) || 0,
      bad: Number(r.bad),
      outcomes: Number(r.outcomes),
      a,
      b,
    });
  }
  return out;
}

/** A pull's result: the keys, and the time (ms) they are complete to (the hosts' newest second). */
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
  /** Publications that failed (cumulative; also counted in failures). */
  publishFailures = 0;
  /** Rows dropped: past the backlog's bound, or older than the window before ClickHouse came back. */
  rowsDropped = 0;
  /** Keys in the view last handed to the lookup threads. */
  viewKeys = 0;
  /** ms of the last successful pull (0: none yet). */
  lastPullAt = 0;
  /** ms the last pull took. */
  lastPullMs = 0;
  /** ms the last computation of the view took (the full instance, or an edge falling back). */
  lastComputeMs = 0;
  /** Views computed by this host (cumulative). */
  computed = 0;
  private lastFallback = 0;
  private computeTimer: NodeJS.Timeout | null = null;
  private computing: Promise<void> | null = null;
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

  /** Computes the fleet's view of now into activity_view (one INSERT … SELECT). */
  async compute(nowMs = Date.now()): Promise<void> {
    const t0 = performance.now();
    await this.ch.command(`INSERT INTO activity_view (${VIEW_COLUMNS}) ${viewSql(nowMs, this.windowMs)}`, 'fleet activity view');
    this.lastComputeMs = performance.now() - t0;
    this.computed++;
  }

  /**
   * The fleet's view: the newest computed one, or (none fresh: the full instance away) one
   * computed here, at most every fallbackIntervals intervals; null when neither is due.
   */
  async pull(nowMs = Date.now()): Promise<FleetView | null> {
    const t0 = performance.now();
    const staleMs = Math.max(ACTIVITY.staleMs, ACTIVITY.staleIntervals * this.intervalMs);
    let rows = await this.ch.rows<ViewRow>(newestViewSql(Math.floor((nowMs - staleMs) / 1000)), 'fleet activity');
    if (rows.length === 0 && !this.hooks.computes) {
      if (nowMs - this.lastFallback < ACTIVITY.fallbackIntervals * this.intervalMs) return null;
      this.lastFallback = nowMs;
      const c0 = performance.now();
      rows = await this.ch.rows<ViewRow>(viewSql(nowMs, this.windowMs), 'fleet activity (computed here)');
      this.lastComputeMs = performance.now() - c0;
      this.computed++;
    }
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
        // Its rows wait in the backlog for the next interval; the view stands until stale.
        this.publishFailures++;
        this.failures++;
        if (this.publishFailures === 1) log.warn({ err: (e as Error).message }, 'fleet activity: a publication to ClickHouse failed; its rows wait for the next interval');
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
        if (this.stopped || view === null) return;
        this.hooks.onView(view.keys, view.asOf);
        this.viewKeys = view.keys.length;
        this.lastPullAt = Date.now();
        this.publishFailures = 0;
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

  /** The full instance's computation of the view (computeDelay after the boundary). One at a time. */
  computeNow(): Promise<void> {
    if (this.computing) return this.computing;
    if (this.hooks.ready && !this.hooks.ready()) return Promise.resolve();
    const run = (async () => {
      try {
        await this.compute();
      } catch (e) {
        this.failed(e as Error);
      }
    })().finally(() => {
      this.computing = null;
    });
    this.computing = run;
    return run;
  }

  /** A publication, a computation (the full instance) and a pull (tests, the bench). */
  async exchange(): Promise<void> {
    await this.publishNow();
    if (this.hooks.computes) await this.computeNow();
    await this.pullNow();
  }

  /** A pull or a computation failed: the view stands until stale (checkStale), then local history alone. */
  private failed(e: Error): void {
    this.failures++;
    this.changeState('down', e);
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
        if (this.hooks.computes) {
          this.computeTimer = setTimeout(() => void this.computeNow(), this.intervalMs * ACTIVITY.computeDelay);
          this.computeTimer.unref();
        }
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
    if (this.computeTimer) clearTimeout(this.computeTimer);
    this.timer = null;
    this.pullTimer = null;
  }

  async settled(): Promise<void> {
    await Promise.all([this.publishing, this.pulling, this.computing]);
  }
}

/** Drops the partitions of `activity` and `activity_view` wholly older than the window. Returns how many. */
export async function dropOldActivity(ch: ClickHouse, now = Date.now()): Promise<number> {
  const keepFrom = Math.floor((Math.floor(now / 1000) - ACTIVITY.windowSec) / ACTIVITY.partitionSec);
  const parts = await ch.rows<{ table: string; partition: string }>(
    `SELECT DISTINCT table, partition FROM system.parts WHERE database = ${sqlString(ch.database)} AND table IN ('activity', 'activity_view') AND active`,
    'activity partitions',
  );
  let dropped = 0;
  for (const p of parts) {
    const id = Number(p.partition);
    if (!Number.isSafeInteger(id) || id >= keepFrom) continue;
    await ch.command(`ALTER TABLE ${p.table === 'activity' ? 'activity' : 'activity_view'} DROP PARTITION ${sqlInt(id)}`, 'activity retention');
    dropped++;
  }
  return dropped;
}
