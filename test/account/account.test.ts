// /v1/account: the signed-in customer's details and key rotation, checked against the
// real pre-bid listener (a rotated-in key works at once, a revoked one stops).
import t from 'tap';
import { startTestServer } from '../helpers/server.ts';
import { call, login, sleep } from './client.ts';

const srv = await startTestServer();
t.teardown(() => srv.stop());
const api = srv.api;
const { access_token: token } = await login(api, srv.customer.username, srv.customer.password);

const UA = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
async function lookupStatus(key: string): Promise<number> {
  const q = `schain=1.0,1!exchange1.example,1234,1&p=${srv.customer.partner_id}&k=${key}&pub=pub-1&node=n1&ip=81.2.69.142&ua=${UA}&uid=u-1&sid=exchange1.example&adt=1&dvt=2`;
  const res = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
  await res.arrayBuffer();
  return res.status;
}

/** Polls until the lookup answers `want` for `key` (key changes reach the lookup threads by message). */
async function lookupBecomes(key: string, want: number): Promise<number> {
  let got = 0;
  for (let i = 0; i < 40; i++) {
    got = await lookupStatus(key);
    if (got === want) break;
    await sleep(25);
  }
  return got;
}

t.test('GET /v1/account shows the customer and key prefixes, never a secret', async (t) => {
  const r = await call(api, 'GET', '/v1/account', { token });
  t.equal(r.status, 200);
  t.match(r.body, {
    customer_id: srv.customer.customer_id,
    partner_id: srv.customer.partner_id,
    name: 'Test Co',
    username: srv.customer.username,
  });
  t.same(r.body.keys.map((k: { kind: string }) => k.kind).sort(), ['prebid', 'reporting']);
  for (const k of r.body.keys) {
    t.match(k, { prefix: /^iv[pr]_/, created_at: String, expires_at: null });
    t.ok(k.prefix.length < 12, 'only a prefix');
  }
  const text = JSON.stringify(r.body);
  t.notOk(text.includes(srv.customer.prebid_key) || text.includes(srv.customer.reporting_key), 'no full key in the body');
});

t.test('rotating the pre-bid key: the new key works at once, the old one for the grace period', async (t) => {
  t.equal(await lookupStatus(srv.customer.prebid_key), 200, 'old key works before');
  const r = await call(api, 'POST', '/v1/account/keys/rotate', { token, json: { kind: 'prebid', grace_seconds: 3600 } });
  t.equal(r.status, 200);
  t.match(r.body, { kind: 'prebid', key: /^ivp_[A-Za-z0-9_-]{32}$/, previous_expires_at: String });
  const expires = Date.parse(r.body.previous_expires_at);
  t.ok(Math.abs(expires - (Date.now() + 3600_000)) < 60_000, 'grace of an hour');
  t.equal(await lookupBecomes(r.body.key, 200), 200, 'new key accepted by the lookup threads');
  t.equal(await lookupStatus(srv.customer.prebid_key), 200, 'old key still in its grace period');

  const acct = (await call(api, 'GET', '/v1/account', { token })).body;
  const prebid = acct.keys.filter((k: { kind: string }) => k.kind === 'prebid');
  t.equal(prebid.length, 2, 'both keys listed while the old one lives');
  t.ok(prebid.some((k: { prefix: string; expires_at: string | null }) => r.body.key.startsWith(k.prefix) && k.expires_at === null));

  // grace 0 revokes every other key at once
  const now = await call(api, 'POST', '/v1/account/keys/rotate', { token, json: { kind: 'prebid', grace_seconds: 0 } });
  t.equal(now.status, 200);
  t.equal(await lookupBecomes(now.body.key, 200), 200);
  t.equal(await lookupBecomes(r.body.key, 401), 401, 'previous key refused');
  t.equal(await lookupBecomes(srv.customer.prebid_key, 401), 401, 'original key refused');
});

t.test('a rotated pre-bid key is taken by every lookup thread by the time the rotation is answered', async (t) => {
  // The answer waits for the threads: the key it hands out must work on the very next lookup
  // (a soak saw a few 401s just after a rotation while the threads were still being told).
  for (let round = 0; round < 3; round++) {
    const r = await call(api, 'POST', '/v1/account/keys/rotate', { token, json: { kind: 'prebid', grace_seconds: 3600 } });
    t.equal(r.status, 200);
    const statuses = await Promise.all(Array.from({ length: 16 }, () => lookupStatus(r.body.key)));
    t.same(statuses, Array(16).fill(200), `round ${round}: 16 lookups sent at once with the new key, all 200`);
  }
});

t.test('rotating the reporting key; default grace', async (t) => {
  const r = await call(api, 'POST', '/v1/account/keys/rotate', { token, json: { kind: 'reporting' } });
  t.equal(r.status, 200);
  t.match(r.body, { kind: 'reporting', key: /^ivr_/ });
  const expires = Date.parse(r.body.previous_expires_at);
  t.ok(Math.abs(expires - (Date.now() + srv.config.keyGrace * 1000)) < 60_000, 'the configured --key-grace');
});

t.test('rotations sent at the same time: each answered with its own key, one of them current', async (t) => {
  // Side by side, they updated the same key rows at once: a write conflict, a 500 for all but one.
  const r = await Promise.all([0, 1, 2, 3].map(() => call(api, 'POST', '/v1/account/keys/rotate', { token, json: { kind: 'reporting', grace_seconds: 600 } })));
  t.same(r.map((x) => x.status), [200, 200, 200, 200], r.map((x) => JSON.stringify(x.body)).join(' '));
  const keys = r.map((x) => x.body.key as string);
  t.equal(new Set(keys).size, 4, 'four different keys');
  const acct = await call(api, 'GET', '/v1/account', { token });
  const current = (acct.body.keys as { kind: string; prefix: string; expires_at: string | null }[]).filter((k) => k.kind === 'reporting' && k.expires_at === null);
  t.equal(current.length, 1, 'one current reporting key');
  t.equal(keys.filter((k) => k.startsWith(current[0]!.prefix)).length, 1, 'and it is one of the four');
});

t.test('rotate: 422 for a bad kind, grace or field', async (t) => {
  for (const [json, field] of [
    [{}, 'kind'],
    [{ kind: 'admin' }, 'kind'],
    [{ kind: 'prebid', grace_seconds: -1 }, 'grace_seconds'],
    [{ kind: 'prebid', grace_seconds: 1.5 }, 'grace_seconds'],
    [{ kind: 'prebid', grace_seconds: '60' }, 'grace_seconds'],
    [{ kind: 'prebid', grace_seconds: 10 ** 9 }, 'grace_seconds'],
    [{ kind: 'prebid', customer_id: 'someone-else' }, 'customer_id'],
  ] as const) {
    const r = await call(api, 'POST', '/v1/account/keys/rotate', { token, json });
    t.equal(r.status, 422, JSON.stringify(json));
    t.equal(r.body.field, field);
  }
  t.equal((await call(api, 'POST', '/v1/account/keys/rotate', { json: { kind: 'prebid' } })).status, 400, 'no token');
});
