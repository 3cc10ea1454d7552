// Login throttling: the counting rules with a fake clock, the caps on checks in flight, the
// queue for a check (fair across addresses, clean attempts first, bounded), then over HTTP:
// 429 + Retry-After, concurrent bursts that cannot pass the allowance, a username locked
// from one address still usable from another, and the owner's login during a flood.
import t from 'tap';
import { request } from 'node:http';
import {
  ADDRESS_FAILURES_ALLOWED,
  ADDRESS_QUEUE,
  FAILURE_WINDOW_MS,
  FIRST_LOCK_MS,
  FailureThrottle,
  LoginThrottle,
  MAX_LOCK_MS,
  USER_FAILURES_ALLOWED,
  addressKey,
  globalInFlight,
  type Admission,
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

t.test('refund takes back a failure counted ahead, and the lock it set', async (t) => {
  let now = 2_000_000;
  const th = new FailureThrottle(3, () => now);
  th.fail('k');
  th.fail('k');
  th.fail('k');
  t.equal(th.retryAfterMs('k'), FIRST_LOCK_MS, 'locked at the third');
  th.refund('k');
  t.equal(th.retryAfterMs('k'), 0, 'the third was a success after all: not locked');
  th.fail('k');
  t.equal(th.retryAfterMs('k'), FIRST_LOCK_MS, 'three real failures lock');
  now += FIRST_LOCK_MS;
  th.fail('k');
  th.refund('k');
  t.equal(th.retryAfterMs('k'), 2 * FIRST_LOCK_MS, 'at the allowance a refund leaves the lock (the cautious side)');
  th.refund('unknown');
  t.equal(th.retryAfterMs('unknown'), 0);
});

/** Admits or throws: for the unit tests below. */
function admitted(a: Admission) {
  if (!a.ok) throw new Error(`refused: ${a.reason}`);
  return a.attempt;
}

t.test('LoginThrottle: counted before the check; locks per (username, address) and per address', async (t) => {
  let now = 5_000_000;
  const lt = new LoginThrottle({ now: () => now, userInFlight: 100, addressInFlight: 100, globalInFlight: 100 });
  // Five attempts admitted at once (none finished): the sixth is refused already.
  const burst = Array.from({ length: USER_FAILURES_ALLOWED }, () => admitted(lt.begin('Alice', '192.0.2.1')));
  t.match(lt.begin('alice', '192.0.2.1'), { ok: false, reason: 'locked', retryAfter: FIRST_LOCK_MS / 1000 }, 'the sixth, while five are in flight');
  t.equal(lt.checking, USER_FAILURES_ALLOWED);
  for (const a of burst) a.failed();
  t.equal(lt.checking, 0);
  t.match(lt.begin('ALICE', '192.0.2.1'), { ok: false, reason: 'locked' }, 'any case of the username');
  const elsewhere = lt.begin('alice', '198.51.100.7');
  t.ok(elsewhere.ok, 'the same username from another address is not locked');
  admitted(elsewhere).succeeded();
  t.match(lt.begin('alice', '192.0.2.1'), { ok: false, reason: 'locked' }, 'and a success elsewhere does not unlock the first address');

  // A success clears its pair: four failures, then the right password, then five more allowed.
  now += MAX_LOCK_MS + FAILURE_WINDOW_MS + 1;
  for (let i = 0; i < USER_FAILURES_ALLOWED - 1; i++) admitted(lt.begin('bob', '192.0.2.9')).failed();
  admitted(lt.begin('bob', '192.0.2.9')).succeeded();
  for (let i = 0; i < USER_FAILURES_ALLOWED; i++) admitted(lt.begin('bob', '192.0.2.9')).failed();
  t.match(lt.begin('bob', '192.0.2.9'), { ok: false, reason: 'locked' });

  for (let i = 0; i < ADDRESS_FAILURES_ALLOWED; i++) admitted(lt.begin(`user${i}`, '2001:db8:1:2::5')).failed();
  t.match(lt.begin('someone-new', '2001:db8:1:2:ffff::9'), { ok: false, reason: 'locked' }, 'same /64 is the same address');
  t.ok(lt.begin('someone-new', '2001:db8:1:3::9').ok, 'another /64 is not');
  t.equal(addressKey('::ffff:192.0.2.1'), '192.0.2.1');
});

t.test('LoginThrottle: checks in flight are capped per username, per address and in all', async (t) => {
  const lt = new LoginThrottle({ userInFlight: 1, addressInFlight: 2, globalInFlight: 3 });
  const a = admitted(lt.begin('u1', '192.0.2.1'));
  t.match(lt.begin('U1', '192.0.2.2'), { ok: false, reason: 'busy', retryAfter: 1 }, 'one check per username at a time, from anywhere');
  const b = admitted(lt.begin('u2', '192.0.2.1'));
  t.match(lt.begin('u3', '192.0.2.1'), { ok: false, reason: 'busy' }, 'two per address');
  const c = admitted(lt.begin('u3', '192.0.2.2'));
  t.match(lt.begin('u4', '192.0.2.3'), { ok: false, reason: 'busy' }, 'three in all');
  t.equal(lt.checking, 3);
  a.failed();
  a.failed(); // a second report of the same attempt changes nothing
  t.equal(lt.checking, 2);
  const d = admitted(lt.begin('u4', '192.0.2.3'));
  t.match(lt.begin('u5', '192.0.2.4'), { ok: false, reason: 'busy' }, 'still three in all');
  for (const x of [b, c, d]) x.succeeded();
  t.equal(lt.checking, 0);
  // A refusal for being busy is not counted against the username: it can still use its whole allowance.
  for (let i = 0; i < 10; i++) {
    const held = admitted(lt.begin('patient', '192.0.2.50'));
    t.equal(lt.begin('patient', '192.0.2.50').ok, false);
    held.succeeded();
  }
  for (let i = 0; i < USER_FAILURES_ALLOWED; i++) admitted(lt.begin('patient', '192.0.2.50')).failed();
  t.match(lt.begin('patient', '192.0.2.50'), { ok: false, reason: 'locked' });
  t.equal(globalInFlight(4), 2, "half of libuv's default pool");
  t.equal(globalInFlight(1), 1);
  t.equal(globalInFlight(16), 8);
});

/** POST /login from a given loopback source address (127.0.0.0/8 is all this host's). */
function loginFrom(port: number, from: string, username: string, password: string): Promise<{ status: number; retryAfter: string | undefined; body: any }> {
  const body = new URLSearchParams({ username, password }).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/login', method: 'POST', localAddress: from, agent: false, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, body: JSON.parse(text || 'null') }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const tally = (rs: Array<{ status: number }>) => rs.reduce<Record<number, number>>((m, r) => ({ ...m, [r.status]: (m[r.status] ?? 0) + 1 }), {});

t.test('over HTTP: 429 with Retry-After, even for the right password; the address has its own allowance', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = srv.server.ports.api;
  const { username, password } = srv.customer;
  for (let i = 0; i < USER_FAILURES_ALLOWED; i++) {
    const r = await loginFrom(port, '127.0.0.11', username, `guess-${i}`);
    t.equal(r.status, 401, `failure ${i + 1}`);
  }
  const locked = await loginFrom(port, '127.0.0.11', username, password);
  t.equal(locked.status, 429);
  t.match(locked.body, { error: 'rate_limited', message: /^Too many failed logins; try again in \d+ seconds\.$/ });
  const wait = Number(locked.retryAfter);
  t.ok(wait > 0 && wait <= FIRST_LOCK_MS / 1000, `Retry-After ${wait}`);

  // The client address has its own, larger allowance: unknown usernames all count toward it.
  for (let i = USER_FAILURES_ALLOWED; i < ADDRESS_FAILURES_ALLOWED; i++) {
    const r = await loginFrom(port, '127.0.0.11', `stranger${i}`, 'whatever-1');
    t.equal(r.status, 401);
  }
  const byAddress = await loginFrom(port, '127.0.0.11', 'fresh-name', 'whatever-1');
  t.equal(byAddress.status, 429, 'address locked');
  t.ok(Number(byAddress.retryAfter) > 0);
});

t.test('over HTTP: nobody can lock a username out from another address', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = srv.server.ports.api;
  const { username, password } = srv.customer;
  for (let i = 0; i < USER_FAILURES_ALLOWED + 3; i++) await loginFrom(port, '127.0.0.21', username, `guess-${i}`);
  t.equal((await loginFrom(port, '127.0.0.21', username, password)).status, 429, "the guesser's address is locked for this username");
  const owner = await loginFrom(port, '127.0.0.22', username, password);
  t.equal(owner.status, 200, 'the owner, from their own address, logs in');
  t.match(owner.body, { access_token: String, refresh_token: String });
});

t.test('over HTTP: a concurrent burst cannot pass the allowance (attempts are counted before the check)', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = srv.server.ports.api;
  const { username, password } = srv.customer;

  // One username from one address: at most USER_FAILURES_ALLOWED passwords are ever checked.
  const one = await Promise.all(Array.from({ length: 30 }, (_, i) => loginFrom(port, '127.0.0.31', username, `burst-${i}`)));
  const t1 = tally(one);
  t.ok((t1[401] ?? 0) >= 1 && (t1[401] ?? 0) <= USER_FAILURES_ALLOWED, `at most ${USER_FAILURES_ALLOWED} checked (401): ${JSON.stringify(t1)}`);
  t.equal((t1[401] ?? 0) + (t1[429] ?? 0), 30, 'the others refused with 429');
  t.ok(one.filter((r) => r.status === 429).every((r) => Number(r.retryAfter) >= 1), 'each 429 says when to come back');

  // Many usernames from one address: at most ADDRESS_FAILURES_ALLOWED checked, however fast they come.
  const many = await Promise.all(Array.from({ length: 60 }, (_, i) => loginFrom(port, '127.0.0.32', `sprayed-${i}`, 'Winter2026!')));
  const t2 = tally(many);
  t.ok((t2[401] ?? 0) >= 1 && (t2[401] ?? 0) <= ADDRESS_FAILURES_ALLOWED, `at most ${ADDRESS_FAILURES_ALLOWED} checked: ${JSON.stringify(t2)}`);
  t.equal((t2[401] ?? 0) + (t2[429] ?? 0), 60);

  // Many addresses at once, all wrong: past the global cap they wait their turn rather than
  // being refused, so each address gets its check; the owner still logs in afterwards.
  // (Twice the global cap: a loaded machine still checks them all within the wait.)
  const spread = await Promise.all(Array.from({ length: 4 }, (_, i) => loginFrom(port, `127.0.1.${i + 1}`, `spread-${i}`, 'x-password')));
  t.same(tally(spread), { 401: 4 }, 'every address had its password checked');
  t.equal((await loginFrom(port, '127.0.0.33', username, password)).status, 200, 'the owner logs in from elsewhere');
});

/** Whether a promise has settled yet (after the microtasks queued so far). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

t.test('LoginThrottle: an attempt refused as busy counts against its address', async (t) => {
  const lt = new LoginThrottle({ globalInFlight: 1 });
  const held = admitted(lt.begin('someone', '192.0.2.200'));
  for (let i = 0; i < ADDRESS_FAILURES_ALLOWED; i++) t.match(lt.begin(`u${i}`, '192.0.2.77'), { ok: false, reason: 'busy' });
  // IPv6: every address of one /64 counts as one.
  for (let i = 0; i < ADDRESS_FAILURES_ALLOWED; i++) t.match(lt.begin(`v${i}`, `2001:db8:5:5::${(i + 1).toString(16)}`), { ok: false, reason: 'busy' });
  held.succeeded();
  t.match(lt.begin('fresh', '192.0.2.77'), { ok: false, reason: 'locked' }, 'the flooding address locked itself out');
  t.match(lt.begin('fresh', '2001:db8:5:5:abcd::9'), { ok: false, reason: 'locked' }, 'and so did the flooding /64');
  t.match(lt.begin('fresh', '2001:db8:7:7::1'), { ok: true }, 'another address is not');
});

t.test('LoginThrottle.enter: past a cap, attempts wait their turn, one address after another', async (t) => {
  const lt = new LoginThrottle({ globalInFlight: 1, queueWaitMs: 60_000 });
  // Two addresses with a recent failure each (so neither is clean).
  admitted(lt.begin('x', '192.0.2.1')).failed();
  admitted(lt.begin('x', '192.0.2.2')).failed();
  const first = await lt.enter('first', '192.0.2.9');
  if (!first.ok) throw new Error('the first attempt should be checked at once');
  const order: string[] = [];
  const queued = [
    ...['a1', 'a2', 'a3'].map((u) => ({ u, p: lt.enter(u, '192.0.2.1') })),
    ...['b1'].map((u) => ({ u, p: lt.enter(u, '192.0.2.2') })),
  ];
  t.equal(lt.waiting, 4);
  t.notOk(await settled(queued[0]!.p), 'waits while the place is taken');
  for (const q of queued) void q.p.then((a) => order.push(q.u));
  // Each admitted attempt ends at once, freeing the place for the next.
  const ends: Promise<void>[] = queued.map((q) =>
    q.p.then((a) => {
      if (!a.ok) throw new Error(`${q.u} refused`);
      a.attempt.failed();
    }),
  );
  first.attempt.failed();
  await Promise.all(ends);
  t.same(order, ['a1', 'b1', 'a2', 'a3'], 'the second address is served after one of the first one’s, not after all');
  t.equal(lt.waiting, 0);
  t.equal(lt.checking, 0);
});

t.test('LoginThrottle.enter: an attempt from a clean address for a clean username goes first', async (t) => {
  const lt = new LoginThrottle({ globalInFlight: 1, queueWaitMs: 60_000 });
  const flooders = ['192.0.2.11', '192.0.2.12', '192.0.2.13'];
  for (const a of flooders) admitted(lt.begin('admin', a)).failed();
  const held = admitted(lt.begin('other', '192.0.2.99'));
  const flood = flooders.flatMap((a) => [lt.enter('admin', a), lt.enter(`guess-${a}`, a)]);
  const owner = lt.enter('Admin', '198.51.100.5');
  let ownerServedAfter = -1;
  let served = 0;
  const all = [...flood, owner].map((p, i) =>
    p.then((a) => {
      if (!a.ok) throw new Error('refused');
      if (i === flood.length) ownerServedAfter = served;
      served++;
      setImmediate(() => a.attempt.failed());
    }),
  );
  held.failed();
  await Promise.all(all);
  t.equal(ownerServedAfter, 0, 'the owner was checked before every queued attempt of the flood');

  // A burst of first guesses from fresh addresses is clean too: the owner who comes after it goes first.
  await new Promise((r) => setImmediate(r)); // the last attempts above end
  const hold2 = admitted(lt.begin('other', '192.0.2.99'));
  const burst = Array.from({ length: 5 }, (_, i) => lt.enter('admin', `203.0.113.${i + 1}`));
  const later = lt.enter('admin', '198.51.100.77');
  const order: string[] = [];
  const ends = [...burst.map((p, i) => ({ p, name: `burst-${i}` })), { p: later, name: 'owner' }].map(({ p, name }) =>
    p.then((a) => {
      if (!a.ok) throw new Error(`${name} refused`);
      order.push(name);
      setImmediate(() => a.attempt.failed());
    }),
  );
  hold2.failed();
  await Promise.all(ends);
  t.equal(order[0], 'owner', `the newest clean attempt first: ${order.join(', ')}`);
});

t.test('LoginThrottle.enter: the queue is bounded per address and in time; leaving gives up the place', async (t) => {
  const lt = new LoginThrottle({ globalInFlight: 1, queueWaitMs: 50 });
  const held = admitted(lt.begin('holder', '192.0.2.1'));
  const waits = Array.from({ length: ADDRESS_QUEUE }, (_, i) => lt.enter(`w${i}`, '192.0.2.50'));
  t.match(await lt.enter('one-too-many', '192.0.2.50'), { ok: false, reason: 'busy', retryAfter: 1 }, 'the address queue is full: refused at once');
  const outcomes = await Promise.all(waits);
  t.ok(outcomes.every((a) => !a.ok && a.reason === 'busy'), 'waited too long: busy');
  t.equal(lt.waiting, 0);

  // A username's attempts that timed out were never checked: they do not lock it.
  for (let i = 0; i < USER_FAILURES_ALLOWED + 1; i++) t.match(await lt.enter('patient', '192.0.2.60'), { ok: false, reason: 'busy' });
  held.succeeded();
  t.ok((await lt.enter('patient', '192.0.2.60')).ok, 'not locked by attempts that were never checked');

  const lt2 = new LoginThrottle({ globalInFlight: 1, queueWaitMs: 60_000 });
  const hold2 = admitted(lt2.begin('holder', '192.0.2.1'));
  const gone = new AbortController();
  const leaving = lt2.enter('leaver', '192.0.2.70', gone.signal);
  const staying = lt2.enter('stayer', '192.0.2.71');
  gone.abort();
  t.match(await leaving, { ok: false, reason: 'busy' });
  t.equal(lt2.waiting, 1);
  hold2.failed();
  const s = await staying;
  t.ok(s.ok, 'the place goes to the one still waiting');
  if (s.ok) s.attempt.succeeded();
  t.equal(lt2.checking, 0);
});

t.test('over HTTP: the owner logs in from a clean address while 20 addresses flood wrong passwords', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = srv.server.ports.api;
  const { username, password } = srv.customer;
  const attackers = Array.from({ length: 20 }, (_, i) => `127.0.4.${i + 1}`);
  // One wrong guess from each first (so none of them is clean any more), then the flood.
  await Promise.all(attackers.map((from, i) => loginFrom(port, from, username, `first-${i}`)));
  const flood = attackers.flatMap((from, i) => Array.from({ length: 3 }, (_, j) => loginFrom(port, from, j === 0 ? username : `guess-${i}-${j}`, `wrong-${i}-${j}`)));
  await new Promise((r) => setTimeout(r, 30)); // the flood holds every place now
  const owner = await loginFrom(port, '127.0.0.44', username, password);
  t.equal(owner.status, 200, `the owner got in: ${JSON.stringify(owner.body)}`);
  const answers = tally(await Promise.all(flood));
  t.equal((answers[401] ?? 0) + (answers[429] ?? 0), 60, `the flood got 401 or 429: ${JSON.stringify(answers)}`);
});
