// GET /v1/report/impressions: what the impression beacons found, counted the way lookups
// are (threads → shared counts → writer → DuckDB rollups) and reported under the same rules
// as /v1/report, grouped by the lookup's dimensions, the band it answered and imp_status.
import t from 'tap';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { fetchConforms } from '../helpers/openapi.ts';
import { basic, fixtureQuery, recentDays, report, withParams } from './client.ts';

const CHROME_WIN = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';

async function lookupLid(srv: TestServer, pub: string, ip: string, uid: string): Promise<{ lid: string; band: string }> {
  const q = withParams(fixtureQuery('residential-desktop-chrome'), { pub, ip, uid, ua: CHROME_WIN })
    .replace('{p}', srv.customer.partner_id)
    .replace('{k}', srv.customer.prebid_key);
  const url = `${srv.prebid}/api/v1/ivt/lookup?${q}`;
  const res = await fetch(url);
  const text = await res.text();
  fetchConforms('GET', url, res, text, ['prebid']);
  const body = JSON.parse(text) as { lid: string; botRisk: { band: string } };
  if (res.status !== 200) throw new Error(JSON.stringify(body));
  return { lid: body.lid, band: body.botRisk.band };
}

async function beacon(srv: TestServer, lid: string, ip: string, ua: string): Promise<void> {
  const url = `${srv.prebid}/api/v1/ivt/imp?lid=${lid}`;
  const res = await fetch(url, { headers: { 'x-device-ip': ip, 'x-device-user-agent': ua } });
  const text = await res.text();
  fetchConforms('GET', url, res, text, ['prebid']);
  if (res.status !== 204) throw new Error(`beacon answered ${res.status}: ${text}`);
}

async function fetchReport(srv: TestServer, params: Record<string, string>, authorization?: string | null): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  const auth = authorization === undefined ? basic(srv.customer.customer_id, srv.customer.reporting_key) : authorization;
  if (auth !== null) headers.authorization = auth;
  const url = `${srv.reporting}/v1/report/impressions?${new URLSearchParams(params)}`;
  const res = await fetch(url, { headers });
  const text = await res.text();
  fetchConforms('GET', url, res, text, ['reporting']);
  return { status: res.status, body: JSON.parse(text) };
}

t.test('impressions by pub, imp_status and band; filters; the same refusals as /v1/report', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  let band = '';
  for (let i = 0; i < 3; i++) {
    const a = await lookupLid(srv, 'pub-A', `73.162.60.${i + 1}`, `a-${i}`);
    band = a.band;
    await beacon(srv, a.lid, `73.162.60.${i + 1}`, CHROME_WIN); // valid
    await beacon(srv, a.lid, `73.162.60.${i + 1}`, CHROME_WIN); // replay
  }
  for (let i = 0; i < 2; i++) {
    const b = await lookupLid(srv, 'pub-B', `73.162.61.${i + 1}`, `b-${i}`);
    await beacon(srv, b.lid, '198.51.100.9', IPHONE); // mismatch
  }
  const days = recentDays();
  const want = [
    { pub: 'pub-A', imp_status: 'replay', band, impressions: 3, valid_impressions: 0, invalid_impressions: 3 },
    { pub: 'pub-A', imp_status: 'valid', band, impressions: 3, valid_impressions: 3, invalid_impressions: 0 },
    { pub: 'pub-B', imp_status: 'mismatch', band, impressions: 2, valid_impressions: 0, invalid_impressions: 2 },
  ];
  let got: any = null;
  const deadline = Date.now() + 15_000;
  for (;;) {
    await srv.server.reporting!.flushImpressions();
    got = await fetchReport(srv, { ...days, group_by: 'pub,imp_status,band' });
    if (got.status === 200 && JSON.stringify(got.body.rows) === JSON.stringify(want)) break;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 300));
  }
  t.equal(got.status, 200);
  t.strictSame(got.body.rows, want, 'grouped by the lookup\'s pub, what the beacon found and the band answered');
  t.same(got.body.meta.group_by, ['pub', 'imp_status', 'band']);

  const total = await fetchReport(srv, days);
  t.strictSame(total.body.rows, [{ impressions: 8, valid_impressions: 3, invalid_impressions: 5 }], 'one total row');
  const replays = await fetchReport(srv, { ...days, imp_status: 'replay,mismatch', group_by: 'imp_status' });
  t.strictSame(replays.body.rows.map((r: any) => [r.imp_status, r.impressions]), [['mismatch', 2], ['replay', 3]], 'filtered by imp_status');
  const byDims = await fetchReport(srv, { ...days, pub: 'pub-B', group_by: 'date,os,browser' });
  t.match(byDims.body.rows, [{ os: 'windows', browser: 'chrome', impressions: 2 }], 'the lookup\'s other dimensions, as the lookup report has them');
  const none = await fetchReport(srv, { ...days, band: band === 'high' ? 'low' : 'high' });
  t.strictSame(none.body.rows, [{ impressions: 0, valid_impressions: 0, invalid_impressions: 0 }], 'another band: none');

  t.match(await fetchReport(srv, { ...days, imp_status: 'forged' }), { status: 422, body: { error: 'unprocessable', message: /imp_status value "forged"/ } });
  t.match(await fetchReport(srv, { ...days, group_by: 'colour' }), { status: 400, body: { error: 'unknown_dimension' } });
  t.match(await fetchReport(srv, { start_date: days.start_date }), { status: 400, body: { error: 'missing_parameter' } });
  t.match(await fetchReport(srv, { ...days, limit: '0' }), { status: 422 });
  t.match(await fetchReport(srv, days, null), { status: 401, body: { error: 'unauthorized' } });
  t.match(await fetchReport(srv, days, basic(srv.customer.customer_id, 'wrong')), { status: 401 });
  const lookups = await report(srv, { ...days, group_by: 'imp_status' });
  t.match(lookups, { status: 400, body: { error: 'unknown_dimension' } }, '/v1/report has no imp_status');
  const lookupTotal = await report(srv, days);
  t.equal(lookupTotal.status, 200);
});

t.test('calibration: per band, the feedback labels and their invalid share; what the beacons caught, apart', async (t) => {
  const srv = await startTestServer({});
  t.teardown(() => srv.stop());
  let band = '';
  const lids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const a = await lookupLid(srv, 'pub-A', `73.162.80.${i + 1}`, `ca-${i}`);
    band = a.band;
    await beacon(srv, a.lid, `73.162.80.${i + 1}`, CHROME_WIN); // labelled valid
    await beacon(srv, a.lid, `73.162.80.${i + 1}`, CHROME_WIN); // first replay: relabelled invalid
    await beacon(srv, a.lid, `73.162.80.${i + 1}`, CHROME_WIN); // later replays label nothing more
  }
  for (let i = 0; i < 2; i++) {
    const b = await lookupLid(srv, 'pub-B', `73.162.81.${i + 1}`, `cb-${i}`);
    await beacon(srv, b.lid, '198.51.100.9', IPHONE); // labelled invalid (mismatch)
    await beacon(srv, b.lid, '198.51.100.9', IPHONE); // a replay of an invalid one: no new label
  }
  const c = await lookupLid(srv, 'pub-C', '73.162.82.1', 'cc-0');
  lids.push(c.lid);
  await beacon(srv, c.lid, '73.162.82.1', CHROME_WIN); // labelled valid
  const { login } = await import('../account/client.ts');
  const { access_token: token } = await login(srv.api, srv.customer.username, srv.customer.password);
  const fb = await fetch(`${srv.api}/v1/feedback`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ labels: [{ lid: c.lid, label: 'invalid', source: 'chargeback' }] }),
  });
  t.equal(fb.status, 200);

  const days = recentDays();
  const get = async (params: Record<string, string>, authorization?: string | null) => {
    const headers: Record<string, string> = {};
    const auth = authorization === undefined ? basic(srv.customer.customer_id, srv.customer.reporting_key) : authorization;
    if (auth !== null) headers.authorization = auth;
    const url = `${srv.reporting}/v1/report/calibration?${new URLSearchParams(params)}`;
    const res = await fetch(url, { headers });
    const text = await res.text();
    fetchConforms('GET', url, res, text, ['reporting']);
    return { status: res.status, body: JSON.parse(text) as any };
  };
  let got: any = null;
  const deadline = Date.now() + 15_000;
  for (;;) {
    await srv.server.reporting!.flushImpressions();
    got = await get(days);
    const row = got.body.rows?.find((r: any) => r.band === band);
    if (row?.by_beacon.labelled === 6 && row?.by_beacon.invalid === 5) break;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 300));
  }
  t.equal(got.status, 200);
  t.same(got.body.meta, days);
  t.same(got.body.rows.map((r: any) => r.band), ['low', 'medium', 'high'], 'every band, in order');
  // The share rests on the feedback alone: the clean beacons of pub-A and pub-C (a bot fires
  // its own) were counted as valid labels beside it (7 labelled, 6 invalid).
  t.strictSame(got.body.rows.find((r: any) => r.band === band), {
    band,
    labelled_lookups: 1,
    invalid_lookups: 1,
    invalid_share: 1,
    by_beacon: { labelled: 6, invalid: 5 },
    by_feedback: { labelled: 1, invalid: 1 },
  });
  const other = got.body.rows.find((r: any) => r.band !== band);
  t.strictSame([other.labelled_lookups, other.invalid_share], [0, null], 'nothing labelled: no share');
  t.match(await get({ ...days, group_by: 'pub' }), { status: 400, body: { error: 'unknown_parameter' } });
  t.match(await get({ start_date: days.start_date }), { status: 400, body: { error: 'missing_parameter' } });
  t.match(await get({ start_date: days.end_date, end_date: days.start_date }), { status: 422 });
  t.match(await get(days, null), { status: 401 });
  const bearerUrl = `${srv.api}/v1/report/calibration?${new URLSearchParams(days)}`;
  const bearer = await fetch(bearerUrl, { headers: { authorization: `Bearer ${token}` } });
  fetchConforms('GET', bearerUrl, bearer, await bearer.text(), ['account']);
  t.equal(bearer.status, 200, 'the dashboard\'s route on the account port');
});
