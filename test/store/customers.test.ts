import t, { type Test } from 'tap';
import { Store } from '../../src/store/db.ts';
import {
  StoreError,
  activePrebidKeys,
  addUser,
  createCustomer,
  ensureFirstCustomer,
  findCustomer,
  findUserForLogin,
  getUser,
  listCustomers,
  rotateKey,
  setPassword,
  setUserDisabled,
  verifyReportingKey,
} from '../../src/store/customers.ts';
import {
  DUMMY_PASSWORD_HASH,
  hashKey,
  hashPassword,
  newKey,
  verifyPassword,
  verifyPasswordOrDummy,
} from '../../src/store/secrets.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function openStore(t: Test): Promise<Store> {
  const store = await Store.open(t.testdir());
  t.teardown(() => store.close());
  return store;
}

async function rejectsWith(t: Test, p: Promise<unknown>, code: string, msg: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  t.ok(e instanceof StoreError, `rejects with StoreError (${code})`);
  t.equal((e as StoreError).code, code);
  t.match((e as StoreError).message, msg);
}

t.test('secrets: keys and password hashes', async (t) => {
  const p = newKey('prebid');
  const r = newKey('reporting');
  t.match(p, /^ivp_[A-Za-z0-9_-]{32}$/);
  t.match(r, /^ivr_[A-Za-z0-9_-]{32}$/);
  t.not(newKey('prebid'), p, 'keys are random');
  t.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'sha256 hex');

  const h = await hashPassword('correct horse');
  t.match(h, /^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
  t.not(await hashPassword('correct horse'), h, 'salted');
  t.equal(await verifyPassword('correct horse', h), true);
  t.equal(await verifyPassword('correct horsE', h), false);
  t.equal(await verifyPassword('correct horse', 'garbage'), false, 'unreadable hash is a mismatch');
  t.equal(await verifyPassword('x', 'scrypt$99999999$8$1$AA==$AA=='), false, 'absurd parameters are refused');
  t.equal(await verifyPassword('anything', DUMMY_PASSWORD_HASH), false);
  t.equal(await verifyPasswordOrDummy('correct horse', h), true);
  t.equal(await verifyPasswordOrDummy('correct horse', undefined), false);
});

t.test('createCustomer stores hashes and returns the keys once', async (t) => {
  const store = await openStore(t);
  const c = await createCustomer(store, { name: 'Acme', username: 'ops@acme.example', password: 'pa55word!' });
  t.match(c.customer_id, UUID_RE);
  t.match(c.partner_id, UUID_RE);
  t.not(c.customer_id, c.partner_id);
  t.match(c.prebid_key, /^ivp_/);
  t.match(c.reporting_key, /^ivr_/);
  t.equal(c.username, 'ops@acme.example');

  const keyRows = await store.all<{ key_hash: string; key_prefix: string; kind: string }>(
    'SELECT key_hash, key_prefix, kind FROM api_keys ORDER BY kind',
  );
  t.same(
    keyRows.map((k) => k.key_hash),
    [hashKey(c.prebid_key), hashKey(c.reporting_key)],
    'only hashes are stored',
  );
  t.equal(keyRows[0]!.key_prefix, c.prebid_key.slice(0, 8));
  const dump = JSON.stringify(await store.all('SELECT * FROM api_keys')) + JSON.stringify(await store.all('SELECT * FROM users'));
  t.notMatch(dump, c.prebid_key.slice(4), 'no plaintext key in the database');
  t.notMatch(dump, 'pa55word!', 'no plaintext password in the database');

  const login = await findUserForLogin(store, 'OPS@acme.example');
  t.ok(login, 'login lookup ignores case');
  t.equal(login!.customer_id, c.customer_id);
  t.equal(login!.disabled, false);
  t.equal(await verifyPassword('pa55word!', login!.password_hash), true);
  const user = await getUser(store, login!.user_id);
  t.equal(user?.username, 'ops@acme.example');
  t.equal(await getUser(store, 'nope'), undefined);
  t.equal(await findUserForLogin(store, 'nobody'), undefined);

  for (const ref of [c.customer_id, c.partner_id, c.partner_id.toUpperCase(), 'Ops@Acme.example']) {
    t.equal((await findCustomer(store, ref))?.customer_id, c.customer_id, `findCustomer(${ref})`);
  }
  t.equal(await findCustomer(store, 'nobody'), undefined);

  const [listed] = await listCustomers(store);
  t.equal(listed?.name, 'Acme');
  t.same(listed?.users, [{ username: 'ops@acme.example', disabled: false }]);
  t.same(
    listed?.keys.map((k) => [k.kind, k.key_prefix, k.expires_at]),
    [
      ['prebid', c.prebid_key.slice(0, 8), null],
      ['reporting', c.reporting_key.slice(0, 8), null],
    ],
  );
  t.notMatch(JSON.stringify(listed), /key_hash|password/, 'listing carries no secrets');
});

t.test('validation and conflicts', async (t) => {
  const store = await openStore(t);
  await createCustomer(store, { name: 'A', username: 'alice', password: 'password1' });
  await rejectsWith(t, createCustomer(store, { name: 'B', username: 'ALICE', password: 'password1' }), 'conflict', /already taken/);
  t.equal((await listCustomers(store)).length, 1, 'a failed create leaves no half-made customer');
  await rejectsWith(t, createCustomer(store, { name: 'B', username: 'al', password: 'password1' }), 'invalid', /3 to 64/);
  await rejectsWith(t, createCustomer(store, { name: 'B', username: 'a b c', password: 'password1' }), 'invalid', /username/);
  await rejectsWith(t, createCustomer(store, { name: 'B', username: 'bob', password: 'short' }), 'invalid', /at least 8/);
  await rejectsWith(t, createCustomer(store, { name: 'B', username: 'bob', password: 'x'.repeat(1025) }), 'invalid', /at most 1024/);
  await rejectsWith(t, createCustomer(store, { name: '', username: 'bob', password: 'password1' }), 'invalid', /name/);
  await rejectsWith(t, createCustomer(store, { name: 'x'.repeat(201), username: 'bob', password: 'password1' }), 'invalid', /name/);
  await rejectsWith(t, addUser(store, { customer: 'ghost', username: 'bob', password: 'password1' }), 'not_found', /ghost/);
  await rejectsWith(t, addUser(store, { customer: 'alice', username: 'Alice', password: 'password1' }), 'conflict', /taken/);
  await rejectsWith(t, setPassword(store, { username: 'ghost', password: 'password1' }), 'not_found', /ghost/);
  await rejectsWith(t, setUserDisabled(store, { username: 'ghost', disabled: true }), 'not_found', /ghost/);
  await rejectsWith(t, rotateKey(store, { customer: 'ghost', kind: 'prebid', graceSeconds: 0 }), 'not_found', /ghost/);
  await rejectsWith(t, rotateKey(store, { customer: 'alice', kind: 'x' as 'prebid', graceSeconds: 0 }), 'invalid', /kind/);
  await rejectsWith(t, rotateKey(store, { customer: 'alice', kind: 'prebid', graceSeconds: -1 }), 'invalid', /grace/);
});

t.test('users: add, change password, disable', async (t) => {
  const store = await openStore(t);
  const c = await createCustomer(store, { name: 'A', username: 'alice', password: 'password1' });
  const u = await addUser(store, { customer: c.partner_id, username: 'bob', password: 'bobspassword' });
  t.equal(u.customer_id, c.customer_id);
  t.equal(u.username, 'bob');

  const before = await getUser(store, u.user_id);
  await setPassword(store, { username: 'BOB', password: 'new-password' });
  const login = await findUserForLogin(store, 'bob');
  t.equal(await verifyPassword('new-password', login!.password_hash), true);
  t.equal(await verifyPassword('bobspassword', login!.password_hash), false);
  const after = await getUser(store, u.user_id);
  t.ok(after!.updated_at >= before!.updated_at, 'updated_at moves forward');

  t.same(await setUserDisabled(store, { username: 'Bob', disabled: true }), { username: 'bob', disabled: true });
  t.equal((await findUserForLogin(store, 'bob'))!.disabled, true);
  t.equal((await getUser(store, u.user_id))!.disabled, true);
  await setUserDisabled(store, { username: 'bob', disabled: false });
  t.equal((await findUserForLogin(store, 'bob'))!.disabled, false);
  t.equal((await findUserForLogin(store, 'alice'))!.disabled, false, 'other users untouched');
});

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

t.test('ensureFirstCustomer creates an admin once', async (t) => {
  const store = await openStore(t);
  const first = await ensureFirstCustomer(store);
  t.ok(first);
  t.equal(first!.username, 'admin');
  t.match(first!.password, /^[A-Za-z0-9]{20}$/);
  const login = await findUserForLogin(store, 'admin');
  t.equal(await verifyPassword(first!.password, login!.password_hash), true);
  t.equal((await listCustomers(store))[0]?.name, 'default');
  t.equal(await ensureFirstCustomer(store), null, 'second call does nothing');
  t.equal((await listCustomers(store)).length, 1);
});
