// The reporting API end to end: real lookups through the pre-bid port, counted by the
// lookup thread, merged and flushed by the main thread, read back on the reporting port.
import t, { type Test } from 'tap';
import { DIMENSIONS, environmentOf, type Dimension } from '../../src/base/enums.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { basic, fixtureQuery, lookup, recentDays, report, settle, todayUtc, withParams } from './client.ts';

const BASE = fixtureQuery('residential-desktop-chrome'); // pub-123, geo us, adt 1, dvt 2, p1=a, p2=b, adv-9
const APP = fixtureQuery('in-app-android'); // app com.example.game, adt 2, dvt 4, no geo

type Cls = 'valid' | 'givt' | 'sivt';

/**
 * The lookups every test below reads back: [query, times, class each is counted as, the
 * category of an invalid one]. The classes are written out by hand from the fixtures'
 * answers on a fresh server (band high is invalid; GIVT when the hard/GIVT evidence leads,
 * else SIVT), the categories from the reason that weighs most (src/signals/score.ts
 * weights), not computed by ivtd. Valid ones are category `none`.
 */
const PLAN: Array<[string, number, Cls, string?]> = [
  [BASE, 3, 'valid'],
  [withParams(BASE, { pub: 'pub-456', geo: 'de', p1: 'x', sid: 'ssp2.example', node: 'bidder-us-1', adv: 'adv-2' }), 2, 'valid'],
  [withParams(APP, { geo: 'gb', p3: 'c3' }), 2, 'valid'],
  [withParams(BASE, { dvt: '8', adt: '4', rat: null, geo: 'fr', dmn: 'news.example', cmp: 'cmp-7', p4: 'q', p5: 'z' }), 1, 'valid'],
  [withParams(fixtureQuery('declared-crawler'), { geo: 'us' }), 1, 'givt', 'declared_crawler'], // p_givt 0.995 (Googlebot from Google's crawler range, a hosting ASN): a declared crawler
  [withParams(fixtureQuery('datacenter-ip'), { geo: 'us' }), 1, 'givt', 'data_center'], // hosting IP: p_givt 0.75 > p_sivt 0.25, high; asn_hosting 0.75 leads
  // automation: p_givt 0.999; HeadlessChrome is also on the crawler list: ua_declared_bot 0.98 leads ua_headless 0.95
  [withParams(fixtureQuery('headless-browser'), { geo: 'us' }), 1, 'givt', 'declared_crawler'],
  // p_sivt 0.8125 > p_givt 0.75, high; but asn_hosting 0.75 outweighs ip_vpn and ua_inconsistent 0.5 each
  [withParams(fixtureQuery('vpn-and-spoofed-device'), { geo: 'us' }), 1, 'sivt', 'data_center'],
  // 25 distinct p5 values for pagination.
  ...Array.from({ length: 25 }, (_, i): [string, number, Cls] => [withParams(BASE, { p5: `page-${String(i).padStart(2, '0')}` }), 1, 'valid']),
];

interface Sent {
  dims: Record<string, string | number>;
  cls: Cls;
}

/** What the report should say about one lookup: its dimension values (as sent) and class. */
function expectedOf(query: string, cls: Cls, category = 'none'): Sent {
  const p = new URLSearchParams(query);
  const get = (k: string) => p.get(k) ?? '';
  const dims: Record<string, string | number> = {};
  for (const d of ['pub', 'sid', 'app', 'dmn', 'node', 'cmp', 'adv', 'p1', 'p2', 'p3', 'p4', 'p5']) dims[d] = get(d);
  dims.adt = Number(get('adt'));
  dims.dvt = Number(get('dvt'));
  dims.geo = get('geo').toUpperCase();
  dims.env = environmentOf(get('app'), Number(get('dvt')));
  dims.category = category;
  return { dims, cls };
}

interface Agg {
  total: number;
  givt: number;
  sivt: number;
}

function aggregate(sent: Sent[], key: (s: Sent) => string | number): Map<string | number, Agg> {
  const m = new Map<string | number, Agg>();
  for (const s of sent) {
    const k = key(s);
    const a = m.get(k) ?? { total: 0, givt: 0, sivt: 0 };
    a.total++;
    if (s.cls === 'givt') a.givt++;
    if (s.cls === 'sivt') a.sivt++;
    m.set(k, a);
  }
  return m;
}

function metricsOf(row: any): Agg {
  return { total: row.total_transactions, givt: row.givt_transactions, sivt: row.sivt_transactions };
}

function checkRowArithmetic(t: Test, rows: any[]): void {
  for (const r of rows) {
    t.equal(r.invalid_transactions, r.givt_transactions + r.sivt_transactions, 'invalid = givt + sivt');
    t.equal(r.valid_transactions + r.invalid_transactions, r.total_transactions, 'valid + invalid = total');
    for (const k of ['total_transactions', 'valid_transactions', 'invalid_transactions', 'sivt_transactions', 'givt_transactions']) {
      t.ok(Number.isInteger(r[k]) && r[k] >= 0, `${k} is a non-negative integer`);
    }
  }
}

function ascending(a: string | number, b: string | number): boolean {
  return typeof a === 'number' && typeof b === 'number' ? a < b : String(a) < String(b);
}

let srv: TestServer;
const sent: Sent[] = [];
let hourBefore = 0;
let hourAfter = 0;
// The UTC dates before and after the lookups: they differ only when the run crosses midnight.
let dateBefore = '';
let dateAfter = '';

t.before(async () => {
  srv = await startTestServer({ reportRate: 100_000, reportBurst: 100_000 }); // rate limits: rate-limit.test.ts
  hourBefore = new Date().getUTCHours();
  dateBefore = todayUtc();
  for (const [q, n, cls, category] of PLAN) {
    for (let i = 0; i < n; i++) {
      await lookup(srv, q);
      sent.push(expectedOf(q, cls, category));
    }
  }
  hourAfter = new Date().getUTCHours();
  dateAfter = todayUtc();
  await settle(srv, sent.length);
});
t.teardown(() => srv?.stop());

t.test('the plan has valid and invalid transactions to count', async (t) => {
  t.ok(sent.some((s) => s.cls === 'valid'), 'some valid');
  t.ok(sent.some((s) => s.cls !== 'valid'), 'some invalid');
});

t.test('no group_by: one total row with the exact counts', async (t) => {
  const days = recentDays(); // once: a second call could fall on the next day
  const r = await report(srv, days);
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /application\/json/);
  const all = aggregate(sent, () => 'all').get('all')!;
  t.same(r.body.meta, { ...days, group_by: [], total_rows: 1, returned_rows: 1, offset: 0 });
  t.equal(r.body.rows.length, 1);
  // policy_transactions (issue 24): the customer's own deny list, outside GIVT and SIVT.
  t.same(Object.keys(r.body.rows[0]), ['total_transactions', 'valid_transactions', 'invalid_transactions', 'sivt_transactions', 'givt_transactions', 'policy_transactions']);
  t.same(metricsOf(r.body.rows[0]), all);
  checkRowArithmetic(t, r.body.rows);

  const empty = await report(srv, { start_date: '2000-01-01', end_date: '2000-01-01' }, {});
  t.equal(empty.status, 422, 'far past is beyond the default retention');
});

t.test('every dimension groups, orders and sums exactly', async (t) => {
  const all = aggregate(sent, () => 'all').get('all')!;
  for (const d of DIMENSIONS) {
    const r = await report(srv, { ...recentDays(), group_by: d, limit: '1000' });
    t.equal(r.status, 200, `${d}: 200`);
    const rows: any[] = r.body.rows;
    t.same(r.body.meta.group_by, [d]);
    t.equal(r.body.meta.total_rows, rows.length, `${d}: total_rows`);
    for (let i = 1; i < rows.length; i++) t.ok(ascending(rows[i - 1][d], rows[i][d]), `${d}: rows ascend`);
    const sum = rows.reduce((a, x) => ({ total: a.total + x.total_transactions, givt: a.givt + x.givt_transactions, sivt: a.sivt + x.sivt_transactions }), { total: 0, givt: 0, sivt: 0 });
    t.same(sum, all, `${d}: groups add up to the total`);
    checkRowArithmetic(t, rows);
    for (const row of rows) t.same(Object.keys(row)[0], d, `${d}: the dimension leads the row`);

    if (d === 'date') {
      if (dateBefore === dateAfter) t.same(rows.map((x) => x.date), [dateBefore]);
      else for (const x of rows) t.ok([dateBefore, dateAfter].includes(x.date), 'a date on either side of midnight');
    } else if (d === 'hour') {
      if (hourBefore === hourAfter) t.same(rows.map((x) => x.hour), [hourBefore], 'one row: the hour of the lookups');
      else {
        t.ok(rows.length >= 1 && rows.length <= 2, 'the lookups fall in the two hours they spanned');
        for (const x of rows) t.ok([hourBefore, hourAfter].includes(x.hour), `hour ${x.hour} is one of them`);
      }
    } else if (d === 'os' || d === 'browser') {
      for (const x of rows) t.type(x[d], 'string');
      t.ok(rows.some((x) => x[d] !== ''), `${d}: parsed from the UA`);
    } else {
      const want = aggregate(sent, (s) => s.dims[d]!);
      const got = new Map(rows.map((x) => [x[d], metricsOf(x)]));
      t.same(got, want, `${d}: value → counts`);
      if (d === 'adt' || d === 'dvt') for (const x of rows) t.type(x[d], 'number');
    }
  }
});

t.test('date and hour together give hourly rows', async (t) => {
  const r = await report(srv, { ...recentDays(), group_by: 'date,hour' });
  t.equal(r.status, 200);
  t.same(Object.keys(r.body.rows[0]).slice(0, 2), ['date', 'hour']);
  t.match(r.body.rows[0].date, /^\d{4}-\d{2}-\d{2}$/);
});

t.test('filters: single values, several values, combined, with grouping', async (t) => {
  const count = (f: (s: Sent) => boolean) => aggregate(sent.filter(f), () => 'x').get('x') ?? { total: 0, givt: 0, sivt: 0 };
  const cases: Array<[Record<string, string>, (s: Sent) => boolean]> = [
    [{ pub: 'pub-456' }, (s) => s.dims.pub === 'pub-456'],
    [{ geo: 'US,DE' }, (s) => s.dims.geo === 'US' || s.dims.geo === 'DE'],
    [{ geo: 'us,de' }, (s) => s.dims.geo === 'US' || s.dims.geo === 'DE'],
    [{ env: 'app' }, (s) => s.dims.env === 'app'],
    [{ env: 'dooh,site' }, (s) => s.dims.env !== 'app'],
    [{ adt: '2' }, (s) => s.dims.adt === 2],
    [{ dvt: '2,4' }, (s) => s.dims.dvt === 2 || s.dims.dvt === 4],
    [{ pub: 'pub-123', geo: 'US' }, (s) => s.dims.pub === 'pub-123' && s.dims.geo === 'US'],
    [{ p1: 'a,x', node: 'bidder-eu-1' }, (s) => (s.dims.p1 === 'a' || s.dims.p1 === 'x') && s.dims.node === 'bidder-eu-1'],
    [{ dmn: 'news.example', cmp: 'cmp-7' }, (s) => s.dims.dmn === 'news.example'],
    [{ app: 'com.example.game', p3: 'c3' }, (s) => s.dims.app === 'com.example.game'],
    [{ sid: 'ssp2.example', adv: 'adv-2' }, (s) => s.dims.sid === 'ssp2.example'],
    [{ p2: 'b', p4: 'nothing-like-this' }, () => false],
    [{ category: 'data_center' }, (s) => s.dims.category === 'data_center'],
    [{ category: 'declared_crawler,data_center' }, (s) => s.cls !== 'valid'],
    [{ category: 'none' }, (s) => s.cls === 'valid'],
    [{ category: 'geo_mismatch,activity' }, () => false],
  ];
  for (const [filters, pick] of cases) {
    const r = await report(srv, { ...recentDays(), ...filters });
    t.equal(r.status, 200, JSON.stringify(filters));
    t.same(metricsOf(r.body.rows[0]), count(pick), JSON.stringify(filters));
  }
  t.ok(count((s) => s.dims.geo === 'US' || s.dims.geo === 'DE').total > count((s) => s.dims.geo === 'US').total, 'multi-value widens');

  const g = await report(srv, { ...recentDays(), group_by: 'pub', geo: 'US' });
  const want = aggregate(sent.filter((s) => s.dims.geo === 'US'), (s) => s.dims.pub!);
  t.same(new Map(g.body.rows.map((x: any) => [x.pub, metricsOf(x)])), want, 'grouped and filtered');

  const c = await report(srv, { ...recentDays(), group_by: 'category,pub', category: 'data_center,declared_crawler' });
  const wantC = aggregate(sent.filter((s) => s.cls !== 'valid'), (s) => `${s.dims.category}/${s.dims.pub}`);
  t.same(new Map(c.body.rows.map((x: any) => [`${x.category}/${x.pub}`, metricsOf(x)])), wantC, 'grouped by category and filtered by it');
});

t.test('pagination: pages in order, never overlapping or skipping', async (t) => {
  const full = await report(srv, { ...recentDays(), group_by: 'p5,pub', limit: '1000' });
  const all: any[] = full.body.rows;
  t.ok(all.length > 25, 'enough rows to page');
  const seen: any[] = [];
  for (let offset = 0; offset < all.length; offset += 7) {
    const page = await report(srv, { ...recentDays(), group_by: 'p5,pub', limit: '7', offset: String(offset) });
    t.equal(page.status, 200);
    t.equal(page.body.meta.total_rows, all.length);
    t.equal(page.body.meta.offset, offset);
    t.equal(page.body.meta.returned_rows, page.body.rows.length);
    t.equal(page.body.rows.length, Math.min(7, all.length - offset));
    seen.push(...page.body.rows);
  }
  t.same(seen, all, 'concatenated pages equal the whole result, in order');
  const keys = seen.map((r) => `${r.p5}\u0000${r.pub}`);
  t.equal(new Set(keys).size, keys.length, 'no group twice');

  const past = await report(srv, { ...recentDays(), group_by: 'p5', offset: '500' });
  t.equal(past.status, 200);
  t.same(past.body.rows, []);
  t.equal(past.body.meta.returned_rows, 0);
  t.equal(past.body.meta.total_rows, new Set(all.map((r) => r.p5)).size, 'total_rows still counted past the end');

  const def = await report(srv, { ...recentDays(), group_by: 'p5' });
  t.equal(def.body.rows.length, 20, 'limit defaults to 20');
  const totalPast = await report(srv, { ...recentDays(), offset: '1' });
  t.same(totalPast.body.rows, [], 'the single total row pages away too');
  t.equal(totalPast.body.meta.total_rows, 1);
});

t.test('tenancy: a customer sees only its own transactions', async (t) => {
  const other = await createCustomer(srv.server.store, { name: 'Other Co', username: `other${Date.now()}`, password: 'another long password' });
  await srv.server.refreshKeys();
  const r0 = await report(srv, recentDays(), { customer: other });
  t.equal(r0.status, 200);
  t.equal(r0.body.rows[0].total_transactions, 0, 'nothing of the first customer');

  const otherAsSent = { ...srv.customer, ...other };
  await lookup(srv, BASE, otherAsSent);
  await lookup(srv, BASE, otherAsSent);
  await settle(srv, 2, otherAsSent);
  const r1 = await report(srv, { ...recentDays(), group_by: 'pub' }, { customer: other });
  t.same(r1.body.rows.map((x: any) => [x.pub, x.total_transactions]), [['pub-123', 2]]);
  const mine = await report(srv, recentDays());
  t.equal(mine.body.rows[0].total_transactions, sent.length, "the other customer's lookups are not mine");

  const crossed = await report(srv, recentDays(), { authorization: basic(other.customer_id, srv.customer.reporting_key) });
  t.equal(crossed.status, 401, "one customer's key does not open another's reports");
});

t.test('401: missing, malformed or wrong credentials', async (t) => {
  // Each says what is wrong: a pre-bid key or a wrong key got the same words as no credentials.
  const send = /^Send HTTP Basic credentials/;
  const cases: Array<[string, string | null, RegExp]> = [
    ['no header', null, send],
    ['not basic', `Bearer ${srv.customer.reporting_key}`, send],
    ['garbage', 'Basic !!!', send],
    ['no colon', 'Basic ' + Buffer.from('justone').toString('base64'), send],
    ['wrong key', basic(srv.customer.customer_id, srv.customer.reporting_key + 'x'), /do not match a live key/],
    ['prebid key', basic(srv.customer.customer_id, srv.customer.prebid_key), /That is a pre-bid key \(ivp_…\).*starts with ivr_/],
    ['not a key', basic(srv.customer.customer_id, 'hunter2'), /not a reporting key: reporting keys start with ivr_/],
  ];
  for (const [name, auth, message] of cases) {
    const r = await report(srv, recentDays(), { authorization: auth });
    t.equal(r.status, 401, name);
    t.equal(r.body.error, 'unauthorized', name);
    t.match(r.body.message, message, name);
    t.match(r.headers.get('www-authenticate'), /^Basic realm="ivtd reporting"/, name);
  }
});

t.test('400 and 422: the parameter rules of spec 4.6', async (t) => {
  const d = recentDays();
  const cases: Array<[string, number, string]> = [
    [`end_date=${d.end_date}`, 400, 'missing_parameter'],
    [`start_date=${d.start_date}`, 400, 'missing_parameter'],
    [`start_date=&end_date=${d.end_date}`, 400, 'missing_parameter'],
    [`start_date=2025-13-01&end_date=${d.end_date}`, 400, 'invalid_parameter'],
    [`start_date=2025-02-30&end_date=${d.end_date}`, 400, 'invalid_parameter'],
    [`start_date=20250101&end_date=${d.end_date}`, 400, 'invalid_parameter'],
    [`start_date=${d.start_date}&end_date=tomorrow`, 400, 'invalid_parameter'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&group_by=pub,country`, 400, 'unknown_dimension'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&group_by=pub,,geo`, 400, 'unknown_dimension'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&group_by=pub,pub`, 400, 'invalid_parameter'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&country=US`, 400, 'unknown_parameter'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&date=${d.end_date}`, 400, 'unknown_parameter'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&rat=1`, 400, 'unknown_parameter'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&geo=US&geo=DE`, 400, 'duplicate_parameter'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&limit=0`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&limit=1001`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&limit=ten`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&limit=2.5`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&offset=-1`, 422, 'unprocessable'],
    [`start_date=${d.end_date}&end_date=${d.start_date}`, 422, 'unprocessable'],
    [`start_date=2000-01-01&end_date=${d.end_date}`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&adt=5`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&adt=1,0`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&dvt=9`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&dvt=phone`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&env=web`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&pub=`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&category=bots`, 422, 'unprocessable'],
    [`start_date=${d.start_date}&end_date=${d.end_date}&category=none,Data_Center`, 422, 'unprocessable'],
    // A malformed request is a 400 even when a value is also out of range.
    [`start_date=${d.start_date}&end_date=${d.end_date}&limit=5000&group_by=nope`, 400, 'unknown_dimension'],
  ];
  for (const [qs, status, code] of cases) {
    const r = await report(srv, qs);
    t.equal(r.status, status, qs);
    t.equal(r.body.error, code, qs);
    t.type(r.body.message, 'string');
  }
  const ok = await report(srv, `start_date=${d.start_date}&end_date=${d.end_date}&limit=1000&offset=0&group_by=`);
  t.equal(ok.status, 200, 'limit 1000 and an empty group_by are fine');
});

t.test('the dashboard route: the same report with a Bearer session on the account port', async (t) => {
  const login = await fetch(`${srv.api}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: srv.customer.username, password: srv.customer.password }).toString(),
  });
  t.equal(login.status, 200);
  const { access_token } = (await login.json()) as { access_token: string };
  const params = { ...recentDays(), group_by: 'pub,geo', limit: '50' };
  const bearer = await report(srv, params, { base: srv.api, authorization: `Bearer ${access_token}` });
  const basicReply = await report(srv, params);
  t.equal(bearer.status, 200);
  t.same(bearer.body, basicReply.body, 'same engine, same customer, same JSON');
  const noToken = await report(srv, params, { base: srv.api, authorization: null });
  t.equal(noToken.status, 400, 'no session: the account API’s invalid-session answer');
  const badParams = await report(srv, { start_date: 'x', end_date: 'y' }, { base: srv.api, authorization: `Bearer ${access_token}` });
  t.equal(badParams.status, 400);
});
