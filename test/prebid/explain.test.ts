// Reason codes are available on the admin side (account port, Bearer) and never on 9898.
import t from 'tap';
import { startTestServer } from '../helpers/server.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { reasonsByCategory } from '../../src/account/explain-route.ts';

t.test('explain a lookup on the account port', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const api = `http://127.0.0.1:${srv.server.ports.api}`;
  const login = async (username: string, password: string) => {
    const r = await fetch(`${api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ username, password }) });
    return ((await r.json()) as { access_token: string }).access_token;
  };
  const token = await login(srv.customer.username, srv.customer.password);
  const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36');
  const q = (p: string) => `p=${p}&k=${srv.customer.prebid_key}&pub=p&node=n&ip=159.89.0.1&ua=${ua}&uid=u1&sid=s.example&adt=1&dvt=2`;

  const r = await fetch(`${api}/v1/account/explain?${q(srv.customer.partner_id)}`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(r.status, 200);
  const body = (await r.json()) as {
    status: number;
    reasons: string[];
    transaction: string;
    category: string;
    leadingReason: string;
    categories: Array<{ category: string; reasons: string[] }>;
    response: { botRisk: { band: string } };
  };
  t.equal(body.status, 200);
  t.equal(body.response.botRisk.band, 'high');
  t.ok(body.reasons.length >= 2, `reason codes: ${body.reasons.join(', ')}`);
  t.match(body.reasons.join(' '), /asn_hosting|hosting/, 'names the hosting signal');
  t.equal(body.transaction, 'givt');
  // HeadlessChrome on a hosting IP: the crawler list names HeadlessChrome (0.98), the UA is
  // automation (0.95), the address a data center (0.6). The strongest leads the category.
  t.same(body.reasons, ['ua_declared_bot', 'ua_headless', 'asn_hosting']);
  t.equal(body.leadingReason, 'ua_declared_bot');
  t.equal(body.category, 'declared_crawler', 'the category reporting counts this lookup under');
  t.same(
    body.categories,
    [
      { category: 'declared_crawler', reasons: ['ua_declared_bot'] },
      { category: 'automation', reasons: ['ua_headless'] },
      { category: 'data_center', reasons: ['asn_hosting'] },
    ],
    'each reason code under its category, in the order of the list',
  );

  // A data reload keeps the admin-side engine's keys.
  t.same(await srv.server.reload(), { ok: true, errors: [] });
  const again = await fetch(`${api}/v1/account/explain?${q(srv.customer.partner_id)}`, { headers: { authorization: `Bearer ${token}` } });
  t.match(await again.json(), { status: 200, transaction: 'givt' }, 'explain still authorizes after a reload');

  const lookup = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q(srv.customer.partner_id)}`);
  const text = await lookup.text();
  t.notMatch(text, /reasons|asn_hosting/, 'no reason codes on the lookup port');

  t.equal((await fetch(`${api}/v1/account/explain?${q(srv.customer.partner_id)}`)).status, 400, 'no session → 400 invalid_session');
  const other = await createCustomer(srv.server.store, { name: 'Other', username: 'other-co', password: 'other-password-1' });
  const otherToken = await login('other-co', 'other-password-1');
  const forbidden = await fetch(`${api}/v1/account/explain?${q(srv.customer.partner_id)}`, { headers: { authorization: `Bearer ${otherToken}` } });
  t.equal(forbidden.status, 403, "another customer's partner ID is refused");
  await srv.server.refreshKeys();
  const own = await fetch(`${api}/v1/account/explain?${q(other.partner_id).replace(srv.customer.prebid_key, other.prebid_key)}`, { headers: { authorization: `Bearer ${otherToken}` } });
  t.match(await own.json(), { status: 200, transaction: 'givt' }, 'while its own partner ID is explained');
});

t.test('explain answers what the lookup port answers, from the same history, and changes nothing', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  const api = `http://127.0.0.1:${srv.server.ports.api}`;
  const login = await fetch(`${api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ username: srv.customer.username, password: srv.customer.password }) });
  const token = ((await login.json()) as { access_token: string }).access_token;
  const chrome = (v: number) => encodeURIComponent(`Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/12${v}.0.0.0 Safari/537.36`);
  const q = (v: number) => `p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&pub=p&node=n&ip=73.162.10.${20 + v}&ua=${chrome(v)}&uid=one-cookie&sid=s.example&adt=1&dvt=2`;
  // One cookie, three browsers and three addresses within a minute: history has a say.
  for (let v = 0; v < 3; v++) {
    const r = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q(v)}`, { headers: { connection: 'close' } });
    t.equal(r.status, 200);
  }
  const explain = async () => {
    const r = await fetch(`${api}/v1/account/explain?${q(3)}`, { headers: { authorization: `Bearer ${token}` } });
    return (await r.json()) as { response: { components: { p_hist: number }; botRisk: { confidence: number } }; reasons: string[]; signals: { history: { uidDistinctUas: number; uidSeen: number } } };
  };
  const first = await explain();
  const second = await explain();
  t.ok(first.response.components.p_hist > 0, `history counts (p_hist ${first.response.components.p_hist}, ${first.reasons.join(', ')})`);
  t.equal(first.signals.history.uidDistinctUas, 4, "explain sees the lookup threads' three UAs plus its own");
  t.same(second.response.components, first.response.components, 'a second explain sees the same history: the first wrote nothing');
  const lookup = (await (await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q(3)}`)).json()) as typeof first.response;
  t.same(lookup.components, first.response.components, 'the lookup port then answers what explain said');
  t.ok(Math.abs(lookup.botRisk.confidence - first.response.botRisk.confidence) < 0.001, 'confidence too (it decays by microseconds)');
  t.ok(Math.abs(second.signals.history.uidSeen - first.signals.history.uidSeen) < 0.01, `explain counted nothing (${first.signals.history.uidSeen} then ${second.signals.history.uidSeen}: decay only)`);
  const after = await explain();
  t.ok(after.signals.history.uidSeen > first.signals.history.uidSeen + 0.9, `while the lookup was counted (${first.signals.history.uidSeen} -> ${after.signals.history.uidSeen})`);
});

t.test('reason codes grouped by category: details after a colon, the list order, none left out', async (t) => {
  t.same(reasonsByCategory([]), []);
  t.same(reasonsByCategory(['geo_mismatch', 'ua_inconsistent:os_vs_dvt', 'ip_vpn', 'ip_tor', 'uid_velocity']), [
    { category: 'activity', reasons: ['uid_velocity'] },
    { category: 'anonymizing_proxy', reasons: ['ip_vpn', 'ip_tor'] },
    { category: 'device_spoofing', reasons: ['ua_inconsistent:os_vs_dvt'] },
    { category: 'geo_mismatch', reasons: ['geo_mismatch'] },
  ]);
  t.same(reasonsByCategory(['denylisted', 'allowlisted', 'asn_hosting']), [
    { category: 'data_center', reasons: ['asn_hosting'] },
    { category: 'denylisted', reasons: ['denylisted'] },
    { category: 'none', reasons: ['allowlisted'] },
  ]);
});

t.test('explain of a bid request says why sua_mismatch fired (uaConsistency was empty)', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const api = `http://127.0.0.1:${srv.server.ports.api}`;
  const r = await fetch(`${api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ username: srv.customer.username, password: srv.customer.password }) });
  const token = ((await r.json()) as { access_token: string }).access_token;
  const { readFileSync } = await import('node:fs');
  const fixture = JSON.parse(readFileSync(new URL('../fixtures/ortb/supplemental/sua-contradicts-ua.json', import.meta.url), 'utf8')) as { request: unknown };
  const res = await fetch(`${api}/v1/account/explain/ortb?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&node=n`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(fixture.request),
  });
  t.equal(res.status, 200);
  const body = (await res.json()) as { reasons: string[]; signals: { uaConsistency: string; suaConflict: string } };
  t.ok(body.reasons.includes('sua_mismatch'), `sua_mismatch among ${body.reasons.join(', ')}`);
  t.equal(body.signals.suaConflict, 'platform');
  t.equal(body.signals.uaConsistency, 'sua_mismatch: device.sua says platform macos, the UA string windows', 'names the hint and the UA string that disagree');
});
