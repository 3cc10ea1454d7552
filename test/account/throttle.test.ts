// Login throttling: the counting rules with a fake clock, then 429 + Retry-After over HTTP.
import t from 'tap';
import {
  ADDRESS_FAILURES_ALLOWED,
  FAILURE_WINDOW_MS,
  FIRST_LOCK_MS,
  FailureThrottle,
  LoginThrottle,
  MAX_LOCK_MS,
  USER_FAILURES_ALLOWED,
  addressKey,
} from '../../src/account/login-throttle.ts';
import { startTestServer } from '../helpers/server.ts';
import { call } from './client.ts';

t.test('locks after the allowance, doubles the lock per later failure, forgets after a quiet window', async (t) => {
  let now = 1_000_000;
  const th = new FailureThrottle(3, () => now);
  th.fail('k');
  th.fail('k');
  t.equal(th.retryAfterMs('k'), 0, 'two failures are free');
  th.fail('k');
  t.equal(th.retryAfterMs('k'), FIRST_LOCK_MS, 'third locks');
  t.equal(th.retryAfterMs('other'), 0, 'other keys are not affected');
  now += FIRST_LOCK_MS;
  t.equal(th.retryAfterMs('k'), 0, 'lock over');
  th.fail('k');
  t.equal(th.retryAfterMs('k'), 2 * FIRST_LOCK_MS, 'doubled');
  now += 2 * FIRST_LOCK_MS;
  th.fail('k');
  t.equal(th.retryAfterMs('k'), 4 * FIRST_LOCK_MS, 'doubled again');
  for (let i = 0; i < 20; i++) {
    now += th.retryAfterMs('k'); // the attacker waits out each lock, then fails again
    th.fail('k');
  }
  t.equal(th.retryAfterMs('k'), MAX_LOCK_MS, 'capped');
  now += MAX_LOCK_MS + FAILURE_WINDOW_MS + 1;
  t.equal(th.retryAfterMs('k'), 0);
  th.fail('k');
  t.equal(th.retryAfterMs('k'), 0, 'counting starts over after a quiet window');
  th.clear('k');
  th.fail('k');
  th.fail('k');
  t.equal(th.retryAfterMs('k'), 0, 'clear() forgets');
});

t.test('LoginThrottle: per username (any case) and per address', async (t) => {
  let now = 5_000_000;
  const lt = new LoginThrottle(() => now);
  for (let i = 0; i < USER_FAILURES_ALLOWED; i++) lt.failed('Alice', '192.0.2.1');
  t.equal(lt.retryAfter('alice', '198.51.100.7'), FIRST_LOCK_MS / 1000, 'username locked from any address');
  t.equal(lt.retryAfter('bob', '192.0.2.1'), 0, 'address still below its allowance');
  lt.succeeded('ALICE');
  t.equal(lt.retryAfter('alice', '198.51.100.7'), 0, 'success clears the username');
  for (let i = 0; i < ADDRESS_FAILURES_ALLOWED; i++) lt.failed(`user${i}`, '2001:db8:1:2::5');
  t.ok(lt.retryAfter('someone-new', '2001:db8:1:2:ffff::9') > 0, 'same /64 is the same address');
  t.equal(lt.retryAfter('someone-new', '2001:db8:1:3::9'), 0, 'another /64 is not');
  t.equal(addressKey('::ffff:192.0.2.1'), '192.0.2.1');
});

t.test('over HTTP: 429 with Retry-After, even for the right password', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const { username, password } = srv.customer;
  for (let i = 0; i < USER_FAILURES_ALLOWED; i++) {
    const r = await call(srv.api, 'POST', '/login', { form: { username, password: `guess-${i}` } });
    t.equal(r.status, 401, `failure ${i + 1}`);
  }
  const locked = await call(srv.api, 'POST', '/login', { form: { username, password } });
  t.equal(locked.status, 429);
  t.equal(locked.body.error, 'rate_limited');
  const wait = Number(locked.headers.get('retry-after'));
  t.ok(wait > 0 && wait <= FIRST_LOCK_MS / 1000, `Retry-After ${wait}`);

  // The client address has its own, larger allowance: unknown usernames all count toward it.
  for (let i = USER_FAILURES_ALLOWED; i < ADDRESS_FAILURES_ALLOWED; i++) {
    const r = await call(srv.api, 'POST', '/login', { form: { username: `stranger${i}`, password: 'whatever-1' } });
    t.equal(r.status, 401);
  }
  const byAddress = await call(srv.api, 'POST', '/login', { form: { username: 'fresh-name', password: 'whatever-1' } });
  t.equal(byAddress.status, 429, 'address locked');
  t.ok(Number(byAddress.headers.get('retry-after')) > 0);
});
