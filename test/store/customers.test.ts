import t from 'tap';
import { addUser, setPassword, setUserDisabled, getUser } from '../../src/store/users.ts';
import { rotateKey } from '../../src/store/api-keys.ts';
import { findCustomer } from '../../src/store/customer-ref.ts';
import { createCustomer, ensureFirstCustomer, listCustomers } from '../../src/store/customers.ts';
import { findUserForLogin } from '../../src/store/logins.ts';
import { hashKey, verifyPassword } from '../../src/base/secrets.ts';
import { openStore, rejectsWith } from '../helpers/store.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

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

t.test('usernames created at the same time: one wins, in any case, and the other is told it is taken', async (t) => {
  const store = await openStore(t);
  for (let round = 0; round < 4; round++) {
    const name = `race${round}`;
    // The same name in two cases, and the same name twice: DuckDB's UNIQUE sees only the
    // second, and a lost race there must still read as a conflict, not an internal error.
    const results = await Promise.allSettled([
      createCustomer(store, { name: 'A', username: name, password: 'password1' }),
      createCustomer(store, { name: 'B', username: name.toUpperCase(), password: 'password1' }),
      addUser(store, { customer: 'alice-missing', username: name, password: 'password1' }).catch(() => 'no customer'),
      createCustomer(store, { name: 'C', username: name, password: 'password1' }),
    ]);
    const created = [results[0], results[1], results[3]].filter((r) => r.status === 'fulfilled');
    t.equal(created.length, 1, `${name}: one of three creates wins`);
    for (const r of [results[0], results[1], results[3]]) {
      if (r.status === 'rejected') t.match(r.reason, { code: 'conflict', message: /already taken/ }, `${name}: the others are conflicts`);
    }
    const users = (await listCustomers(store)).flatMap((c) => c.users.map((u) => u.username.toLowerCase()));
    t.equal(users.filter((u) => u === name).length, 1, `${name}: stored once, whatever the case`);
  }
  const first = await createCustomer(store, { name: 'Owner', username: 'owner', password: 'password1' });
  const adds = await Promise.allSettled(['dup-user', 'DUP-USER', 'Dup-User'].map((username) => addUser(store, { customer: first.customer_id, username, password: 'password1' })));
  t.equal(adds.filter((r) => r.status === 'fulfilled').length, 1, 'one of three addUser calls wins');
  for (const r of adds) if (r.status === 'rejected') t.match(r.reason, { code: 'conflict' });
});

t.test('customer names are text a person can read; messages quote what was sent, clipped', async (t) => {
  const store = await openStore(t);
  for (const name of ['Ünïcode GmbH', 'شرکت‌نمونه', '株式会社サンプル', 'Acme 🚀']) {
    t.ok(await createCustomer(store, { name, username: `u${Buffer.from(name).toString('hex').slice(0, 20)}`, password: 'password1' }), `${JSON.stringify(name)} is a name`);
  }
  for (const name of ['bad\ud800name', 'evil\u202egnp.exe', 'two\u2028lines', '\u200b', ' \u0301\u0301', 'x\ufffdy', 'no\uffffchar']) {
    await rejectsWith(t, createCustomer(store, { name, username: 'bobby', password: 'password1' }), 'invalid', /name must be/);
  }
  const long = 'z'.repeat(10_000);
  for (const p of [setUserDisabled(store, { username: long, disabled: true }), addUser(store, { customer: long, username: 'carol', password: 'password1' })]) {
    const e = await p.then(() => undefined, (err: Error) => err);
    t.ok(e && e.message.length < 200, `the message quotes the input clipped (${e?.message.length} characters)`);
  }
});
