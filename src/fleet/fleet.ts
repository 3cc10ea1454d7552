// A host's part in a fleet (--clickhouse-url), wired for src/server/wire-fleet.ts in one call.
// Every role: rollups go through the spool to ClickHouse (./spool.ts); bot IPs are
// published and the fleet's set pulled (./bot-ips.ts). Role `all` also publishes the key
// set, reads reports from ClickHouse and runs ClickHouse retention. Role `edge` takes its
// keys from ClickHouse and keeps the last set locally (./keys.ts). Nothing here runs on a
// lookup thread, and nothing a lookup needs waits on ClickHouse: the start itself goes on
// with ClickHouse down (schema migration is retried in the background).
// `startFleet` is its steps in order: connect, check the schema (./schema-check.ts), open the
// spool writer, keys and policies by role, retention (role all), the bot IP exchange.
import { hostname } from 'node:os';
import type { Registry } from 'prom-client';
import type { Config } from '../base/config.ts';
import type { CountRow } from '../counts/tuple.ts';
import { log } from '../base/log.ts';
import type { LiveKey } from '../store/api-keys.ts';
import type { ReportSource } from '../reporting/engine.ts';
import type { Store } from '../store/db.ts';
import type { BotIpRow } from '../prebid/bot-ip-tracker.ts';
import { BotIpExchange, type BotIpHooks } from './bot-ips.ts';
import { ClickHouse } from './clickhouse.ts';
import { KeyPublisher, KeyPuller } from './key-sync.ts';
import { registerFleetMetrics } from './fleet-metrics.ts';
import { PolicyPublisher, PolicyPuller } from './policy-sync.ts';
import { ClickHouseBeaconLabels, ClickHouseReportSource } from './reports.ts';
import { IMPRESSION_FLEET_ROLLUPS } from '../reporting/batches.ts';
import type { BeaconLabels } from '../reporting/calibration.ts';
import { scheduleRetention } from './retention.ts';
import { SchemaCheck } from './schema-check.ts';
import { agreeLidSecret } from './lid-secret-sync.ts';
import { FleetWriter } from './spool.ts';
import { SeenLidExchange, type SeenLidHooks } from './seen-lid-exchange.ts';
import type { Role } from '../base/fleet-roles.ts';
import { parseClickHouseUrl } from '../base/clickhouse-url.ts';
import { ACTIVITY, ActivityExchange, type ActivityHooks } from './activity.ts';

/** How long the start waits for the schema check, and for an edge's first key pull. */
const START_WAIT_MS = 2000;

export interface FleetOptions {
  config: Config;
  store: Store;
  /** Bytes the pending counts may take (the memory plan's share). */
  pendingBytes: number;
  /** The process's tuple hash seed (LookupMemory.counts.seed). */
  tupleSeed?: number;
  /** Rows to spool at each flush besides those added: the shared counts, drained. */
  source?: (final: boolean) => CountRow[];
  /** The impressions' rows of each flush (impression-dictionary.ts), spooled by their own writer. */
  impressionSource?: (final: boolean) => CountRow[];
  /** Role all: the live key set to publish (the store's). */
  readKeys?: () => Promise<LiveKey[]>;
  /** Role edge: called when a newer key set was pulled. */
  onKeysPulled?: () => void;
  /** Role edge: called when newer policies were written into this host's store. */
  onPoliciesPulled?: () => void;
  /**
   * Fleet-wide bot IPs, once a minute: `local()` gives this host's bot-heavy IPs of the
   * last minute (the lookup threads' top-K), `onFleetSet` receives the fleet's set.
   */
  botIps?: BotIpHooks;
  /** Fleet-wide replays: where the other hosts' first sights of lids go (src/fleet/seen-lid-exchange.ts). */
  seenLids?: SeenLidHooks;
  /** Fleet-wide activity per key, every second (src/fleet/activity.ts). */
  activity?: ActivityHooks;
}

export interface Fleet {
  readonly role: Role;
  readonly clickhouse: ClickHouse;
  /** The count sink and flusher (spool → ClickHouse). */
  readonly writer: FleetWriter;
  /** Reports from ClickHouse (role all). */
  readonly reportSource: ReportSource;
  /** The impressions' writer (own spool → imp_rollups_*), report source and calibration labels. */
  readonly impressions: { writer: FleetWriter; source: ReportSource; beacons: BeaconLabels };
  /** Role edge: the live keys of the newest set pulled (or kept from before). */
  edgeKeys(): LiveKey[];
  /** Role edge: whether it has a key set at all (kept from an earlier run or pulled since); else true. */
  edgeKeysKnown(): boolean;
  /** Role all: the keys changed here; publish now rather than at the next check. */
  keysChanged(): void;
  /** Role all: a policy changed here; publish now rather than at the next check. */
  policiesChanged(): void;
  /** This host's bot-heavy IPs of the last minute (bounded, see bot-ips.ts); resolves with the rows sent. */
  publishBotIps(rows: readonly BotIpRow[]): Promise<number>;
  /** The fleet's bot-heavy IPs now (bounded, see bot-ips.ts). */
  pullFleetBotIps(): Promise<string[]>;
  /**
   * The fleet's lookup-id secret (the earliest a host offered; `local` offered when there
   * is none yet). Rejects while ClickHouse is away or its schema not ready.
   */
  lidSecret(local: Uint8Array): Promise<Uint8Array>;
  /** The seen-lid exchange: the lookup threads' first sights go to `add` (null without hooks). */
  readonly seenLids: SeenLidExchange | null;
  /** The activity exchange (null without hooks). */
  readonly activity: ActivityExchange | null;
  /** Adds the fleet's gauges and counters to a metrics registry. */
  registerMetrics(registry: Registry): void;
  /** SIGTERM path: spools what is pending, delivers for a few seconds, stops every timer. */
  close(): Promise<void>;
}

/**
 * Waits for `work`, or START_WAIT_MS at most. The timer is ref'd on purpose: while the start
 * waits here nothing else may keep Node's event loop alive yet (no listener is open), and a
 * loop that runs out of work ends the process with status 0 mid-start, which a supervisor
 * does not restart (a host rebooted during a ClickHouse outage would stay dark).
 */
async function briefly(work: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, START_WAIT_MS);
  });
  try {
    await Promise.race([work, waited]);
  } finally {
    clearTimeout(timer);
  }
}

/** Keys and policies across the fleet: an edge pulls both, the full instance publishes both. */
interface KeySync {
  keyPuller: KeyPuller | null;
  keyPublisher: KeyPublisher | null;
  policyPuller: PolicyPuller | null;
  policyPublisher: PolicyPublisher | null;
}

/**
 * Role edge: serves the key set kept from the last run, pulls a newer one (waiting for it
 * only briefly), then pulls keys and policies every 2 s.
 */
async function pullKeysAndPolicies(ch: ClickHouse, opts: FleetOptions): Promise<KeySync> {
  const puller = new KeyPuller(ch, opts.store, () => opts.onKeysPulled?.());
  const kept = await puller.loadLocal();
  log.info({ keys: kept, version: puller.setVersion }, kept === null ? 'fleet edge: no key set kept yet' : 'fleet edge: serving the key set kept from the last run');
  const first = puller.pull().catch(() => undefined); // logged inside; the kept set serves
  await briefly(first);
  puller.start();
  const policyPuller = new PolicyPuller(ch, opts.store, () => opts.onPoliciesPulled?.());
  policyPuller.start();
  return { keyPuller: puller, keyPublisher: null, policyPuller, policyPublisher: null };
}

/** Role all: publishes the live key set and each changed policy (now, and checked every 2 s). */
function publishKeysAndPolicies(ch: ClickHouse, opts: FleetOptions): KeySync {
  if (!opts.readKeys) throw new Error('startFleet: role all needs readKeys');
  const publisher = new KeyPublisher(ch, opts.readKeys);
  publisher.start();
  const policyPublisher = new PolicyPublisher(ch, opts.store);
  policyPublisher.start();
  return { keyPuller: null, keyPublisher: publisher, policyPuller: null, policyPublisher };
}

export async function startFleet(opts: FleetOptions): Promise<Fleet> {
  const { config, store } = opts;
  const role = config.role as Role;
  const target = parseClickHouseUrl(config.clickhouseUrl!);
  const ch = new ClickHouse(target);
  const host = hostname();

  // The schema is checked in the background until it works; the start waits only briefly.
  const schema = new SchemaCheck(ch, target);
  await briefly(schema.done);
  // Rollups go through the spool, delivered once the schema is ready.
  const writer = await FleetWriter.open(store, ch, {
    flushIntervalMs: config.flushInterval * 1000,
    maxPendingBytes: opts.pendingBytes,
    ...(opts.tupleSeed !== undefined ? { tupleSeed: opts.tupleSeed } : {}),
    ...(opts.source ? { source: opts.source } : {}),
    ready: () => schema.ready,
  });
  // Impressions go the same way in their own spool and tables; a smaller share of the
  // pending bytes (as on one host), and less of the stop's time (both fit its 15 s).
  const impWriter = await FleetWriter.open(store, ch, {
    flushIntervalMs: config.flushInterval * 1000,
    maxPendingBytes: Math.floor(opts.pendingBytes / 4),
    closeDeliveryMs: 3000,
    ...(opts.tupleSeed !== undefined ? { tupleSeed: opts.tupleSeed ^ 0x1a9e55 } : {}),
    ...(opts.impressionSource ? { source: opts.impressionSource } : {}),
    ready: () => schema.ready,
    rollups: IMPRESSION_FLEET_ROLLUPS,
  });
  const sync = role === 'edge' ? await pullKeysAndPolicies(ch, opts) : publishKeysAndPolicies(ch, opts);
  const stopRetention = role === 'edge' ? () => {} : scheduleRetention(ch, config.retentionDays, () => schema.ready);
  const botIps = new BotIpExchange(ch, host);
  if (opts.botIps) botIps.start(opts.botIps);
  const seenLids = opts.seenLids ? new SeenLidExchange(ch, host, opts.seenLids) : null;
  seenLids?.start();
  // Its own connection, with a timeout of a few intervals: a slow ClickHouse costs the
  // activity exchange a few intervals, never the other exchanges' queue.
  const activityCh = opts.activity ? new ClickHouse(target, { requestTimeoutMs: Math.max(ACTIVITY.staleMs, ACTIVITY.staleIntervals * (opts.activity.intervalMs ?? ACTIVITY.intervalMs)) }) : null;
  const activity = opts.activity && activityCh ? new ActivityExchange(activityCh, { ready: () => schema.ready, computes: role !== 'edge', ...opts.activity }, host) : null;
  activity?.start();
  const reportSource = new ClickHouseReportSource(ch);
  log.info({ role, clickhouse: target.display, host }, 'fleet: started');

  return {
    role,
    clickhouse: ch,
    writer,
    reportSource,
    seenLids,
    activity,
    impressions: { writer: impWriter, source: new ClickHouseReportSource(ch, true, 'impressions'), beacons: new ClickHouseBeaconLabels(ch) },
    edgeKeys: () => sync.keyPuller?.liveKeys() ?? [],
    edgeKeysKnown: () => (sync.keyPuller === null ? true : sync.keyPuller.setVersion > 0),
    keysChanged: () => sync.keyPublisher?.nudge(),
    policiesChanged: () => sync.policyPublisher?.nudge(),
    async lidSecret(local) {
      if (!schema.ready) throw new Error('ClickHouse schema not ready');
      return agreeLidSecret(ch, local, host);
    },
    publishBotIps: (rows) => botIps.publish(rows),
    pullFleetBotIps: () => botIps.pull(),
    registerMetrics(registry) {
      registerFleetMetrics(registry, { writer, impWriter, puller: sync.keyPuller, fleetBotIps: () => botIps.fleetSize, schemaReady: () => schema.ready, seenLids, activity });
    },
    async close() {
      schema.close();
      stopRetention();
      botIps.stop();
      seenLids?.stop();
      activity?.stop();
      sync.keyPublisher?.stop();
      sync.keyPuller?.stop();
      sync.policyPublisher?.stop();
      sync.policyPuller?.stop();
      // Whichever fails to spool its last counts fails the stop, after both had their turn.
      const closed = await Promise.allSettled([impWriter.close(), writer.close()]);
      // Closing the connection ends whatever still waits on ClickHouse (a pull, a publication).
      await ch.close();
      await activityCh?.close();
      await Promise.all([writer.settled(), impWriter.settled(), seenLids?.settled(), activity?.settled(), sync.keyPublisher?.settled(), sync.keyPuller?.settled(), sync.policyPublisher?.settled(), sync.policyPuller?.settled(), schema.done]);
      const failed = closed.find((c): c is PromiseRejectedResult => c.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
