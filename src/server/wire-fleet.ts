// Start step "wire the fleet" (--clickhouse-url, src/fleet): counts and reports through
// ClickHouse, keys published (role all) or pulled (role edge), bot IPs exchanged. Null
// without a ClickHouse URL.
import type { Config } from '../base/config.ts';
import { startFleet, type Fleet } from '../fleet/fleet.ts';
import { BotIpTally } from '../prebid/bot-ip-tracker.ts';
import type { LookupEngine } from '../prebid/pipeline.ts';
import { activePrebidKeys } from '../store/api-keys.ts';
import type { Store } from '../store/db.ts';
import type { ServerMemory } from './memory.ts';
import { log } from '../base/log.ts';
import { saveLidSecret } from './lid-secret.ts';
import type { Cleanup } from './cleanup.ts';
import type { BeaconIpRow } from '../prebid/messages.ts';
import { BAD_IPS_MAX } from '../prebid/beacon.ts';
import { SeenLids } from '../prebid/seen-lids.ts';
import { hashId } from '../memory/hash.ts';
import { ActivityDeltas, FleetActivity } from '../signals/fleet-activity.ts';

export interface FleetWiring {
  fleet: Fleet;
  /** This host's bot-heavy IPs of the period, as the lookup threads report them. */
  botIpTally: BotIpTally;
  /** The lookups' IPs (history keys) of this host's invalid impressions of the period. */
  beaconIpTally: BeaconIpTally;
}

/** Main thread: the threads' beacon IP rows of one publication period, summed per key (bounded). */
export class BeaconIpTally {
  private keys = new Map<number, BeaconIpRow>();

  add(rows: readonly BeaconIpRow[]): void {
    for (const r of rows) {
      const id = hashId(r.hi, r.lo);
      const e = this.keys.get(id);
      if (e !== undefined) {
        e.beacons += r.beacons;
        e.invalid += r.invalid;
      } else if (this.keys.size < 4 * BAD_IPS_MAX) {
        this.keys.set(id, { ...r });
      }
    }
  }

  take(): BeaconIpRow[] {
    const rows = [...this.keys.values()];
    this.keys = new Map();
    return rows;
  }
}

/** What the fleet calls back into: the main thread's engine and pushes, there once the start got that far. */
export interface FleetHooks {
  engine(): LookupEngine;
  keysPulled(): void;
  policiesPulled(): void;
}

export async function wireFleet(
  config: Config,
  store: Store,
  memory: ServerMemory,
  hooks: FleetHooks,
  intervals: { botIpMs?: number | undefined; seenLidMs?: number | undefined; activityMs?: number | undefined } = {},
): Promise<FleetWiring | null> {
  if (!config.clickhouseUrl) return null;
  const botIpTally = new BotIpTally();
  const beaconIpTally = new BeaconIpTally();
  // The main thread's view of the lookup threads' seen-lids table (shared memory).
  const seen = new SeenLids(memory.lookup.impressions.seen);
  const ttlSec = Math.floor(config.impTtl);
  // The lookup threads' activity tables (allocated for a fleet host by the memory plan).
  const act = memory.lookup.fleetActivity;
  const deltas = act ? new ActivityDeltas(act.deltas) : null;
  const view = act ? new FleetActivity(act.view, memory.lookup.history.windowMs) : null;
  const fleet = await startFleet({
    config,
    store,
    pendingBytes: Math.floor(memory.plan.pendingCountsBytes / 3),
    tupleSeed: memory.lookup.counts.seed,
    source: memory.drainCounts,
    impressionSource: memory.drainImpressions,
    readKeys: () => activePrebidKeys(store),
    onKeysPulled: () => hooks.keysPulled(),
    onPoliciesPulled: () => hooks.policiesPulled(),
    botIps: {
      // This host's bot-heavy IPs of the last period, from every lookup thread, and the
      // lookups' IPs of its invalid impressions (history keys)...
      local: () => botIpTally.take(),
      localBeacons: () => beaconIpTally.take(),
      // ...and the fleet's set, keyed as history keys IPs, into shared memory.
      onFleetSet: (ips, beaconKeys) => {
        const sources = hooks.engine().sources;
        const keys = ips.map((ip) => {
          const k = sources.history.keysFor({ ip, uid: '', ifa: '', ua: '' });
          return [k.ipHi, k.ipLo] as const;
        });
        sources.fleetBotIps.replace([...keys, ...beaconKeys]);
      },
      ...(intervals.botIpMs ? { intervalMs: intervals.botIpMs } : {}),
    },
    ...(deltas && view
      ? {
          activity: {
            drain: () => deltas.drain(),
            onView: (keys, asOf) => void view.replace(keys, asOf),
            windowMs: memory.lookup.history.windowMs,
            ...(intervals.activityMs ? { intervalMs: intervals.activityMs } : {}),
          },
        }
      : {}),
    seenLids: {
      remember: (hi, lo, atSec, mismatch) => seen.remember(hi, lo, atSec, Math.floor(Date.now() / 1000), ttlSec, mismatch),
      ttlSec,
      ...(intervals.seenLidMs ? { intervalMs: intervals.seenLidMs } : {}),
    },
  });
  return { fleet, botIpTally, beaconIpTally };
}

/** How long the start waits for the fleet's lookup-id secret before signing with its own. */
const LID_SECRET_WAIT_MS = 5000;
const LID_SECRET_RETRY_MS = 30_000;

/**
 * The lookup ids' secret: made once and kept in the data dir's lid.key; a fleet's hosts share
 * the fleet's (src/fleet/lid-secret-sync.ts), kept in the same file. While ClickHouse is away a
 * fleet host signs with its own and keeps asking; a secret agreed later is saved for the
 * next start (the running threads keep theirs: the log says to restart). `local`: lid.key as
 * read at start (src/server/serve.ts reads it once).
 */
export async function lidSecretFor(config: Config, fleet: FleetWiring | null, cleanup: Cleanup, local: Uint8Array): Promise<Uint8Array> {
  if (!fleet) return local;
  const agree = async (): Promise<Uint8Array> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        fleet.fleet.lidSecret(local),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('no answer from ClickHouse')), LID_SECRET_WAIT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
  const keep = (secret: Uint8Array): boolean => {
    if (Buffer.from(secret).equals(Buffer.from(local))) return false;
    saveLidSecret(config.dataDir, secret);
    return true;
  };
  try {
    const secret = await agree();
    keep(secret);
    return secret;
  } catch (e) {
    log.warn({ err: (e as Error).message }, "fleet: the fleet's lookup-id secret is not known yet; this host signs lids with its own (other hosts refuse their beacons) and keeps asking");
    const timer = setInterval(() => {
      agree()
        .then((secret) => {
          clearInterval(timer);
          if (keep(secret)) log.warn({}, "fleet: the fleet's lookup-id secret is now in lid.key; restart this host to sign with it");
        })
        .catch(() => undefined);
    }, LID_SECRET_RETRY_MS);
    timer.unref();
    cleanup.add(() => clearInterval(timer));
    return local;
  }
}
