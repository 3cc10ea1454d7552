// Policies in DuckDB: replacing a list with itself (DuckDB refuses to re-insert a key
// deleted in the same transaction, so writePolicy must not delete what stays), adding,
// removing, and a version that grows with every change.
import t from 'tap';
import { Store } from '../../src/store/db.ts';
import { addPolicyEntries, policyVersions, readPolicy, removePolicyEntries, writePolicy } from '../../src/store/policies.ts';

t.test('write, rewrite, add, remove', async (t) => {
  const s = await Store.open(t.testdir());
  t.teardown(() => s.close());
  const list = (n: number, action: 'allow' | 'deny') => Array.from({ length: n }, (_, i) => ({ kind: 'publisher' as const, value: `p${i}`, action }));
  await writePolicy(s, 'c1', { medium: 0.2, high: null, entries: list(20_000, 'deny') });
  await writePolicy(s, 'c1', { medium: 0.2, high: null, entries: list(20_000, 'allow') });
  let p = await readPolicy(s, 'c1');
  t.equal(p.entries.length, 20_000, 'the same keys written again');
  t.ok(p.entries.every((e) => e.action === 'allow'), 'with the new action');
  t.equal(p.medium, 0.2);
  await writePolicy(s, 'c1', { medium: null, high: null, entries: list(3, 'deny') });
  p = await readPolicy(s, 'c1');
  t.same(p.entries.map((e) => e.value), ['p0', 'p1', 'p2'], 'shrunk');
  await addPolicyEntries(s, 'c1', [{ kind: 'ua', value: "it's \"quoted\", ünïcode", action: 'allow' }, { kind: 'publisher', value: 'p0', action: 'allow' }]);
  p = await readPolicy(s, 'c1');
  t.equal(p.entries.length, 4);
  t.equal(p.entries.find((e) => e.value === 'p0')!.action, 'allow', 'add changes the action of an entry already there');
  t.ok(p.entries.some((e) => e.value === "it's \"quoted\", ünïcode"), 'text kept as given');
  t.equal(await removePolicyEntries(s, 'c1', [{ kind: 'publisher', value: 'p1' }, { kind: 'publisher', value: 'nope' }]), 1);
  t.same((await readPolicy(s, 'c2')).entries, [], "another customer's policy is empty");
  const v = await policyVersions(s);
  t.equal(v.get('c1'), 5, 'one version per change');
  t.notOk(v.has('c2'));
});

t.test('a 100 000-entry list is written (twice) within the smallest DuckDB memory limit', async (t) => {
  const s = await Store.open(t.testdir());
  t.teardown(() => s.close());
  await s.run("SET memory_limit = '48MB'"); // STORE_MIN_MB: what the default budget gives DuckDB
  const entries = Array.from({ length: 100_000 }, (_, i) => ({ kind: 'ua_substring' as const, value: `some fairly long user agent fragment number ${i}`, action: 'deny' as const }));
  await writePolicy(s, 'c', { medium: null, high: null, entries });
  await writePolicy(s, 'c', { medium: null, high: null, entries: entries.map((e, i) => (i % 2 ? { ...e, action: 'allow' as const } : e)) });
  const p = await readPolicy(s, 'c');
  t.equal(p.entries.length, 100_000);
  t.equal(p.entries.filter((e) => e.action === 'allow').length, 50_000);
});
