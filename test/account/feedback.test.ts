// POST /v1/feedback: a customer labels its own lookups by lid after the fact; the labels
// are kept and feed the shared history (an IP its customer keeps labelling invalid shows
// ipBotActivity); a foreign, forged or malformed item refuses the whole request with a 422
// that names it.
import t from 'tap';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { fixtureQuery, withParams } from '../reporting/client.ts';
import { call, login } from './client.ts';

async function lookup(srv: TestServer, ip: string, uid: string, customer: { partner_id: string; prebid_key: string } = srv.customer) {
  const q = withParams(fixtureQuery('residential-desktop-chrome'), { ip, uid }).replace('{p}', customer.partner_id).replace('{k}', customer.prebid_key);
  const res = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
  return (await res.json()) as { lid: string; ipReputation: { ipBotActivity: boolean } };
}

t.test('labels of its own lids: kept, and fed to history', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const { access_token: token } = await login(srv.api, srv.customer.username, srv.customer.password);
  const ip = '73.162.70.10';
  const lids: string[] = [];
  for (let i = 0; i < 22; i++) lids.push((await lookup(srv, ip, `f-${i}`)).lid);
  t.notOk((await lookup(srv, ip, 'f-x')).ipReputation.ipBotActivity, 'clean before the labels');
  const r = await call(srv.api, 'POST', '/v1/feedback', { token, json: { labels: lids.map((lid) => ({ lid, label: 'invalid', source: 'chargeback' })).concat([{ lid: lids[0]!, label: 'invalid', source: 'audit' }]) } });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.strictSame(r.body, { accepted: 23, invalid: 23, valid: 0 });
  t.ok((await lookup(srv, ip, 'f-y')).ipReputation.ipBotActivity, 'labelled invalid: ipBotActivity on its next lookup');
  const rows = await srv.server.store.all<{ n: bigint; band: string; label: string }>('SELECT count(*) AS n, any_value(band) AS band, any_value(label) AS label FROM feedback_labels WHERE customer_id = $1', [srv.customer.customer_id]);
  t.equal(Number(rows[0]!.n), 22, 'one row per lid (the latest label wins)');
  t.equal(rows[0]!.label, 'invalid');

  const ok = await call(srv.api, 'POST', '/v1/feedback', { token, json: { labels: [{ lid: lids[1], label: 'valid', source: 'audit' }] } });
  t.strictSame(ok.body, { accepted: 1, invalid: 0, valid: 1 });
  const one = await srv.server.store.one<{ label: string; source: string }>('SELECT label, source FROM feedback_labels WHERE customer_id = $1 AND lid_tag IN (SELECT lid_tag FROM feedback_labels WHERE source = $2)', [srv.customer.customer_id, 'audit']);
  t.ok(one, 'relabelled');
});

t.test('the same lids labelled by posts sent at the same time: every post stored, one row per lid', async (t) => {
  // Side by side, two posts replacing the same lid's row conflicted in the store: a 500 for one.
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const { access_token: token } = await login(srv.api, srv.customer.username, srv.customer.password);
  const lids: string[] = [];
  for (let i = 0; i < 3; i++) lids.push((await lookup(srv, `73.162.71.${i + 1}`, `same-${i}`)).lid);
  for (let round = 0; round < 5; round++) {
    const posts = await Promise.all(
      ['chargeback', 'audit', 'retry', 'again'].map((source) => call(srv.api, 'POST', '/v1/feedback', { token, json: { labels: lids.map((lid) => ({ lid, label: 'invalid', source })) } })),
    );
    t.same(posts.map((p) => p.status), [200, 200, 200, 200], `round ${round}: ${posts.map((p) => JSON.stringify(p.body)).join(' ')}`);
  }
  const rows = await srv.server.store.one<{ n: bigint }>('SELECT count(*) AS n FROM feedback_labels WHERE customer_id = $1', [srv.customer.customer_id]);
  t.equal(Number(rows!.n), 3, 'one row per lid');
});

t.test('refusals: no session, another customer\'s lid, forged, malformed; nothing is kept then', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const { access_token: token } = await login(srv.api, srv.customer.username, srv.customer.password);
  const other = await createCustomer(srv.server.store, { name: 'Other', username: 'other-user', password: 'correct horse battery' });
  await srv.server.refreshKeys();
  const mine = (await lookup(srv, '73.162.71.1', 'm-1')).lid;
  const theirs = (await lookup(srv, '73.162.71.2', 'o-1', other)).lid;
  t.ok(theirs, 'the other customer got a lid');
  const flip = mine.slice(0, 30) + (mine[30] === 'A' ? 'B' : 'A') + mine.slice(31);
  const cases: Array<[unknown, RegExp]> = [
    [{ labels: [{ lid: mine, label: 'invalid', source: 's' }, { lid: theirs, label: 'invalid', source: 's' }] }, /labels\[1\]\.lid belongs to another customer/],
    [{ labels: [{ lid: flip, label: 'invalid', source: 's' }] }, /labels\[0\]\.lid is not a lookup id.*signature/],
    [{ labels: [{ lid: 'nope', label: 'invalid', source: 's' }] }, /labels\[0\]\.lid is not a lookup id/],
    [{ labels: [{ lid: mine, label: 'fraud', source: 's' }] }, /labels\[0\]\.label must be/],
    [{ labels: [{ lid: mine, label: 'valid' }] }, /labels\[0\]\.source/],
    [{ labels: [{ lid: mine, label: 'valid', source: 's', extra: 1 }] }, /labels\[0\]: unknown field "extra"/],
    [{ labels: [] }, /non-empty array/],
    [{ label: [] }, /Unknown field "label"/],
    [{ labels: [7] }, /labels\[0\] must be an object/],
    [{ labels: [{ lid: mine, label: 'valid', source: 'a\u0000b' }] }, /labels\[0\]\.source must not contain control characters/],
    [{ labels: [{ lid: mine, label: 'valid', source: 'x\ud800' }] }, /labels\[0\]\.source holds a lone surrogate/],
  ];
  for (const [json, message] of cases) {
    const r = await call(srv.api, 'POST', '/v1/feedback', { token, json });
    t.equal(r.status, 422, String(message));
    t.match(r.body, { error: 'unprocessable', message });
  }
  const noJson = await call(srv.api, 'POST', '/v1/feedback', { token, raw: 'labels', headers: { 'content-type': 'text/plain' } });
  t.equal(noJson.status, 422);
  const anon = await call(srv.api, 'POST', '/v1/feedback', { json: { labels: [{ lid: mine, label: 'invalid', source: 's' }] } });
  t.equal(anon.status, 400, 'no session: the account port\'s one 400');
  t.match(anon.body, { error: 'invalid_session' });
  const n = await srv.server.store.one<{ n: bigint }>('SELECT count(*) AS n FROM feedback_labels');
  t.equal(Number(n!.n), 0, 'a refused request keeps nothing, not even its good items');
});

t.test('1 000 labels in one post at the default store budget: all kept; a body past the limit is a 413 naming it', async (t) => {
  // One INSERT OR REPLACE per label in one transaction ran DuckDB out of memory from about
  // 200 labels at the 48 MB store budget (a 500).
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const { access_token: token } = await login(srv.api, srv.customer.username, srv.customer.password);
  const lids: string[] = [];
  for (let i = 0; i < 1000; i += 50) {
    const batch = await Promise.all(Array.from({ length: 50 }, (_, j) => lookup(srv, `73.163.${(i + j) >> 8}.${((i + j) & 255) || 1}`, `many-${i + j}`)));
    for (const b of batch) lids.push(b.lid);
  }
  t.equal(new Set(lids).size, 1000, '1 000 distinct lids');
  const labels = lids.map((lid, i) => ({ lid, label: i % 3 === 0 ? 'valid' : 'invalid', source: 'chargeback' }));
  const r = await call(srv.api, 'POST', '/v1/feedback', { token, json: { labels } });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.strictSame(r.body, { accepted: 1000, invalid: 666, valid: 334 });
  // Again, relabelled: every row replaced, none added.
  const again = await call(srv.api, 'POST', '/v1/feedback', { token, json: { labels: labels.map((l) => ({ ...l, label: 'invalid', source: 'audit' })) } });
  t.equal(again.status, 200, JSON.stringify(again.body));
  const rows = await srv.server.store.one<{ n: bigint; audit: bigint }>("SELECT count(*) AS n, count(*) FILTER (WHERE source = 'audit' AND label = 'invalid') AS audit FROM feedback_labels WHERE customer_id = $1", [srv.customer.customer_id]);
  t.equal(Number(rows!.n), 1000, 'one row per lid');
  t.equal(Number(rows!.audit), 1000, 'the latest label of each lid kept');

  const tooMany = await call(srv.api, 'POST', '/v1/feedback', { token, json: { labels: [...labels, labels[0]] } });
  t.equal(tooMany.status, 422);
  t.match(tooMany.body.message, /1001 items; send at most 1000/);
  const huge = await call(srv.api, 'POST', '/v1/feedback', { token, json: { labels: labels.map((l) => ({ ...l, source: 'x'.repeat(100) })).concat(labels.map((l) => ({ ...l, source: 'y'.repeat(100) })), labels.map((l) => ({ ...l, source: 'z'.repeat(100) }))) } });
  t.equal(huge.status, 413, JSON.stringify(huge.body));
  t.match(huge.body, { error: 'payload_too_large', message: /feedback body.*at most \d+ bytes.*1000 labels/ });
});
