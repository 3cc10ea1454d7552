// Fleet-wide replays: a lid beaconed on one host and replayed to another is a `replay`
// there too, once the hosts have exchanged what they saw. The lookup threads never wait on
// this: each reports the first sights of its beacons with its counts (tag, lookup second,
// whether that first beacon was a mismatch; at most FIRST_SEEN_MAX per thread per second);
// the main thread publishes them to ClickHouse every SEEN_LIDS.intervalMs and pulls every
// host's rows published since its last pull (with an overlap for late inserts and clock
// skew), and writes each lid it did not know into the shared seen-lids table, as if its
// first beacon had come here (SeenLids.remember). A replay reaching another host before
// that exchange (about two periods, 10 to 20 s by default) is judged there as a first
// sight: `valid` (or `mismatch`), and is not corrected later. Bounded on both sides:
// SEEN_LIDS.perHost rows published per period (the rest of that period's sights are not
// shared), SEEN_LIDS.pullMax rows taken per pull, only lids still within --imp-ttl.
import { log } from '../base/log.ts';
import type { ClickHouse } from './clickhouse.ts';
import { sqlInt, sqlString } from './sql.ts';

export const SEEN_LIDS = {
  /** Publication and pull period (ms). */
  intervalMs: 10_000,
  /** Rows one host publishes per period at most. */
  perHost: 500_000,
  /** Rows one pull takes at most. */
  pullMax: 2_000_000,
  /** Seconds a pull reaches back before its last one (late inserts, clock skew between hosts). */
  overlapSec: 30,
  /** Daily partitions older than this are dropped by the full instance. */
  keepDays: 1,
} as const;

export interface SeenLidHooks {
  /** Writes a lid another host saw into this host's seen-lids table (SeenLids.remember); true when it was new here. */
  remember(hi: number, lo: number, atSec: number, mismatch: boolean): boolean;
  /** --imp-ttl in seconds (0: none): older lids are neither pulled nor remembered. */
  ttlSec: number;
  /** Publication and pull period (default SEEN_LIDS.intervalMs; tests shorten it). */
  intervalMs?: number;
}

interface Row {
  tag_hi: number | string;
  tag_lo: number | string;
  at: number | string;
  first_mismatch: number | string;
}

export class SeenLidExchange {
  /** First sights waiting for publication, flat (tagHi, tagLo, atSec, mismatch). */
  private pending: number[] = [];
  /** Sights not published because a period had more than SEEN_LIDS.perHost (cumulative). */
  dropped = 0;
  /** Lids of other hosts written into this host's table (cumulative). */
  remembered = 0;
  /** Exchanges that failed (ClickHouse away; cumulative). */
  failures = 0;
  private lastPullSec = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly ch: ClickHouse,
    private readonly host: string,
    private readonly hooks: SeenLidHooks,
  ) {}

  /** First sights from a lookup thread's report (flat quadruples). */
  add(flat: readonly number[]): void {
    const room = SEEN_LIDS.perHost * 4 - this.pending.length;
    const n = Math.min(room, flat.length);
    for (let i = 0; i < n; i++) this.pending.push(flat[i]!);
    this.dropped += (flat.length - n) / 4;
  }

  /** Publishes the pending sights (one INSERT); on failure they wait for the next period. */
  async publish(now = Date.now()): Promise<number> {
    if (this.pending.length === 0) return 0;
    const flat = this.pending;
    this.pending = [];
    const published = Math.floor(now / 1000);
    const rows = [];
    for (let i = 0; i < flat.length; i += 4) rows.push({ published, host: this.host, tag_hi: flat[i], tag_lo: flat[i + 1], at: flat[i + 2], first_mismatch: flat[i + 3] });
    try {
      await this.ch.insert('seen_lids', rows);
    } catch (e) {
      // Back in front of what came since, within the bound.
      this.pending = flat.concat(this.pending).slice(0, SEEN_LIDS.perHost * 4);
      throw e;
    }
    return rows.length;
  }

  /** Pulls the fleet's sights published since the last pull and remembers them; returns how many were new here. */
  async pull(now = Date.now()): Promise<number> {
    const nowSec = Math.floor(now / 1000);
    const ttl = this.hooks.ttlSec;
    const since = this.lastPullSec > 0 ? this.lastPullSec - SEEN_LIDS.overlapSec : ttl > 0 ? nowSec - ttl : 0;
    const rows = await this.ch.rows<Row>(
      `SELECT tag_hi, tag_lo, at, first_mismatch FROM seen_lids WHERE published >= toDateTime(${sqlInt(Math.max(0, since))})` +
        (ttl > 0 ? ` AND at >= ${sqlInt(nowSec - ttl)}` : '') +
        ` LIMIT ${sqlInt(SEEN_LIDS.pullMax)}`,
      'seen lids',
    );
    this.lastPullSec = nowSec;
    let added = 0;
    for (const r of rows) {
      if (this.hooks.remember(Number(r.tag_hi) >>> 0, Number(r.tag_lo) >>> 0, Number(r.at) >>> 0, Number(r.first_mismatch) === 1)) added++;
    }
    this.remembered += added;
    return added;
  }

  /** One publication and pull (one at a time). */
  exchange(): Promise<void> {
    if (this.running) return this.running;
    const run = (async () => {
      try {
        await this.publish();
        await this.pull();
      } catch (e) {
        this.failures++;
        log.warn({ err: (e as Error).message }, 'fleet: seen-lid exchange failed; replays across hosts wait for the next one');
      }
    })().finally(() => {
      this.running = null;
    });
    this.running = run;
    return run;
  }

  start(): void {
    this.timer = setInterval(() => void this.exchange(), this.hooks.intervalMs ?? SEEN_LIDS.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async settled(): Promise<void> {
    await this.running;
  }
}

/** Drops daily partitions of seen_lids older than SEEN_LIDS.keepDays (full instance, daily). */
export async function dropOldSeenLids(ch: ClickHouse, now = Date.now()): Promise<number> {
  const oldest = new Date(now - SEEN_LIDS.keepDays * 86_400_000);
  const keep = oldest.getUTCFullYear() * 10_000 + (oldest.getUTCMonth() + 1) * 100 + oldest.getUTCDate();
  const parts = await ch.rows<{ partition: string }>(
    `SELECT DISTINCT partition FROM system.parts WHERE database = ${sqlString(ch.database)} AND table = 'seen_lids' AND active`,
    'seen lid partitions',
  );
  let dropped = 0;
  for (const p of parts) {
    const day = Number(p.partition);
    if (!Number.isSafeInteger(day) || day >= keep) continue;
    await ch.command(`ALTER TABLE seen_lids DROP PARTITION ${sqlInt(day)}`, 'seen lid retention');
    dropped++;
  }
  return dropped;
}
