// The lookup benchmark's policy phase: the cost of a customer's 100 000-entry allow/deny
// list on every lookup (docs/policy.md). In one run, with the same server, paths and
// client, saturation rounds alternate between no list and the list (set and cleared
// through the control socket); compared are the lookups/s and the mean in-thread lookup
// time (ivtd_lookup_duration_seconds sum / count). None of the entries matches the bench's
// requests, so every lookup runs every check to the end (IP ranges, hashed values, the
// whole UA through the substring automaton): the most a list costs.
import { sendControl } from '../src/provisioning/control.ts';
import type { PolicyEntry } from '../src/policy/model.ts';

/** `n` entries of every kind, none matching bench/requests.ts paths. */
export function bigPolicy(n: number): PolicyEntry[] {
  const out: PolicyEntry[] = [];
  const share = (f: number) => Math.floor(n * f);
  // IPv4 addresses in 100.64.0.0/10 and /24 blocks in 45.0.0.0/8 (the bench uses neither), some IPv6.
  for (let i = 0; i < share(0.3); i++) out.push({ kind: 'ip', value: `100.${64 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}`, action: i % 3 ? 'deny' : 'allow' });
  for (let i = 0; i < share(0.1); i++) out.push({ kind: 'ip', value: `45.${(i >> 8) & 255}.${i & 255}.0/24`, action: 'deny' });
  for (let i = 0; i < share(0.05); i++) out.push({ kind: 'ip', value: `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::/64`, action: 'deny' });
  for (let i = 0; i < share(0.2); i++) out.push({ kind: 'publisher', value: `blocked-pub-${i}`, action: 'deny' });
  for (let i = 0; i < share(0.1); i++) out.push({ kind: 'app', value: `com.blocked.app${i}`, action: 'deny' });
  for (let i = 0; i < share(0.1); i++) out.push({ kind: 'domain', value: `blocked-${i}.example`, action: 'deny' });
  for (let i = 0; i < share(0.1); i++) out.push({ kind: 'seller', value: `exchange${i % 50}.example:s${i}`, action: 'deny' });
  for (let i = 0; i < share(0.04); i++) out.push({ kind: 'ua', value: `ExactBot/${i} (+https://bot${i}.example)`, action: 'allow' });
  // UA substrings up to the per-customer character cap.
  for (let i = 0; out.length < n; i++) out.push({ kind: 'ua_substring', value: `crawler-${i}`, action: i % 2 ? 'allow' : 'deny' });
  return out;
}

/** Mean in-thread lookup time so far, from /metrics: [sum seconds, count]. */
export async function lookupTimeTotals(metricsPort: number): Promise<[number, number]> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const sum = Number(/^ivtd_lookup_duration_seconds_sum (\S+)/m.exec(text)?.[1] ?? NaN);
  const count = Number(/^ivtd_lookup_duration_seconds_count (\S+)/m.exec(text)?.[1] ?? NaN);
  return [sum, count];
}

export async function setPolicy(dataDir: string, partnerId: string, entries: PolicyEntry[]): Promise<void> {
  await sendControl(dataDir, 'policy.set', { customer: partnerId, policy: { entries } }, { timeoutMs: 120_000 });
}
