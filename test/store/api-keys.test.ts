import t from 'tap';
import { activePrebidKeys, rotateKey, verifyReportingKey } from '../../src/store/api-keys.ts';
import { createCustomer, listCustomers } from '../../src/store/customers.ts';
import { hashKey } from '../../src/base/secrets.ts';
import { openStore } from '../helpers/store.ts';

t.test('key rotation with and without grace', async (t) => {
  const store = await openStore(t);
  const a = await createCustomer(store, { name: 'A', username: 'alice', password: 'password1' });
  const b = await createCustomer(store, { name: 'B', username: 'bob', password: 'password1' });

  let keys = await activePrebidKeys(store);
  t.same(
    keys.map((k) => [k.customer_id, k.partner_id, k.key_hash, k.expires_at_ms]).sort(),
    [
      [a.customer_id, a.partner_id, hashKey(a.prebid_key), null],
      [b.customer_id, b.partner_id, hashKey(b.prebid_key), null],
    ].sort(),
  );

  const start = Date.now();
  const r1 = await rotateKey(store, { customer: a.customer_id, kind: 'prebid', graceSeconds: 3600 });
  t.equal(r1.customer_id, a.customer_id);
  t.equal(r1.kind, 'prebid');
  t.match(r1.key, /^ivp_/);
  const graceEnd = Date.parse(r1.previous_expires_at!);
  t.ok(graceEnd >= start + 3600_000 && graceEnd <= Date.now() + 3600_000, 'old key expires an hour from now');

  keys = await activePrebidKeys(store);
  const mine = keys.filter((k) => k.customer_id === a.customer_id);
  t.equal(mine.length, 2, 'old key still listed during grace');
  t.equal(mine.find((k) => k.key_hash === hashKey(a.prebid_key))?.expires_at_ms, graceEnd);
  t.equal(mine.find((k) => k.key_hash === hashKey(r1.key))?.expires_at_ms, null, 'new key is current');

  // Rotating again with no grace revokes both the current key and the one still in grace.
  const r2 = await rotateKey(store, { customer: 'alice', kind: 'prebid', graceSeconds: 0 });
  keys = await activePrebidKeys(store);
  t.same(
    keys.filter((k) => k.customer_id === a.customer_id).map((k) => k.key_hash),
    [hashKey(r2.key)],
    'grace 0: only the newest key works',
  );
  t.ok(keys.some((k) => k.key_hash === hashKey(b.prebid_key)), "other customers' keys untouched");

  // Reporting keys rotate independently.
  t.equal(await verifyReportingKey(store, a.customer_id, a.reporting_key), true);
  t.equal(await verifyReportingKey(store, b.customer_id, a.reporting_key), false, 'key of another customer');
  t.equal(await verifyReportingKey(store, a.customer_id, a.prebid_key), false, 'prebid key is not a reporting key');
  t.equal(await verifyReportingKey(store, a.customer_id, ''), false);
  const r3 = await rotateKey(store, { customer: a.partner_id, kind: 'reporting', graceSeconds: 0 });
  t.equal(await verifyReportingKey(store, a.customer_id, a.reporting_key), false, 'rotated out at once');
  t.equal(await verifyReportingKey(store, a.customer_id, r3.key), true);

  const r4 = await rotateKey(store, { customer: a.partner_id, kind: 'reporting', graceSeconds: 60 });
  t.equal(await verifyReportingKey(store, a.customer_id, r3.key), true, 'in grace');
  t.equal(await verifyReportingKey(store, a.customer_id, r4.key), true);
  // A grace that has run out: move the expiry into the past instead of sleeping.
  await store.run("UPDATE api_keys SET expires_at = epoch_ms($1::BIGINT) WHERE key_hash = $2", [Date.now() - 1, hashKey(r3.key)]);
  t.equal(await verifyReportingKey(store, a.customer_id, r3.key), false, 'after grace');

  const listed = (await listCustomers(store)).find((c) => c.customer_id === a.customer_id)!;
  t.same(
    listed.keys.map((k) => [k.kind, k.key_prefix]),
    [
      ['prebid', r2.key.slice(0, 8)],
      ['reporting', r4.key.slice(0, 8)],
    ],
    'listing shows live keys only',
  );
});

t.test('rotations of one customer sent at once by its different references all succeed, one after another', async (t) => {
  const store = await openStore(t);
  const a = await createCustomer(store, { name: 'A', username: 'alice', password: 'password1' });
  const refs = [a.customer_id, a.partner_id, 'alice', 'ALICE', a.customer_id, 'Alice'];
  const rotated = await Promise.all(refs.map((customer) => rotateKey(store, { customer, kind: 'prebid', graceSeconds: 0 })));
  t.equal(new Set(rotated.map((r) => r.key)).size, refs.length, 'each got its own new key');
  const live = (await activePrebidKeys(store)).filter((k) => k.customer_id === a.customer_id);
  t.equal(live.length, 1, 'and only one of them works: each revoked the one before');
  t.ok(rotated.some((r) => hashKey(r.key) === live[0]!.key_hash), 'one of the new keys');
});
