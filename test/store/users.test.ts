import t from 'tap';
import { createCustomer } from '../../src/store/customers.ts';
import { findUserForLogin } from '../../src/store/logins.ts';
import { verifyPassword } from '../../src/base/secrets.ts';
import { addUser, getUser, setPassword, setUserDisabled } from '../../src/store/users.ts';
import { openStore } from '../helpers/store.ts';

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
