// Fleet-wide IP reputation, the ClickHouse side. `ipBotActivity` means "this IP was used
// frequently by bots recently"; one host sees only its sliver of the traffic. Once a minute
// each host publishes its bot-heavy IPs (its own bounded top-K, chosen by the lookup
// threads from their history) and pulls the fleet's set back; the lookup threads consult
// that set per lookup. Both sides are bounded:
//
//   publish: at most BOT_IPS.perHost rows per host per minute (the most invalid lookups
//            first); a row is an IP address (v4 or v6) with its lookups and invalid lookups
//            in that minute; anything else is dropped.
//   rule:    an IP is in the fleet set when, summed over every host's rows of the last
//            BOT_IPS.windowMinutes minutes, invalid ≥ BOT_IPS.minInvalid and
//            invalid ≥ BOT_IPS.minShare × lookups.
//   pull:    at most BOT_IPS.fleetMax IPs, the most invalid lookups first.
//
// With publication and pulls each minute, an IP that bots use on one host is flagged on
// every host within about two minutes. Rows older than BOT_IPS.keepDays days are dropped
// (whole daily partitions) by the full instance.
import { isIP } from 'node:net';
import { log } from '../base/log.ts';
import type { BotIpRow } from '../prebid/bot-ip-tracker.ts';
import type { BeaconIpRow } from '../prebid/messages.ts';
import type { ClickHouse } from './clickhouse.ts';
import { sqlInt, sqlString } from './sql.ts';

export const BOT_IPS = {
  perHost: 1000,
  fleetMax: 10_000,
  windowMinutes: 10,
  minInvalid: 10,
  minShare: 0.5,
  keepDays: 2,
  /** Publication and pull period (ms). */
  intervalMs: 60_000,
} as const;

/** The rows a host may publish: valid IPs, sane counts, the BOT_IPS.perHost most invalid. */
export function boundBotIps(rows: readonly BotIpRow[], perHost: number = BOT_IPS.perHost): BotIpRow[] {
  const ok = rows.filter(
    (r) =>
      typeof r.ip === 'string' &&
      r.ip.length <= 45 &&
      isIP(r.ip) !== 0 &&
      Number.isSafeInteger(r.lookups) &&
      Number.isSafeInteger(r.invalid) &&
      r.invalid > 0 &&
      r.lookups >= r.invalid,
  );
  ok.sort((a, b) => b.invalid - a.invalid || b.lookups - a.lookups);
  return ok.slice(0, perHost).map((r) => ({ ip: r.ip.toLowerCase(), lookups: r.lookups, invalid: r.invalid }));
}

/** Publishes this host's bot-heavy IPs for the current minute (one INSERT). Returns the rows sent. */
export async function publishBotIps(ch: ClickHouse, host: string, rows: readonly BotIpRow[], now = Date.now()): Promise<number> {
  const kept = boundBotIps(rows);
  if (kept.length === 0) return 0;
  const minute = Math.floor(now / 60_000) * 60;
  await ch.insert(
    'bot_ips',
    kept.map((r) => ({ minute, host, ip: r.ip, lookups: r.lookups, invalid: r.invalid })),
  );
  return kept.length;
}

/** The fleet's bot-heavy IPs now, by the rule above (at most BOT_IPS.fleetMax, most invalid first). */
export async function pullFleetBotIps(ch: ClickHouse, now = Date.now()): Promise<string[]> {
  const since = Math.floor(now / 60_000) * 60 - (BOT_IPS.windowMinutes - 1) * 60;
  const rows = await ch.rows<{ ip: string }>(
    `SELECT ip FROM bot_ips WHERE minute >= toDateTime(${sqlInt(since)}) ` +
      `GROUP BY ip HAVING sum(invalid) >= ${sqlInt(BOT_IPS.minInvalid)} AND sum(invalid) >= ${BOT_IPS.minShare} * sum(lookups) ` +
      `ORDER BY sum(invalid) DESC, ip LIMIT ${sqlInt(BOT_IPS.fleetMax)}`,
    'fleet bot IPs',
  );
  return rows.map((r) => r.ip);
}

/**
 * The IPs of invalid impressions: the beacons' side of the exchange (table bot_ip_keys).
 * A beacon knows its lookup's IP by its history key only (the lid carries no address);
 * the hosts of a fleet key IPs alike (their history seed comes from the fleet's lid
 * secret), so a key published by one is the same IP on every other. Same bounds and rule
 * as the lookups' rows: per host BOT_IPS.perHost rows a minute (the most invalid
 * impressions first); in the fleet set when, over BOT_IPS.windowMinutes, invalid
 * impressions ≥ BOT_IPS.minInvalid and ≥ BOT_IPS.minShare of its judged beacons.
 */
export function boundBeaconIps(rows: readonly BeaconIpRow[], perHost: number = BOT_IPS.perHost): BeaconIpRow[] {
  const ok = rows.filter((r) => Number.isSafeInteger(r.beacons) && Number.isSafeInteger(r.invalid) && r.invalid > 0 && r.beacons >= r.invalid && (r.hi !== 0 || r.lo !== 0));
  ok.sort((a, b) => b.invalid - a.invalid || b.beacons - a.beacons);
  return ok.slice(0, perHost);
}

export async function publishBeaconIps(ch: ClickHouse, host: string, rows: readonly BeaconIpRow[], now = Date.now()): Promise<number> {
  const kept = boundBeaconIps(rows);
  if (kept.length === 0) return 0;
  const minute = Math.floor(now / 60_000) * 60;
  await ch.insert(
    'bot_ip_keys',
    kept.map((r) => ({ minute, host, key_hi: r.hi >>> 0, key_lo: r.lo >>> 0, beacons: r.beacons, invalid: r.invalid })),
  );
  return kept.length;
}

/** The history keys (hi, lo) of the IPs whose impressions the fleet found invalid, by the rule above. */
export async function pullFleetBeaconIps(ch: ClickHouse, now = Date.now()): Promise<Array<readonly [number, number]>> {
  const since = Math.floor(now / 60_000) * 60 - (BOT_IPS.windowMinutes - 1) * 60;
  const rows = await ch.rows<{ key_hi: number | string; key_lo: number | string }>(
    `SELECT key_hi, key_lo FROM bot_ip_keys WHERE minute >= toDateTime(${sqlInt(since)}) ` +
      `GROUP BY key_hi, key_lo HAVING sum(invalid) >= ${sqlInt(BOT_IPS.minInvalid)} AND sum(invalid) >= ${BOT_IPS.minShare} * sum(beacons) ` +
      `ORDER BY sum(invalid) DESC, key_hi, key_lo LIMIT ${sqlInt(BOT_IPS.fleetMax)}`,
    'fleet beacon IPs',
  );
  return rows.map((r) => [Number(r.key_hi) >>> 0, Number(r.key_lo) >>> 0] as const);
}

/** Drops daily partitions of bot_ips older than BOT_IPS.keepDays (full instance, daily). */
export async function dropOldBotIps(ch: ClickHouse, now = Date.now()): Promise<number> {
  const oldest = new Date(now - BOT_IPS.keepDays * 86_400_000);
  const keep = oldest.getUTCFullYear() * 10_000 + (oldest.getUTCMonth() + 1) * 100 + oldest.getUTCDate();
  let dropped = 0;
  for (const table of ['bot_ips', 'bot_ip_keys']) {
    const parts = await ch.rows<{ partition: string }>(
      `SELECT DISTINCT partition FROM system.parts WHERE database = ${sqlString(ch.database)} AND table = ${sqlString(table)} AND active`,
      'bot IP partitions',
    );
    for (const p of parts) {
      const day = Number(p.partition);
      if (!Number.isSafeInteger(day) || day >= keep) continue;
      await ch.command(`ALTER TABLE ${table} DROP PARTITION ${sqlInt(day)}`, 'bot IP retention');
      dropped++;
    }
  }
  return dropped;
}

/** What the exchange reads and feeds on this host (src/server/wire-fleet.ts wires the lookup threads). */
export interface BotIpHooks {
  /** This host's bot-heavy IPs of the last period (the lookup threads' top-K). */
  local(): BotIpRow[] | Promise<BotIpRow[]>;
  /** The IPs (history keys) of this host's invalid impressions of the last period, if any. */
  localBeacons?(): BeaconIpRow[];
  /** Receives the fleet's set: addresses, and history keys of IPs whose impressions were invalid. */
  onFleetSet(ips: string[], keys: Array<readonly [number, number]>): void;
  /** Publication and pull period (default BOT_IPS.intervalMs; tests shorten it). */
  intervalMs?: number;
}

/** This host's side of the exchange: publish its rows, then pull the fleet's set, every period. */
export class BotIpExchange {
  /** IPs in the fleet's set last pulled. */
  fleetSize = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ch: ClickHouse,
    private readonly host: string,
  ) {}

  publish(rows: readonly BotIpRow[]): Promise<number> {
    return publishBotIps(this.ch, this.host, rows);
  }

  async pull(): Promise<string[]> {
    const ips = await pullFleetBotIps(this.ch);
    this.fleetSize = ips.length;
    return ips;
  }

  /** Runs the exchange every period; a failed one keeps the last fleet set. */
  start(hooks: BotIpHooks): void {
    const exchange = async () => {
      try {
        await this.publish(await hooks.local());
        if (hooks.localBeacons) await publishBeaconIps(this.ch, this.host, hooks.localBeacons());
        const ips = await this.pull();
        const keys = await pullFleetBeaconIps(this.ch);
        this.fleetSize = ips.length + keys.length;
        hooks.onFleetSet(ips, keys);
      } catch (e) {
        log.warn({ err: (e as Error).message }, 'fleet: bot IP exchange failed; keeping the last fleet set');
      }
    };
    this.timer = setInterval(() => void exchange(), hooks.intervalMs ?? BOT_IPS.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
