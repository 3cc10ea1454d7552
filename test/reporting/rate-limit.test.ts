// Reporting rate limits: the per-customer token bucket (429 + Retry-After) and the
// per-IP limit on failed Basic logins, through the real listener; the bucket's
// arithmetic with a fake clock.
import t from 'tap';
import { AUTH_FAILURE_BURST } from '../../src/reporting/api.ts';
import { RateLimiter } from '../../src/reporting/rate-limit.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { startTestServer } from '../helpers/server.ts';
import { basic, recentDays, report } from './client.ts';

t.test('token bucket: burst, refill and the wait it reports', async (t) => {
  let now = 1_000_000;
  const b = new RateLimiter(2, 3, 100, () => now);
  t.same([b.take('a'), b.take('a'), b.take('a')], [0, 0, 0], 'the burst');
  t.equal(b.take('a'), 1, 'then a wait of 1 s (2 tokens/s)');
  t.equal(b.take('b'), 0, 'keys are independent');
  now += 250;
  t.equal(b.take('a'), 1, 'not yet a whole token');
  now += 250;
  t.equal(b.take('a'), 0, 'one token after 500 ms');
  now += 60_000;
  t.same([b.take('a'), b.take('a'), b.take('a'), b.take('a')], [0, 0, 0, 1], 'refill stops at the burst');
  const slow = new RateLimiter(0.2, 1, 100, () => now);
  slow.take('ip');
  t.equal(slow.peek('ip'), 5, 'a slow bucket reports its full wait');
  t.equal(slow.peek('ip'), 5, 'peek spends nothing');
});

t.test('per-customer limit and failed-login limit on the reporting port', async (t) => {
  const srv = await startTestServer({ reportRate: 1, reportBurst: 3 });
  t.teardown(() => srv.stop());
  const params = recentDays();
  // The bucket refills at 1 token/s in real time, so requests that must fall in one second
  // are sent together (a busy host can take that long for a few reports one after another)
  // and nothing slow sits inside the refill windows. Created first: its password hashing.
  const other = await createCustomer(srv.server.store, { name: 'Other', username: `other${Date.now()}`, password: 'another long password' });
  const byStatus = (rs: Awaited<ReturnType<typeof report>>[]) => rs.sort((a, b) => a.status - b.status);

  const burst = byStatus(await Promise.all([0, 1, 2, 3].map(() => report(srv, params))));
  for (let i = 0; i < 3; i++) t.equal(burst[i]!.status, 200, `request ${i + 1} within the burst`);
  const limited = burst[3]!;
  t.equal(limited.status, 429);
  t.equal(limited.body.error, 'rate_limited');
  t.equal(limited.headers.get('retry-after'), '1');
  const invalid = await report(srv, { start_date: 'x', end_date: 'y' });
  t.equal(invalid.status, 429, 'the limit applies before the parameters are read');

  await new Promise((r) => setTimeout(r, 1100));
  const refilled = byStatus(await Promise.all([0, 1].map(() => report(srv, params))));
  t.equal(refilled[0]!.status, 200, 'one token back after a second');
  t.equal(refilled[1]!.status, 429);

  t.equal((await report(srv, params, { customer: other })).status, 200, 'another customer has its own bucket');

  // Failed logins from one address: a burst, then 429 even for good credentials.
  const wrong = basic(srv.customer.customer_id, 'not-the-key');
  const failed = await Promise.all(Array.from({ length: AUTH_FAILURE_BURST }, () => report(srv, params, { authorization: wrong })));
  for (let i = 0; i < AUTH_FAILURE_BURST; i++) t.equal(failed[i]!.status, 401, `failed login ${i + 1}`);
  const blocked = await report(srv, params, { authorization: wrong });
  t.equal(blocked.status, 429);
  t.ok(Number(blocked.headers.get('retry-after')) >= 1, 'Retry-After on the failed-login limit');
  t.equal((await report(srv, params, { customer: other })).status, 429, 'the address is held back, whatever the credentials');
});
