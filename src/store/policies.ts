// Customers' policies in the store (src/policy/model.ts says what an entry may be; callers
// pass checked entries). Every change bumps the customer's policy version in the same
// transaction, which is how the server learns what to recompile.
import type { Action, EntryKind, Policy, PolicyEntry } from '../policy/model.ts';
import { inTransaction, type Queryable, type Store } from './db.ts';

export interface StoredPolicy extends Policy {
  version: number;
  updated_at: string | null;
}

const ENTRY_JSON_TYPE = `'[{"kind":"VARCHAR","value":"VARCHAR","action":"VARCHAR"}]'`;

/** A customer's policy; an empty one (default thresholds, no entries) when none was set. */
export async function readPolicy(q: Queryable, customerId: string): Promise<StoredPolicy> {
  const head = await q.one<{ medium: number | null; high: number | null; version: bigint; updated_at: Date }>(
    'SELECT medium, high, version, updated_at FROM policies WHERE customer_id = $1',
    [customerId],
  );
  const entries = await q.all<{ kind: EntryKind; value: string; action: Action }>(
    'SELECT kind, value, action FROM policy_entries WHERE customer_id = $1 ORDER BY kind, value',
    [customerId],
  );
  return {
    medium: head?.medium ?? null,
    high: head?.high ?? null,
    entries: entries.map((e) => ({ kind: e.kind, value: e.value, action: e.action })),
    version: head ? Number(head.version) : 0,
    updated_at: head ? head.updated_at.toISOString() : null,
  };
}

/** Every customer's policy version (what the server compares with what it compiled). */
export async function policyVersions(q: Queryable): Promise<Map<string, number>> {
  const rows = await q.all<{ customer_id: string; version: bigint }>('SELECT customer_id, version FROM policies');
  return new Map(rows.map((r) => [r.customer_id, Number(r.version)]));
}

async function bump(q: Queryable, customerId: string, t?: { medium: number | null; high: number | null }): Promise<void> {
  const now = Date.now();
  if (t) {
    await q.run(
      `INSERT INTO policies (customer_id, medium, high, version, updated_at) VALUES ($cid, $m, $h, 1, make_timestamp($now::BIGINT * 1000))
       ON CONFLICT (customer_id) DO UPDATE SET medium = $m, high = $h, version = policies.version + 1, updated_at = make_timestamp($now::BIGINT * 1000)`,
      { cid: customerId, m: t.medium, h: t.high, now },
    );
  } else {
    await q.run(
      `INSERT INTO policies (customer_id, medium, high, version, updated_at) VALUES ($cid, NULL, NULL, 1, make_timestamp($now::BIGINT * 1000))
       ON CONFLICT (customer_id) DO UPDATE SET version = policies.version + 1, updated_at = make_timestamp($now::BIGINT * 1000)`,
      { cid: customerId, now },
    );
  }
}

async function insertEntries(q: Queryable, customerId: string, entries: readonly PolicyEntry[]): Promise<void> {
  if (entries.length === 0) return;
  // One statement for the whole list: the entries travel as one JSON text.
  await q.run(
    `INSERT INTO policy_entries (customer_id, kind, value, action)
     SELECT $cid, e.kind, e.value, e.action FROM (SELECT unnest(from_json($j::JSON, ${ENTRY_JSON_TYPE})) AS e)
     ON CONFLICT (customer_id, kind, value) DO UPDATE SET action = excluded.action`,
    { cid: customerId, j: JSON.stringify(entries) },
  );
}

async function withTx<T>(q: Queryable | Store, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return 'tx' in q ? (q as Store).tx(fn) : inTransaction(q, () => fn(q));
}

/** Replaces the whole policy (thresholds and entries). */
export async function writePolicy(s: Queryable | Store, customerId: string, p: Policy): Promise<void> {
  await withTx(s, async (q) => {
    // Only the entries that go are deleted: DuckDB refuses to insert a key deleted earlier
    // in the same transaction ("duplicate key"), so the rest are updated in place.
    await q.run(
      `DELETE FROM policy_entries p WHERE p.customer_id = $cid AND NOT EXISTS (
         SELECT 1 FROM (SELECT unnest(from_json($j::JSON, ${ENTRY_JSON_TYPE})) AS e) x WHERE x.e.kind = p.kind AND x.e.value = p.value)`,
      { cid: customerId, j: JSON.stringify(p.entries) },
    );
    await insertEntries(q, customerId, p.entries);
    await bump(q, customerId, { medium: p.medium, high: p.high });
  });
}

/** Adds entries; an entry already there under the other action takes the new one. */
export async function addPolicyEntries(s: Queryable | Store, customerId: string, entries: readonly PolicyEntry[]): Promise<void> {
  await withTx(s, async (q) => {
    await insertEntries(q, customerId, entries);
    await bump(q, customerId);
  });
}

/** Removes entries by (kind, value); returns how many were there. */
export async function removePolicyEntries(s: Queryable | Store, customerId: string, entries: ReadonlyArray<{ kind: EntryKind; value: string }>): Promise<number> {
  return withTx(s, async (q) => {
    const before = await countEntries(q, customerId);
    if (entries.length > 0) {
      await q.run(
        `DELETE FROM policy_entries p USING (SELECT unnest(from_json($j::JSON, ${ENTRY_JSON_TYPE})) AS e) x
         WHERE p.customer_id = $cid AND p.kind = x.e.kind AND p.value = x.e.value`,
        { cid: customerId, j: JSON.stringify(entries.map((e) => ({ kind: e.kind, value: e.value, action: 'deny' }))) },
      );
    }
    await bump(q, customerId);
    return before - (await countEntries(q, customerId));
  });
}

export async function countEntries(q: Queryable, customerId: string): Promise<number> {
  const r = await q.one<{ n: bigint }>('SELECT count(*) AS n FROM policy_entries WHERE customer_id = $1', [customerId]);
  return Number(r?.n ?? 0);
}

/** Sets the thresholds only. */
export async function writeThresholds(s: Queryable | Store, customerId: string, t: { medium: number | null; high: number | null }): Promise<void> {
  await withTx(s, (q) => bump(q, customerId, t));
}
