// Changing a customer's policy, the same way from the account API, the dashboard and the
// CLI (directly on the store, or through a running server's control socket): check the
// input (PolicyError names the field), check the caps and, in a server, that the compiled
// policy fits the memory budget's policy share (413), write the store, then hand the
// compiled policy to the lookup threads at once. A customer's changes run one at a time
// (each reads the policy, writes it and installs what it computed: side by side they would
// conflict in the store, and the last install could miss another's entries).
import type { Store } from '../store/db.ts';
import { oneAtATime, retryConflicts } from '../store/serial.ts';
import { addPolicyEntries, policyVersions, readPolicy, removePolicyEntries, writePolicy, writeThresholds, type StoredPolicy } from '../store/policies.ts';
import { checkCaps, entryKey, parseEntries, parsePolicy, parseThresholds, PolicyError, type Policy, type PolicyEntry } from './model.ts';
import type { PolicyService } from './service.ts';

async function commit(store: Store, service: PolicyService | null, customerId: string, next: Policy, write: () => Promise<void>): Promise<void> {
  checkCaps(next.entries);
  const compiled = service?.admit(customerId, next);
  await retryConflicts(write);
  if (service && compiled) {
    const version = (await policyVersions(store)).get(customerId) ?? 0;
    await service.install(customerId, version, compiled);
  }
}

/** A change of customerId's policy, after its earlier ones have settled. */
function inTurn<T>(store: Store, customerId: string, fn: () => Promise<T>): Promise<T> {
  return oneAtATime(store, `policy ${customerId}`, fn);
}

export function getPolicy(store: Store, customerId: string): Promise<StoredPolicy> {
  return readPolicy(store, customerId);
}

/** Replaces the whole policy with `body` ({medium, high, entries}). */
export async function setPolicy(store: Store, service: PolicyService | null, customerId: string, body: unknown): Promise<{ entries: number }> {
  const p = parsePolicy(body);
  await inTurn(store, customerId, () => commit(store, service, customerId, p, () => writePolicy(store, customerId, p)));
  return { entries: p.entries.length };
}

/** Sets the thresholds only ({medium, high}; null = the default). */
export async function setThresholds(store: Store, service: PolicyService | null, customerId: string, body: Record<string, unknown>): Promise<void> {
  const t = parseThresholds(body);
  await inTurn(store, customerId, async () => {
    const current = await readPolicy(store, customerId);
    await commit(store, service, customerId, { ...t, entries: current.entries }, () => writeThresholds(store, customerId, t));
  });
}

/** Adds (or changes the action of) entries; returns the policy's size after. */
export async function addEntries(store: Store, service: PolicyService | null, customerId: string, raw: unknown): Promise<{ added: number; entries: number }> {
  const add = parseEntries(raw, 'entries');
  return inTurn(store, customerId, async () => {
    const current = await readPolicy(store, customerId);
    const merged = new Map<string, PolicyEntry>(current.entries.map((e) => [entryKey(e), e]));
    let added = 0;
    for (const e of add) {
      if (!merged.has(entryKey(e))) added++;
      merged.set(entryKey(e), e);
    }
    const next: Policy = { medium: current.medium, high: current.high, entries: [...merged.values()] };
    await commit(store, service, customerId, next, () => addPolicyEntries(store, customerId, add));
    return { added, entries: next.entries.length };
  });
}

/** Removes entries by kind and value (the action may be left out); returns how many went. */
export async function removeEntries(store: Store, service: PolicyService | null, customerId: string, raw: unknown): Promise<{ removed: number; entries: number }> {
  const gone = parseEntries(raw, 'entries', { actionOptional: true });
  return inTurn(store, customerId, async () => {
    const current = await readPolicy(store, customerId);
    const drop = new Set(gone.map(entryKey));
    const next: Policy = { medium: current.medium, high: current.high, entries: current.entries.filter((e) => !drop.has(entryKey(e))) };
    let removed = 0;
    await commit(store, service, customerId, next, async () => {
      removed = await removePolicyEntries(store, customerId, gone);
    });
    return { removed, entries: next.entries.length };
  });
}

export { PolicyError };
