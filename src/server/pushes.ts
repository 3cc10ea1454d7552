// Keys and policies, from the store (a fleet edge: its keys from ClickHouse) to the lookup
// threads, the main thread's engine and the fleet: pushed when they change (the API, the
// dashboard, the CLI or a fleet pull says so), and checked every 5 s.
import type { Fleet } from '../fleet/fleet.ts';
import { log } from '../base/log.ts';
import { CoalescedRun } from '../base/refresh-loop.ts';
import type { LookupServer } from './lookup-threads.ts';
import type { LookupEngine } from '../prebid/pipeline.ts';
import { PolicyService, type PolicyUpdate } from '../policy/service.ts';
import { activePrebidKeys, type KeySet, type LiveKey } from '../store/api-keys.ts';
import type { Store } from '../store/db.ts';
import { policyVersions, readPolicy } from '../store/policies.ts';

export class Pushes {
  /** Customers' policies: compiled once each into shared memory, within the budget's policy share. */
  readonly policies: PolicyService;
  /** The main thread's engine, once the data is in: it follows the threads. */
  private engine: LookupEngine | null = null;
  /** The key set last pushed; a push replaces each thread's key table and empties its memo. */
  private pushed: LiveKey[] = [];
  private pushedFingerprint = '';

  constructor(
    private readonly store: Store,
    private readonly lookups: LookupServer,
    private readonly fleet: Fleet | null,
    policyBytes: number,
    uaSeed: number,
  ) {
    const source = { versions: () => policyVersions(store), read: (customerId: string) => readPolicy(store, customerId) };
    this.policies = new PolicyService(source, policyBytes, (updates: PolicyUpdate[]) => {
      const inForce = lookups.pushPolicies(updates);
      this.engine?.policies.apply(updates);
      fleet?.policiesChanged();
      return inForce;
    }, uaSeed);
  }

  /**
   * A fleet edge serves the keys pulled from ClickHouse; every other host its store's. `known`:
   * false on an edge that has no key set yet (its lookup threads then answer 503).
   */
  private async readKeys(): Promise<KeySet> {
    if (this.fleet?.role === 'edge') return { keys: this.fleet.edgeKeys(), known: this.fleet.edgeKeysKnown() };
    return { keys: await activePrebidKeys(this.store), known: true };
  }

  /** The start's keys, for the threads' first key table. */
  async firstKeys(): Promise<KeySet> {
    const set = await this.readKeys();
    this.pushed = set.keys;
    this.pushedFingerprint = JSON.stringify(set);
    return set;
  }

  /** The main thread's engine takes the keys and policies the threads have, and follows them from now on. */
  attach(engine: LookupEngine): void {
    engine.keys.replace(this.pushed);
    engine.policies.apply(this.policies.all());
    this.engine = engine;
  }

  /** Pushes the live key set when it changed (expiry itself is checked per lookup). */
  refreshKeys(): Promise<void> {
    return this.keyRefresh.run();
  }

  /** One key refresh at a time: two reads in flight could otherwise push the older set last. */
  private readonly keyRefresh = new CoalescedRun(() => this.refreshKeysOnce());

  private async refreshKeysOnce(): Promise<void> {
    const set = await this.readKeys();
    const fingerprint = JSON.stringify(set);
    if (fingerprint === this.pushedFingerprint) return;
    this.pushedFingerprint = fingerprint;
    this.pushed = set.keys;
    this.engine?.keys.replace(set.keys);
    await this.lookups.pushKeys(set.keys, set.known);
  }

  /** Fire-and-forget key refresh for hooks (CLI, dashboard rotation, timer); failures are logged. */
  readonly refreshKeysSoon = (): void => {
    this.refreshKeys().catch((e: Error) => log.error({ err: e.message }, 'key refresh failed'));
    this.fleet?.keysChanged();
  };

  /** The same, awaited: resolves once every lookup thread has the keys (a rotation's answer waits for it). */
  readonly refreshKeysNow = async (): Promise<void> => {
    this.fleet?.keysChanged();
    await this.refreshKeys();
  };

  readonly refreshPoliciesSoon = (): void => {
    this.policies.refresh().catch((e: Error) => log.error({ err: e.message }, 'policy refresh failed'));
  };

  /** Every 5 s: drops keys whose grace period ended, picks up policy changes made elsewhere. Returns its stop. */
  startTimer(): () => void {
    const timer = setInterval(() => {
      this.refreshKeysSoon();
      this.refreshPoliciesSoon();
    }, 5000);
    timer.unref();
    return () => clearInterval(timer);
  }
}
