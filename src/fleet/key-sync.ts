// Pre-bid keys across a fleet. The full instance owns customers and keys (DuckDB) and
// publishes the live key set to ClickHouse whenever it changes: one INSERT per version,
// hashes only. Edges pull the newest version every PULL_INTERVAL_MS (a change is honoured
// within 5 s: publication is immediate, the pull at most 2 s later, the push to the lookup
// threads at once) and keep the last set they pulled in their own DuckDB, so an edge that
// restarts while ClickHouse is away serves the keys it knew.
import { log } from '../base/log.ts';
import { RefreshLoop } from '../base/refresh-loop.ts';
import type { LiveKey } from '../store/api-keys.ts';
import type { Store } from '../store/db.ts';
import type { ClickHouse } from './clickhouse.ts';
import { sqlInt } from './sql.ts';

/** How often the publisher compares the live set with the last published one. */
export const PUBLISH_INTERVAL_MS = 2000;
/** How often an edge asks ClickHouse for a newer key set. */
export const PULL_INTERVAL_MS = 2000;
/** Versions older than this (and not the newest) are deleted by the publisher. */
export const KEEP_VERSIONS_MS = 86_400_000;

interface KeyRow {
  version: number;
  published_at: number;
  customer_id: string;
  partner_id: string;
  key_hash: string;
  expires_at_ms: number;
}

function fingerprint(keys: readonly LiveKey[]): string {
  return JSON.stringify([...keys].sort((a, b) => (a.key_hash < b.key_hash ? -1 : a.key_hash > b.key_hash ? 1 : 0)));
}

/** The live set at `now`: keys without an end, or ending later. */
export function liveAt(keys: readonly LiveKey[], now: number): LiveKey[] {
  return keys.filter((k) => k.expires_at_ms === null || k.expires_at_ms > now);
}

/** Full instance: publishes the live key set to ClickHouse when it differs from the last one published. */
export class KeyPublisher {
  private published = '';
  private version = 0;
  /** The version being published; reused by a retry so a repeated INSERT adds no new version. */
  private pendingVersion = 0;
  private pendingPrint = '';
  private readonly loop: RefreshLoop;
  private lastCleanup = 0;
  private lastError = '';

  constructor(
    private readonly ch: ClickHouse,
    private readonly read: () => Promise<LiveKey[]>,
    intervalMs = PUBLISH_INTERVAL_MS,
  ) {
    this.loop = new RefreshLoop(() => this.publishOnce(), intervalMs);
  }

  /** Publishes now, then checks every interval. */
  start(): void {
    this.loop.start();
  }

  /** Publishes soon (after a key change); failures are logged and retried by the timer. */
  nudge(): void {
    this.loop.nudge();
  }

  /** Resolves when the live set is published (or was already); rejects when ClickHouse refused. */
  publishIfChanged(): Promise<void> {
    return this.loop.run();
  }

  private async publishOnce(): Promise<void> {
    const keys = await this.read();
    const print = fingerprint(keys);
    if (print === this.published) return;
    try {
      if (this.pendingPrint !== print || this.pendingVersion === 0) {
        if (this.version === 0) {
          const r = await this.ch.rows<{ v: string }>('SELECT max(version) AS v FROM prebid_keys', 'key set version');
          this.version = Number(r[0]?.v ?? 0);
        }
        this.pendingVersion = Math.max(Date.now(), this.version + 1);
        this.pendingPrint = print;
      }
      const version = this.pendingVersion;
      const at = Math.floor(Date.now() / 1000);
      const rows: KeyRow[] = [{ version, published_at: at, customer_id: '', partner_id: '', key_hash: '', expires_at_ms: 0 }];
      for (const k of keys) {
        rows.push({ version, published_at: at, customer_id: k.customer_id, partner_id: k.partner_id, key_hash: k.key_hash, expires_at_ms: k.expires_at_ms ?? 0 });
      }
      await this.ch.insert('prebid_keys', rows);
      this.version = version;
      this.pendingVersion = 0;
      this.published = print;
      if (this.lastError) log.info('fleet: key publication works again');
      this.lastError = '';
      log.info({ version, keys: keys.length }, 'fleet: pre-bid key set published');
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.lastError) log.warn({ err: msg }, 'fleet: could not publish the key set; retrying every 2 s');
      this.lastError = msg;
      throw e;
    }
    await this.cleanup();
  }

  /** Deletes versions older than KEEP_VERSIONS_MS, at most hourly (an ALTER … DELETE mutation). */
  private async cleanup(): Promise<void> {
    if (Date.now() - this.lastCleanup < 3_600_000) return;
    this.lastCleanup = Date.now();
    const cutoff = Math.min(this.version, Date.now() - KEEP_VERSIONS_MS);
    await this.ch.command(`ALTER TABLE prebid_keys DELETE WHERE version < ${sqlInt(cutoff)}`, 'key set cleanup').catch((e: Error) => {
      log.warn({ err: e.message }, 'fleet: old key set versions not deleted; will try again');
    });
  }

  stop(): void {
    this.loop.stop();
  }

  /** Resolves when a publication in progress has ended. */
  async settled(): Promise<void> {
    await this.loop.settled();
  }
}

/** Edge: the fleet's key set, pulled from ClickHouse and kept in the edge's DuckDB. */
export class KeyPuller {
  private keys: LiveKey[] = [];
  private version = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<boolean> | null = null;
  private lastError = '';
  /** Epoch ms of the last pull that reached ClickHouse (changed or not); null before. */
  lastPullAt: number | null = null;

  constructor(
    private readonly ch: ClickHouse,
    private readonly store: Store,
    private readonly onChange: () => void,
    private readonly intervalMs = PULL_INTERVAL_MS,
  ) {}

  /** Loads the set kept by an earlier run; returns how many keys it holds (null: never pulled). */
  async loadLocal(): Promise<number | null> {
    const rows = await this.store.all<{ version: bigint; customer_id: string; partner_id: string; key_hash: string; expires_at_ms: bigint | null }>(
      'SELECT version, customer_id, partner_id, key_hash, expires_at_ms FROM fleet_keys',
    );
    if (rows.length === 0) return null;
    this.version = Number(rows[0]!.version);
    this.keys = rows
      .filter((r) => r.key_hash !== '')
      .map((r) => ({ customer_id: r.customer_id, partner_id: r.partner_id, key_hash: r.key_hash, expires_at_ms: r.expires_at_ms === null ? null : Number(r.expires_at_ms) }));
    return this.keys.length;
  }

  /** The live keys of the newest set known (pulled now or kept from before). */
  liveKeys(now = Date.now()): LiveKey[] {
    return liveAt(this.keys, now);
  }

  get setVersion(): number {
    return this.version;
  }

  start(): void {
    this.timer = setInterval(() => {
      void this.pull().catch(() => undefined);
    }, this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Asks ClickHouse for a newer set; resolves true when one was taken (and kept locally). */
  pull(): Promise<boolean> {
    if (this.running) return this.running;
    const run = this.pullOnce().finally(() => {
      this.running = null;
    });
    this.running = run;
    return run;
  }

  private async pullOnce(): Promise<boolean> {
    let changed = false;
    try {
      const head = await this.ch.rows<{ v: string }>('SELECT max(version) AS v FROM prebid_keys', 'key set version');
      const newest = Number(head[0]?.v ?? 0);
      this.lastPullAt = Date.now();
      if (newest > this.version) {
        const rows = await this.ch.rows<{ customer_id: string; partner_id: string; key_hash: string; expires_at_ms: string }>(
          `SELECT customer_id, partner_id, key_hash, expires_at_ms FROM prebid_keys WHERE version = ${sqlInt(newest)} AND key_hash != ''`,
          'key set',
        );
        // A retried publication may have stored a version twice: one entry per hash.
        const byHash = new Map<string, LiveKey>();
        for (const r of rows) {
          const end = Number(r.expires_at_ms);
          byHash.set(r.key_hash, { customer_id: r.customer_id, partner_id: r.partner_id, key_hash: r.key_hash, expires_at_ms: end === 0 ? null : end });
        }
        const keys = [...byHash.values()];
        await this.keep(newest, keys);
        this.version = newest;
        this.keys = keys;
        changed = true;
        log.info({ version: newest, keys: keys.length }, 'fleet: pre-bid key set pulled');
      }
      if (this.lastError) log.info('fleet: key pulls work again');
      this.lastError = '';
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.lastError) log.warn({ err: msg, keys: this.keys.length, version: this.version }, 'fleet: could not pull the key set; serving the last one known');
      this.lastError = msg;
      throw e;
    }
    if (changed) this.onChange();
    return changed;
  }

  /** Replaces the kept set in one transaction (a header row keeps the version of an empty set). */
  private async keep(version: number, keys: readonly LiveKey[]): Promise<void> {
    await this.store.tx(async (q) => {
      await q.run('DELETE FROM fleet_keys');
      const rows: Array<[string, string, string, number | null]> = [['', '', '', null]];
      for (const k of keys) rows.push([k.customer_id, k.partner_id, k.key_hash, k.expires_at_ms]);
      for (let i = 0; i < rows.length; i += 200) {
        const chunk = rows.slice(i, i + 200);
        const params: Array<string | number | null> = [];
        const values = chunk.map((r) => {
          params.push(version, ...r);
          const n = params.length;
          return `($${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}, $${n})`;
        });
        await q.run(`INSERT INTO fleet_keys (version, customer_id, partner_id, key_hash, expires_at_ms) VALUES ${values.join(', ')}`, params);
      }
    });
  }

  async settled(): Promise<void> {
    await this.running?.catch(() => undefined);
  }
}
