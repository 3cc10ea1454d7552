// Customers' policies in the store (src/policy/model.ts says what an entry may be; callers
// pass checked entries). Every change bumps the customer's policy version in the same
// transaction, which is how the server learns what to recompile.
import { entryKey, type Action, type EntryKind, type Policy, type PolicyEntry } from '../base/policy-entry.ts';
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

/** Rows per statement: each chunk travels as one JSON text, small enough for DuckDB's memory limit. */
const CHUNK = 5000;

async function insertEntries(q: Queryable, customerId: string, entries: readonly PolicyEntry[]): Promise<void> {
  for (let i = 0; i < entries.length; i += CHUNK) {
    await q.run(
      `INSERT INTO policy_entries (customer_id, kind, value, action)
       SELECT $cid, e.kind, e.value, e.action FROM (SELECT unnest(from_json($j::JSON, ${ENTRY_JSON_TYPE})) AS e)
       ON CONFLICT (customer_id, kind, value) DO UPDATE SET action = excluded.action`,
      { cid: customerId, j: JSON.stringify(entries.slice(i, i + CHUNK)) },
    );
  }
}

async function deleteEntries(q: Queryable, customerId: string, entries: ReadonlyArray<{ kind: EntryKind; value: string }>): Promise<void> {
  for (let i = 0; i < entries.length; i += CHUNK) {
    const chunk = entries.slice(i, i + CHUNK).map((e) => ({ kind: e.kind, value: e.value, action: 'deny' }));
    await q.run(
      `DELETE FROM policy_entries p USING (SELECT unnest(from_json($j::JSON, ${ENTRY_JSON_TYPE})) AS e) x
       WHERE p.customer_id = $cid AND p.kind = x.e.kind AND p.value = x.e.value`,
      { cid: customerId, j: JSON.stringify(chunk) },
    );
  }
}

async function withTx<T>(q: Queryable | Store, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return 'tx' in q ? (q as Store).tx(fn) : inTransaction(q, () => fn(q));
}

/** Replaces the whole policy (thresholds and entries). */
export async function writePolicy(s: Queryable | Store, customerId: string, p: Policy): Promise<void> {
  await withTx(s, async (q) => {
    // Only what changes is written: DuckDB refuses to insert a key deleted earlier in the
    // same transaction ("duplicate key"), so entries that stay are never deleted.
    const now = new Map((await readPolicy(q, customerId)).entries.map((e) => [entryKey(e), e.action]));
    const next = new Set(p.entries.map(entryKey));
    const gone = [...now.keys()].filter((k) => !next.has(k)).map(fromKey);
    await deleteEntries(q, customerId, gone);
    await insertEntries(q, customerId, p.entries.filter((e) => now.get(entryKey(e)) !== e.action));
    await bump(q, customerId, { medium: p.medium, high: p.high });
  });
}

function fromKey(k: string): { kind: EntryKind; value: string } {
  const i = k.indexOf('\u0000');
  return { kind: k.slice(0, i) as EntryKind, value: k.slice(i + 1) };
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
    await deleteEntries(q, customerId, entries);
    const removed = before - (await countEntries(q, customerId));
    // Removing what is not there changes nothing: the version (and "changed" time) stay.
    if (removed > 0) await bump(q, customerId);
    return removed;
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
