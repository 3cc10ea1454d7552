// Customers' policies across a fleet, the same path as the key set (./keys.ts). The full
// instance publishes a customer's whole policy as one row (JSON) under a new version when
// its version in the store changes (at once after a change, checked every 2 s). Edges ask
// ClickHouse every 2 s for customers whose newest version they have not taken, write those
// policies into their own DuckDB (so a restart while ClickHouse is away serves them), and
// the server's policy service compiles them from there like on any host.
import { log } from '../base/log.ts';
import { RefreshLoop } from '../base/refresh-loop.ts';
import { parsePolicy, type Policy } from '../policy/model.ts';
import type { Store } from '../store/db.ts';
import { policyVersions, readPolicy, writePolicy } from '../store/policies.ts';
import type { ClickHouse } from './clickhouse.ts';
import { sqlInt, sqlString } from './sql.ts';

export const POLICY_SYNC_INTERVAL_MS = 2000;

interface PolicyRow {
  customer_id: string;
  version: number;
  published_at: number;
  policy: string;
}

/** A RefreshLoop over `once`, and the log line of a failure, said once until it changes. */
abstract class Loop {
  private readonly loop: RefreshLoop;
  protected lastError = '';

  constructor(intervalMs: number) {
    this.loop = new RefreshLoop(() => this.once(), intervalMs);
  }

  protected abstract once(): Promise<void>;

  start(): void {
    this.loop.start();
  }

  nudge(): void {
    this.loop.nudge();
  }

  run(): Promise<void> {
    return this.loop.run();
  }

  protected failed(e: unknown, what: string): never {
    const msg = (e as Error).message;
    if (msg !== this.lastError) log.warn({ err: msg }, what);
    this.lastError = msg;
    throw e;
  }

  stop(): void {
    this.loop.stop();
  }

  async settled(): Promise<void> {
    await this.loop.settled();
  }
}

/** Full instance: publishes each customer's policy when its version in the store changed. */
export class PolicyPublisher extends Loop {
  /** Store version last published, per customer. */
  private readonly published = new Map<string, number>();
  private lastVersion = 0;

  constructor(
    private readonly ch: ClickHouse,
    private readonly store: Store,
    intervalMs = POLICY_SYNC_INTERVAL_MS,
  ) {
    super(intervalMs);
  }

  protected async once(): Promise<void> {
    try {
      const versions = await policyVersions(this.store);
      for (const [customerId, v] of versions) {
        if (this.published.get(customerId) === v) continue;
        const p = await readPolicy(this.store, customerId);
        if (this.lastVersion === 0) {
          const r = await this.ch.rows<{ v: string }>('SELECT max(version) AS v FROM customer_policies', 'policy version');
          this.lastVersion = Number(r[0]?.v ?? 0);
        }
        const version = Math.max(Date.now(), this.lastVersion + 1);
        const body: Policy = { medium: p.medium, high: p.high, entries: p.entries };
        const row: PolicyRow = { customer_id: customerId, version, published_at: Math.floor(Date.now() / 1000), policy: JSON.stringify(body) };
        await this.ch.insert('customer_policies', [row]);
        this.lastVersion = version;
        this.published.set(customerId, v);
        log.info({ customer: customerId, version, entries: p.entries.length }, 'fleet: policy published');
      }
      if (this.lastError) log.info('fleet: policy publication works again');
      this.lastError = '';
    } catch (e) {
      this.failed(e, 'fleet: could not publish a policy; retrying every 2 s');
    }
  }
}

/** Edge: takes newer policies from ClickHouse into its own store, then calls onChange. */
export class PolicyPuller extends Loop {
  /** ClickHouse version taken, per customer (empty after a restart: everything is taken once). */
  private readonly taken = new Map<string, number>();

  constructor(
    private readonly ch: ClickHouse,
    private readonly store: Store,
    private readonly onChange: () => void,
    intervalMs = POLICY_SYNC_INTERVAL_MS,
  ) {
    super(intervalMs);
  }

  protected async once(): Promise<void> {
    let changed = false;
    try {
      const heads = await this.ch.rows<{ customer_id: string; v: string }>(
        'SELECT customer_id, max(version) AS v FROM customer_policies GROUP BY customer_id',
        'policy versions',
      );
      for (const h of heads) {
        const v = Number(h.v);
        if (this.taken.get(h.customer_id) === v) continue;
        const rows = await this.ch.rows<{ policy: string }>(
          `SELECT policy FROM customer_policies WHERE customer_id = ${sqlString(h.customer_id)} AND version = ${sqlInt(v)} LIMIT 1`,
          'policy',
        );
        if (rows.length === 0) continue;
        let p: Policy;
        try {
          // Checked again: an edge compiles only what the rules allow.
          p = parsePolicy(JSON.parse(rows[0]!.policy));
        } catch (e) {
          log.error({ customer: h.customer_id, version: v, err: (e as Error).message }, 'fleet: a published policy is not valid; keeping the last one');
          this.taken.set(h.customer_id, v);
          continue;
        }
        await writePolicy(this.store, h.customer_id, p);
        this.taken.set(h.customer_id, v);
        changed = true;
        log.info({ customer: h.customer_id, version: v, entries: p.entries.length }, 'fleet: policy pulled');
      }
      if (this.lastError) log.info('fleet: policy pulls work again');
      this.lastError = '';
    } catch (e) {
      this.failed(e, 'fleet: could not pull policies; serving the last ones known');
    } finally {
      if (changed) this.onChange();
    }
  }
}
