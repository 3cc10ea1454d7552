// The main thread's side of customers' policies: compiles each customer's policy once into
// shared memory, keeps all of them inside the memory budget's policy share, and hands the
// buffers to the lookup threads (src/server/lookup-threads.ts) and the explain engine. It learns
// of changes at once from the account API and the control socket, and by comparing
// versions every few seconds (the source: the store, or a fleet edge's copy from ClickHouse).
import { log } from '../base/log.ts';
import { CoalescedRun } from '../base/refresh-loop.ts';
import { compilePolicy, type CompiledPolicy } from './compiled.ts';
import { PolicyError, type Policy } from './model.ts';

/** One customer's compiled policy for the lookup threads; null buffer = the customer has none. */
export interface PolicyUpdate {
  customerId: string;
  buffer: SharedArrayBuffer | null;
}

export interface PolicySource {
  versions(): Promise<Map<string, number>>;
  read(customerId: string): Promise<Policy>;
}

export class PolicyService {
  private readonly compiled = new Map<string, { version: number; policy: CompiledPolicy }>();
  /** Versions refused for the budget, so each is logged once. */
  private readonly refused = new Map<string, number>();
  /** One recompile at a time; one asked for meanwhile runs after it. */
  private readonly refreshes = new CoalescedRun(() => this.doRefresh());

  constructor(
    private readonly source: PolicySource,
    /** The memory budget's policy share: all customers' compiled policies together. */
    readonly budgetBytes: number,
    /** Hands updates to the lookup threads; resolves once they are in force there. */
    private readonly push: (updates: PolicyUpdate[]) => Promise<void>,
    /** The lookup threads' UA cache seed (exact-UA entries are keyed by its hash). */
    private readonly uaSeed: number,
  ) {}

  /** Bytes the compiled policies take now. */
  get bytes(): number {
    let n = 0;
    for (const c of this.compiled.values()) n += c.policy.bytes;
    return n;
  }

  get customers(): number {
    return this.compiled.size;
  }

  /** Every compiled policy (what a new lookup thread starts with). */
  all(): PolicyUpdate[] {
    return [...this.compiled].map(([customerId, c]) => ({ customerId, buffer: c.policy.buffer }));
  }

  /**
   * Compiles `policy` for `customerId` and checks it fits the policy share beside the
   * others; throws PolicyError (413) when it does not. Nothing is installed yet.
   */
  admit(customerId: string, policy: Policy): CompiledPolicy {
    const c = compilePolicy(policy, this.uaSeed);
    const others = this.bytes - (this.compiled.get(customerId)?.policy.bytes ?? 0);
    if (others + c.bytes > this.budgetBytes) {
      throw new PolicyError(
        'entries',
        `This policy compiles to ${c.bytes} bytes; with the other customers' policies that is past the ${this.budgetBytes} bytes the memory budget gives policies (docs/memory.md). Remove entries, or raise --memory-budget.`,
        true,
      );
    }
    return c;
  }

  /** Installs a compiled policy at `version` and pushes it to the threads now; resolves once it is in force there. */
  async install(customerId: string, version: number, policy: CompiledPolicy): Promise<void> {
    const had = this.compiled.get(customerId);
    if (had && had.version > version) return;
    this.compiled.set(customerId, { version, policy });
    await this.push([{ customerId, buffer: policy.buffer }]);
  }

  /** Recompiles every customer whose version changed; pushes what changed. One at a time. */
  refresh(): Promise<void> {
    return this.refreshes.run();
  }

  private async doRefresh(): Promise<void> {
    const versions = await this.source.versions();
    const updates: PolicyUpdate[] = [];
    for (const customerId of [...this.compiled.keys()]) {
      if (!versions.has(customerId)) {
        this.compiled.delete(customerId);
        updates.push({ customerId, buffer: null });
      }
    }
    for (const [customerId, version] of versions) {
      if (this.compiled.get(customerId)?.version === version || this.refused.get(customerId) === version) continue;
      const p = await this.source.read(customerId);
      if (p.entries.length === 0 && p.medium === null && p.high === null) {
        if (this.compiled.delete(customerId)) updates.push({ customerId, buffer: null });
        continue;
      }
      try {
        const c = this.admit(customerId, p);
        this.compiled.set(customerId, { version, policy: c });
        updates.push({ customerId, buffer: c.buffer });
      } catch (e) {
        // Set while no server ran, or the budget shrank: keep what the threads have.
        this.refused.set(customerId, version);
        log.error({ customer: customerId, err: (e as Error).message }, 'policy not loaded');
      }
    }
    if (updates.length > 0) await this.push(updates);
  }
}
