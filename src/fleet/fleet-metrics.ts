// The fleet's gauges and counters on /metrics: the spool and its deliveries, an edge's key
// set, the fleet's bot IPs, the ClickHouse schema. Read from their owners at scrape time.
import { Counter, Gauge, type Registry } from 'prom-client';
import { BOT_IPS } from './bot-ips.ts';
import type { KeyPuller } from './key-sync.ts';
import type { FleetWriter } from './spool.ts';
import type { SeenLidExchange } from './seen-lid-exchange.ts';
import type { ActivityExchange } from './activity.ts';

export interface FleetFigures {
  writer: FleetWriter;
  /** The impressions' writer (its own spool, fleet_imp_spool). */
  impWriter?: FleetWriter;
  /** Role edge: the key puller (else null: no key set gauges). */
  puller: KeyPuller | null;
  fleetBotIps(): number;
  schemaReady(): boolean;
  /** The exchange of first sights of lids (replays across hosts), when beacons run. */
  seenLids?: SeenLidExchange | null;
  /** The activity exchange (fleet-wide activity per key). */
  activity?: ActivityExchange | null;
}

/** Counters whose values are read from their owners at scrape time. */
function countersFrom(registry: Registry, counters: Array<[string, string, () => number]>): void {
  for (const [name, help, value] of counters) {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(value());
      },
    });
  }
}

export function registerFleetMetrics(registry: Registry, f: FleetFigures): void {
  const s = () => f.writer.stats();
  const seen = f.seenLids;
  if (seen) {
    const counters: Array<[string, string, () => number]> = [
      ['ivtd_fleet_seen_lids_remembered_total', "Lids other hosts saw first, written into this host's seen-lids table (their next beacon here is a replay).", () => seen.remembered],
      ['ivtd_fleet_seen_lids_dropped_total', 'First sights not published because a period had more than the per-host bound (a replay of one on another host passes as valid).', () => seen.dropped],
      ['ivtd_fleet_seen_lid_exchange_failures_total', 'Seen-lid exchanges with ClickHouse that failed (retried every period): replays across hosts wait meanwhile.', () => seen.failures],
    ];
    countersFrom(registry, counters);
  }
  const act = f.activity;
  if (act) {
    const counters: Array<[string, string, () => number]> = [
      ['ivtd_fleet_activity_rows_sent_total', "Rows of this host's activity per key published to ClickHouse.", () => act.rowsSent],
      ['ivtd_fleet_activity_bytes_sent_total', "Bytes of those rows (JSONEachRow bodies).", () => act.bytesSent],
      ['ivtd_fleet_activity_rows_received_total', "Keys of the fleet's view pulled from ClickHouse.", () => act.rowsReceived],
      ['ivtd_fleet_activity_failures_total', 'Activity exchanges that failed (ClickHouse down, slow or refusing): lookups meanwhile score on local history alone.', () => act.failures],
      ['ivtd_fleet_activity_rows_dropped_total', 'Rows of failed publications dropped (past the backlog bound, or older than the window by the time ClickHouse was back).', () => act.rowsDropped],
    ];
    countersFrom(registry, counters);
    const gauges: Array<[string, string, () => number]> = [
      ['ivtd_fleet_activity_age_seconds', "Seconds since the fleet's activity view was last pulled (-1: never in this run).", () => (act.lastPullAt === 0 ? -1 : (Date.now() - act.lastPullAt) / 1000)],
      ['ivtd_fleet_activity_view_keys', "Keys in the fleet's activity view the lookup threads read (0: local history alone).", () => act.viewKeys],
      ['ivtd_fleet_activity_up', '1 while the activity exchange works, else 0.', () => (act.state === 'up' ? 1 : 0)],
      ['ivtd_fleet_activity_pull_seconds', "Duration of the last pull of the fleet's view.", () => act.lastPullMs / 1000],
      ['ivtd_fleet_activity_compute_seconds', "Duration of the last computation of the fleet's view by this host (the full instance; an edge when it is away).", () => act.lastComputeMs / 1000],
    ];
    for (const [name, help, value] of gauges) {
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(value());
        },
      });
    }
  }
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
    name: 'ivtd_fleet_spool_dropped_batches_total',
    help: 'Spooled rollup batches (lookups and impressions) dropped because their stored text was not rows (a damaged spool); logged at level 50.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(s().droppedBatches + (f.impWriter?.stats().droppedBatches ?? 0));
    },
  });
  new Counter({
    name: 'ivtd_fleet_spool_dropped_rows_total',
    help: 'Rollup rows in the spooled batches dropped as unreadable (lookups and impressions).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(s().droppedRows + (f.impWriter?.stats().droppedRows ?? 0));
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
  if (f.impWriter) {
    const w = f.impWriter;
    new Gauge({
      name: 'ivtd_fleet_imp_spool_batches',
      help: "Impression rollup batches in the local spool (fleet_imp_spool), waiting for ClickHouse.",
      registers: [registry],
      collect() {
        this.set(w.stats().spoolBatches);
      },
    });
    new Gauge({
      name: 'ivtd_fleet_imp_delivery_lag_seconds',
      help: "Seconds since the impressions' spool was last empty while batches wait in it, else 0.",
      registers: [registry],
      collect() {
        const st = w.stats();
        if (st.spoolBatches === 0) return this.set(0);
        const since = st.lastDeliveredAt ?? Date.now() - process.uptime() * 1000;
        this.set(Math.max(0, (Date.now() - since) / 1000));
      },
    });
  }
  if (f.puller) {
    const p = f.puller;
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
      this.set(f.fleetBotIps());
    },
  });
  new Gauge({
    name: 'ivtd_fleet_clickhouse_schema_ready',
    help: '1 once the ClickHouse schema was checked in this run, else 0 (retried every 5 s).',
    registers: [registry],
    collect() {
      this.set(f.schemaReady() ? 1 : 0);
    },
  });
}
