// Start step "wire the fleet" (--clickhouse-url, src/fleet): counts and reports through
// ClickHouse, keys published (role all) or pulled (role edge), bot IPs exchanged. Null
// without a ClickHouse URL.
import type { Config } from '../config.ts';
import { startFleet, type Fleet } from '../fleet/fleet.ts';
import { BotIpTally } from '../prebid/bot-ip-tracker.ts';
import type { LookupEngine } from '../prebid/pipeline.ts';
import { activePrebidKeys } from '../store/api-keys.ts';
import type { Store } from '../store/db.ts';
import type { ServerMemory } from './memory.ts';

export interface FleetWiring {
  fleet: Fleet;
  /** This host's bot-heavy IPs of the period, as the lookup threads report them. */
  botIpTally: BotIpTally;
}

/** What the fleet calls back into: the main thread's engine and pushes, there once the start got that far. */
export interface FleetHooks {
  engine(): LookupEngine;
  keysPulled(): void;
  policiesPulled(): void;
}

export async function wireFleet(config: Config, store: Store, memory: ServerMemory, hooks: FleetHooks, botIpIntervalMs: number | undefined): Promise<FleetWiring | null> {
  if (!config.clickhouseUrl) return null;
  const botIpTally = new BotIpTally();
  const fleet = await startFleet({
    config,
    store,
    pendingBytes: Math.floor(memory.plan.pendingCountsBytes / 3),
    tupleSeed: memory.lookup.counts.seed,
    source: memory.drainCounts,
    readKeys: () => activePrebidKeys(store),
    onKeysPulled: () => hooks.keysPulled(),
    onPoliciesPulled: () => hooks.policiesPulled(),
    botIps: {
      // This host's bot-heavy IPs of the last period, from every lookup thread...
      local: () => botIpTally.take(),
      // ...and the fleet's set, keyed as history keys IPs, into shared memory.
      onFleetSet: (ips) => {
        const sources = hooks.engine().sources;
        const keys = ips.map((ip) => {
          const k = sources.history.keysFor({ ip, uid: '', ifa: '', ua: '' });
          return [k.ipHi, k.ipLo] as const;
        });
        sources.fleetBotIps.replace(keys);
      },
      ...(botIpIntervalMs ? { intervalMs: botIpIntervalMs } : {}),
    },
  });
  return { fleet, botIpTally };
}
