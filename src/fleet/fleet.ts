// A host's part in a fleet (--clickhouse-url), wired for src/server.ts in one call.
// Every role: rollups go through the spool to ClickHouse (./spool.ts); bot IPs are
// published and the fleet's set pulled (./bot-ips.ts). Role `all` also publishes the key
// set, reads reports from ClickHouse and runs ClickHouse retention. Role `edge` takes its
// keys from ClickHouse and keeps the last set locally (./keys.ts). Nothing here runs on a
// lookup thread, and nothing a lookup needs waits on ClickHouse: the start itself goes on
// with ClickHouse down (schema migration is retried in the background).
import { agreeLidSecret } from './lid-secret.ts';
import { hostname } from 'node:os';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Config } from '../config.ts';
import type { CountRow } from '../reporting/tuple.ts';
import { log } from '../log.ts';
import type { LiveKey } from '../store/api-keys.ts';
import type { ReportSource } from '../reporting/engine.ts';
import type { Store } from '../store/db.ts';
import type { BotIpRow } from '../prebid/bot-ip-tracker.ts';
import { BOT_IPS, dropOldBotIps, publishBotIps, pullFleetBotIps } from './bot-ips.ts';
import { ClickHouse } from './clickhouse.ts';
import { KeyPublisher, KeyPuller } from './keys.ts';
import { PolicyPublisher, PolicyPuller } from './policies.ts';
import { ClickHouseReportSource } from './reports.ts';
import { dropExpiredRollups } from './retention.ts';
import { migrateClickHouse } from './schema.ts';
import { FleetWriter } from './spool.ts';
import type { Role } from '../fleet-roles.ts';
import { parseClickHouseUrl } from '../clickhouse-url.ts';


/** Seconds between schema attempts while ClickHouse is unreachable at start. */
const MIGRATE_RETRY_MS = 5000;
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
  source?: () => CountRow[];
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
  botIps?: {
    local(): BotIpRow[] | Promise<BotIpRow[]>;
    onFleetSet(ips: string[]): void;
    /** Publication and pull period (default BOT_IPS.intervalMs; tests shorten it). */
    intervalMs?: number;
  };
}

export interface Fleet {
  readonly role: Role;
  readonly clickhouse: ClickHouse;
  /** The count sink and flusher (spool → ClickHouse). */
  readonly writer: FleetWriter;
  /** Reports from ClickHouse (role all). */
  readonly reportSource: ReportSource;
  /** Role edge: the live keys of the newest set pulled (or kept from before). */
  edgeKeys(): LiveKey[];
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

export async function startFleet(opts: FleetOptions): Promise<Fleet> {
  const { config, store } = opts;
  const role = config.role as Role;
  const target = parseClickHouseUrl(config.clickhouseUrl!);
  const ch = new ClickHouse(target);
  const host = hostname();
  const timers: NodeJS.Timeout[] = [];
  let schemaReady = false;

  // The schema is checked (and created) in the background until it works; the start waits
  // for it only briefly, so an unreachable or hanging ClickHouse never holds up lookups.
  let closed = false;
  let wakeMigrate: (() => void) | null = null;
  let warned = '';
  const migrate = async (): Promise<void> => {
    while (!closed) {
      try {
        await migrateClickHouse(ch);
        schemaReady = true;
        log.info({ clickhouse: target.display, database: target.database }, 'fleet: ClickHouse schema ready');
        return;
      } catch (e) {
        const msg = (e as Error).message;
        if (msg !== warned) log.warn({ err: msg, retryInSeconds: MIGRATE_RETRY_MS / 1000 }, 'fleet: ClickHouse not ready; serving on, rollups wait in the spool');
        warned = msg;
        // Unref'd once serving (the listeners keep Node alive); close() cuts it short.
        await new Promise<void>((r) => {
          const t = setTimeout(r, MIGRATE_RETRY_MS);
          t.unref();
          wakeMigrate = () => {
            clearTimeout(t);
            r();
          };
        });
        wakeMigrate = null;
      }
    }
  };
  const migrated = migrate();
  await briefly(migrated);

  const writer = await FleetWriter.open(store, ch, {
    flushIntervalMs: config.flushInterval * 1000,
    maxPendingBytes: opts.pendingBytes,
    ...(opts.tupleSeed !== undefined ? { tupleSeed: opts.tupleSeed } : {}),
    ...(opts.source ? { source: opts.source } : {}),
    ready: () => schemaReady,
  });

  let publisher: KeyPublisher | null = null;
  let puller: KeyPuller | null = null;
  let policyPublisher: PolicyPublisher | null = null;
  let policyPuller: PolicyPuller | null = null;
  if (role === 'edge') {
    puller = new KeyPuller(ch, store, () => opts.onKeysPulled?.());
    const kept = await puller.loadLocal();
    log.info({ keys: kept, version: puller.setVersion }, kept === null ? 'fleet edge: no key set kept yet' : 'fleet edge: serving the key set kept from the last run');
    const first = puller.pull().catch(() => undefined); // logged inside; the kept set serves
    await briefly(first);
    puller.start();
    policyPuller = new PolicyPuller(ch, store, () => opts.onPoliciesPulled?.());
    policyPuller.start();
  } else {
    if (!opts.readKeys) throw new Error('startFleet: role all needs readKeys');
    publisher = new KeyPublisher(ch, opts.readKeys);
    publisher.start();
    policyPublisher = new PolicyPublisher(ch, store);
    policyPublisher.start();
    const maintain = async () => {
      if (!schemaReady) return;
      try {
        const rollups = await dropExpiredRollups(ch, config.retentionDays);
        const bots = await dropOldBotIps(ch);
        if (rollups + bots > 0) log.info({ rollupPartitions: rollups, botIpPartitions: bots }, 'fleet: ClickHouse retention dropped old partitions');
      } catch (e) {
        log.warn({ err: (e as Error).message }, 'fleet: ClickHouse retention pass failed; will retry');
      }
    };
    const t = setInterval(() => void maintain(), 86_400_000);
    t.unref();
    timers.push(t);
    const first = setTimeout(() => void maintain(), 60_000);
    first.unref();
    timers.push(first);
  }

  let fleetBotIps = 0;
  const exchangeBotIps = async () => {
    const hook = opts.botIps!;
    try {
      await publishBotIps(ch, host, await hook.local());
      const ips = await pullFleetBotIps(ch);
      fleetBotIps = ips.length;
      hook.onFleetSet(ips);
    } catch (e) {
      log.warn({ err: (e as Error).message }, 'fleet: bot IP exchange failed; keeping the last fleet set');
    }
  };
  if (opts.botIps) {
    const t = setInterval(() => void exchangeBotIps(), opts.botIps.intervalMs ?? BOT_IPS.intervalMs);
    t.unref();
    timers.push(t);
  }
  const reportSource = new ClickHouseReportSource(ch);
  log.info({ role, clickhouse: target.display, host }, 'fleet: started');

  return {
    role,
    clickhouse: ch,
    writer,
    reportSource,
    edgeKeys: () => puller?.liveKeys() ?? [],
    keysChanged: () => publisher?.nudge(),
    policiesChanged: () => policyPublisher?.nudge(),
    async lidSecret(local) {
      if (!schemaReady) throw new Error('ClickHouse schema not ready');
      return agreeLidSecret(ch, local, host);
    },
    async publishBotIps(rows) {
      return publishBotIps(ch, host, rows);
    },
    async pullFleetBotIps() {
      const ips = await pullFleetBotIps(ch);
      fleetBotIps = ips.length;
      return ips;
    },
    registerMetrics(registry) {
      const s = () => writer.stats();
      new Gauge({
        name: 'ivtd_fleet_spool_batches',
        help: 'Rollup batches in the local spool, waiting for ClickHouse.',
        registers: [registry],
        collect() {
          this.set(s().spoolBatches);
        },
      });
      new Gauge({
        name: 'ivtd_fleet_spool_rows',
        help: 'Rollup rows in the local spool, waiting for ClickHouse.',
        registers: [registry],
        collect() {
          this.set(s().spoolRows);
        },
      });
      new Counter({
        name: 'ivtd_fleet_batches_delivered_total',
        help: 'Rollup batches delivered to ClickHouse (both tables).',
        registers: [registry],
        collect() {
          this.reset();
          this.inc(s().batchesDelivered);
        },
      });
      new Counter({
        name: 'ivtd_fleet_delivery_failures_total',
        help: 'Delivery attempts that failed (ClickHouse down, slow or refusing); the batch stays spooled.',
        registers: [registry],
        collect() {
          this.reset();
          this.inc(s().deliveryFailures);
        },
      });
      new Counter({
        name: 'ivtd_fleet_batches_found_on_retry_total',
        help: 'Batch inserts found already in ClickHouse when a retry asked (an acknowledgement was lost; not sent twice).',
        registers: [registry],
        collect() {
          this.reset();
          this.inc(s().foundOnRetry);
        },
      });
      new Gauge({
        name: 'ivtd_fleet_delivery_lag_seconds',
        help: 'Seconds since the spool was last empty while batches wait in it, else 0.',
        registers: [registry],
        collect() {
          const st = s();
          if (st.spoolBatches === 0) return this.set(0);
          const since = st.lastDeliveredAt ?? Date.now() - process.uptime() * 1000;
          this.set(Math.max(0, (Date.now() - since) / 1000));
        },
      });
      if (puller) {
        const p = puller;
        new Gauge({
          name: 'ivtd_fleet_key_set_version',
          help: 'Version of the fleet key set this edge serves (0: none yet).',
          registers: [registry],
          collect() {
            this.set(p.setVersion);
          },
        });
        new Gauge({
          name: 'ivtd_fleet_key_pull_age_seconds',
          help: 'Seconds since this edge last reached ClickHouse for keys (-1: never in this run).',
          registers: [registry],
          collect() {
            this.set(p.lastPullAt === null ? -1 : (Date.now() - p.lastPullAt) / 1000);
          },
        });
      }
      new Gauge({
        name: 'ivtd_fleet_bot_ips',
        help: `IPs in the fleet's bot-heavy set last pulled (at most ${BOT_IPS.fleetMax}).`,
        registers: [registry],
        collect() {
          this.set(fleetBotIps);
        },
      });
      new Gauge({
        name: 'ivtd_fleet_clickhouse_schema_ready',
        help: '1 once the ClickHouse schema was checked in this run, else 0 (retried every 5 s).',
        registers: [registry],
        collect() {
          this.set(schemaReady ? 1 : 0);
        },
      });
    },
    async close() {
      closed = true;
      wakeMigrate?.();
      for (const t of timers) clearInterval(t);
      publisher?.stop();
      puller?.stop();
      policyPublisher?.stop();
      policyPuller?.stop();
      await writer.close();
      // Closing the connection ends whatever still waits on ClickHouse (a pull, a publication).
      await ch.close();
      await Promise.all([writer.settled(), publisher?.settled(), puller?.settled(), policyPublisher?.settled(), policyPuller?.settled(), migrated]);
    },
  };
}
