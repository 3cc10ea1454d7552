// POST /api/v1/ivt/ortb through the real pre-bid listener. Fixtures
// (test/fixtures/ortb/{exemplary,supplemental}/*.json) are
//   { "description", "request" (a BidRequest), "query"? (the equivalent GET lookup without
//     p, k, node), "status", "expect" (a subset of the answer; "/regex/" strings match) }.
// Every fixture with a `query` runs on two fresh servers in the same order, one by ORTB and
// one by GET, so both see the same history: their verdicts must be equal. Then hostile
// bodies: each gets a JSON 4xx and the thread keeps answering.
import t, { type Test } from 'tap';
import { fetchConforms } from '../helpers/openapi.ts';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { ORTB_MAX_BODY_BYTES, ORTB_MAX_JSON_BYTES } from '../../src/prebid/ortb/body.ts';

interface Fixture {
  description: string;
  request: unknown;
  query?: string;
  status: number;
  expect: Record<string, unknown>;
}

const DIR = join(import.meta.dirname, '..', 'fixtures', 'ortb');
const fixtures: [string, Fixture][] = [];
for (const kind of ['exemplary', 'supplemental']) {
  for (const f of readdirSync(join(DIR, kind)).sort()) fixtures.push([`${kind}/${f}`, JSON.parse(readFileSync(join(DIR, kind, f), 'utf8'))]);
}

function matches(t: Test, got: unknown, want: unknown, at: string): void {
  if (typeof want === 'string' && want.length > 1 && want.startsWith('/') && want.endsWith('/')) {
    t.match(String(got), new RegExp(want.slice(1, -1)), at);
  } else if (Array.isArray(want)) {
    // Same length, each element matched in order (so an element may hold a "/regex/" string).
    t.ok(Array.isArray(got) && got.length === want.length, `${at}: ${JSON.stringify(got)} has ${want.length} elements`);
    want.forEach((w, i) => matches(t, (got as unknown[] | undefined)?.[i], w, `${at}[${i}]`));
  } else if (typeof want === 'object' && want !== null) {
    for (const [k, v] of Object.entries(want)) matches(t, (got as Record<string, unknown> | undefined)?.[k], v, `${at}.${k}`);
  } else t.equal(got, want, at);
}

const auth = (s: TestServer) => `p=${s.customer.partner_id}&k=${s.customer.prebid_key}`;

async function ortb(s: TestServer, body: string | Buffer, headers: Record<string, string> = {}, query = `${auth(s)}&node=bidder-eu-1`) {
  const url = `${s.prebid}/api/v1/ivt/ortb?${query}`;
  const r = await fetch(url, { method: "POST", body: typeof body === "string" ? body : new Uint8Array(body), headers: { 'content-type': 'application/json', ...headers } });
  const text = await r.text();
  fetchConforms('POST', url, r, text, ['prebid']);
  return { status: r.status, text, json: text === '' ? null : (JSON.parse(text) as Record<string, unknown>) };
}

const VERDICT = ['botRisk', 'components', 'ipReputation', 'uaValid', 'schain'];

t.test('fixtures: expected answers, and the same verdict as the equivalent GET lookup', async (t) => {
  const a = await startTestServer({ threads: 1 });
  t.teardown(() => a.stop());
  const b = await startTestServer({ threads: 1 });
  t.teardown(() => b.stop());
  for (const [name, f] of fixtures) {
    const got = await ortb(a, JSON.stringify(f.request));
    t.equal(got.status, f.status, `${name}: status (${f.description}) ${got.text}`);
    matches(t, got.json, f.expect, name);
    if (f.status === 200) {
      t.equal(got.json!.id, (f.request as { id: string }).id, `${name}: id echoed`);
      for (const r of got.json!.reasons as { code: string; class: string }[]) t.match(r.class, /^(GIVT|SIVT|POLICY)$/, `${name}: ${r.code} classed`);
      const band = (got.json!.botRisk as { band: string }).band;
      if (band !== 'high') t.notOk('nbr' in got.json!, `${name}: no nbr below high`);
      else t.match(String(got.json!.nbr), /^[345]$/, `${name}: nbr 3, 4 or 5 when high`);
    }
    if (f.query === undefined) continue;
    const g = await fetch(`${b.prebid}/api/v1/ivt/lookup?${auth(b)}&node=bidder-eu-1&${f.query}`);
    const gj = (await g.json()) as Record<string, unknown>;
    t.equal(g.status, 200, `${name}: GET equivalent answers`);
    for (const k of VERDICT) t.same(got.json![k], gj[k], `${name}: ${k} same by ORTB and GET`);
  }
});

t.test('gzip, size limits, auth and hostile bodies; the thread keeps answering', async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const good = JSON.stringify(fixtures.find(([n]) => n === 'exemplary/web-banner.json')![1].request);
  const ok = await ortb(s, good);
  t.equal(ok.status, 200, 'plain body');

  const gz = await ortb(s, gzipSync(good), { 'content-encoding': 'gzip' });
  t.equal(gz.status, 200, 'gzip body inflated');
  t.equal(gz.json!.id, 'req-web-1', 'the inflated BidRequest was read (id echoed)');

  const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20));
  t.ok(bomb.length < ORTB_MAX_BODY_BYTES, 'the bomb itself is under the body limit');
  const b = await ortb(s, bomb, { 'content-encoding': 'gzip' });
  t.equal(b.status, 413, `gzip bomb stops at ${ORTB_MAX_JSON_BYTES} inflated bytes`);
  t.equal(b.json!.error, 'payload_too_large');

  const big = await ortb(s, JSON.stringify({ id: 'x', pad: 'a'.repeat(ORTB_MAX_BODY_BYTES) }));
  t.equal(big.status, 413, 'body over the limit');
  t.match(big.json!.message, /^The request body is \d+ bytes, over the limit/, 'refused from its Content-Length, before reading the body');

  t.equal((await ortb(s, 'not gzip', { 'content-encoding': 'gzip' })).status, 400, 'bad gzip');
  t.equal((await ortb(s, good, { 'content-type': 'text/plain' })).status, 415, 'wrong media type');
  t.equal((await ortb(s, good, {}, `p=${s.customer.partner_id}&k=wrong&node=n`)).status, 401, 'same authentication');
  const get = await fetch(`${s.prebid}/api/v1/ivt/ortb?${auth(s)}`);
  t.equal(get.status, 405, 'GET on the ORTB path');

  const hostile: [string, string][] = [
    ['not JSON', 'hello'],
    ['truncated', good.slice(0, 100)],
    ['deep nesting', '['.repeat(5000) + ']'.repeat(5000)],
    ['deep objects', '{"a":'.repeat(100) + '1' + '}'.repeat(100)],
    ['huge array', JSON.stringify({ id: 'x', imp: new Array(5000).fill(0) })],
    ['duplicate keys', '{"id":"a","id":"b"}'],
    ['__proto__ key', '{"id":"a","device":{"__proto__":{"ua":"x"}}}'],
    ['constructor key', '{"id":"a","constructor":{"prototype":{}}}'],
    ['array body', '[1,2]'],
    ['string body', '"x"'],
    ['empty body', ''],
    ['no imp (and a wrong-typed device)', JSON.stringify({ id: 'a', device: 'x' })],
    ['wrong type: imp', JSON.stringify({ id: 'a', imp: {} })],
    ['empty imp', JSON.stringify({ id: 'a', imp: [] })],
    ['no imp (and a wrong-typed ua)', JSON.stringify({ id: 'a', device: { ua: 5 } })],
    ['wrong type: id', JSON.stringify({ id: 5, imp: [{ id: '1' }] })],
    ['text after value', '{"id":"a"} x'],
    ['shaped like an internal error', '{"status":200,"code":"unauthorized","message":"x"}'],
  ];
  for (const [what, body] of hostile) {
    const r = await ortb(s, body);
    t.equal(r.status, 400, `${what}: 400`);
    t.ok(r.json !== null && typeof r.json.error === 'string' && typeof r.json.message === 'string', `${what}: JSON error ${r.text.slice(0, 160)}`);
  }
  // A string cut inside an emoji (an escaped lone surrogate: JSON.stringify writes one) is
  // valid JSON: read as U+FFFD, in a field ivtd reads (the id it echoes, the UA) or not.
  const cut = JSON.parse(good) as { id: string; site: Record<string, unknown>; device: { ua: string } };
  cut.id = 'req-cut-\udc00';
  cut.site.keywords = 'news,sport,\ud83d';
  cut.device.ua += ' \ud83d';
  const cutText = JSON.stringify(cut);
  t.match(cutText, /\\ud83d"/, 'the body carries the escaped lone half');
  const c = await ortb(s, cutText);
  t.equal(c.status, 200, `a lone surrogate is no 400: ${c.text.slice(0, 160)}`);
  t.equal(c.json!.id, 'req-cut-\ufffd', 'the id echoed with U+FFFD for its lone half');
  t.equal(Object.prototype.hasOwnProperty.call({}, 'ua'), false, 'no prototype pollution in the test process');
  t.equal((await fetch(`${s.prebid}/health-check`)).status, 200, 'thread still healthy');
  t.equal((await ortb(s, good)).status, 200, 'and still answers bid requests');
});

t.test('one transaction counted per bid request, by the node of the query', async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const good = JSON.stringify(fixtures.find(([n]) => n === 'exemplary/web-banner.json')![1].request);
  for (let i = 0; i < 3; i++) t.equal((await ortb(s, good, {}, `${auth(s)}&node=ortb-node`)).status, 200);
  t.equal((await ortb(s, '{"id":"a"}', {}, `${auth(s)}&node=ortb-node`)).status, 400, 'a refused bid request is no transaction');
  const today = new Date().toISOString().slice(0, 10);
  const basic = 'Basic ' + Buffer.from(`${s.customer.customer_id}:${s.customer.reporting_key}`).toString('base64');
  let total = -1;
  await until(
    'the counts reach the report',
    async () => {
      await s.server.reporting!.flush();
      const r = await fetch(`${s.reporting}/v1/report?start_date=${today}&end_date=${today}&group_by=node`, { headers: { authorization: basic } });
      const body = (await r.json()) as { rows: { node: string; total_transactions: number }[] };
      total = body.rows.find((row) => row.node === 'ortb-node')?.total_transactions ?? -1;
      return total >= 3;
    },
    15_000,
  ).catch(() => undefined);
  t.equal(total, 3, 'three bid requests, three transactions');
});

t.test('the admin explain takes a bid request too, on the account port', async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const r0 = await fetch(`${s.api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ username: s.customer.username, password: s.customer.password }) });
  const token = ((await r0.json()) as { access_token: string }).access_token;
  const spider = fixtures.find(([n]) => n === 'supplemental/known-spider-nbr-3.json')![1].request;
  const explain = (body: string, query = `${auth(s)}&node=n`) =>
    fetch(`${s.api}/v1/account/explain/ortb?${query}`, { method: 'POST', body, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } });
  const r = await explain(JSON.stringify(spider));
  t.equal(r.status, 200);
  const body = (await r.json()) as { status: number; reasons: string[]; transaction: string; category: string; categories: { category: string; reasons: string[] }[]; response: { id: string; nbr: number } };
  t.equal(body.category, 'declared_crawler', 'the reporting category, as for a GET lookup');
  t.match(body.categories, [{ category: 'declared_crawler', reasons: ['ua_declared_bot'] }], 'reasons grouped by category');
  t.equal(body.status, 200);
  t.equal(body.response.id, 'req-gb-1');
  t.equal(body.response.nbr, 3);
  t.match(body.reasons.join(' '), /ua_declared_bot/);
  t.equal(body.transaction, 'givt');
  const missing = await explain(JSON.stringify({ id: 'x', device: { ip: '73.162.10.20' } }));
  t.match(await missing.json(), { status: 400, response: { error: 'missing_parameter' } }, 'a refused bid request is explained as refused');
  t.equal((await explain('[1')).status, 400, 'a hostile body is a 400 here too');
  const suaOnly = fixtures.find(([n]) => n === 'supplemental/sua-without-ua.json')![1].request;
  const ex = (await (await explain(JSON.stringify(suaOnly))).json()) as { signals: { ua: { malformed: boolean; os: string; device: string } } };
  t.match(ex.signals.ua, { malformed: false, os: 'android', device: 'mobile' }, 'no UA string: the device its sua describes, not an empty, malformed UA');
  const other = await fetch(`${s.api}/v1/account/explain/ortb?${auth(s)}&node=n`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  t.equal(other.status, 400, 'no session → 400 invalid_session');
});

t.test('mapped strings are bounded like the GET form\'s values', async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const bid = structuredClone(fixtures.find(([n]) => n === 'exemplary/web-banner.json')![1].request) as { device: { ua: string } };
  bid.device.ua = 'Mozilla/5.0 ' + 'x'.repeat(3000);
  const r = await ortb(s, JSON.stringify(bid));
  t.equal(r.status, 400);
  t.match(r.json, { error: 'invalid_parameter', message: /device\.ua.*2048/ });
});

t.test("the query's sid, pub, uid and dvt fill what the bid request lacks; the body's own values win", async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const bare = { id: 'req-q', imp: [{ id: '1', banner: { w: 300, h: 250 } }], device: { ip: '73.162.10.40', ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36' } };
  const without = await ortb(s, JSON.stringify(bare));
  t.equal(without.status, 200, 'no pub, uid, dvt, schain: still a verdict');
  t.same(without.json!.missing, ['device.devicetype', 'user.id', 'site.publisher.id', 'source.schain']);
  const filled = await ortb(s, JSON.stringify(bare), {}, `${auth(s)}&node=n&pub=pub-q&uid=u-q&dvt=2&sid=exchange1.example`);
  t.equal(filled.status, 200);
  t.same(filled.json!.missing, ['source.schain'], 'pub, uid and dvt from the query');
  t.ok((filled.json!.botRisk as { confidence: number }).confidence > (without.json!.botRisk as { confidence: number }).confidence, 'more to rest on, more confidence');
  const phone = await ortb(s, JSON.stringify({ ...bare, device: { ...bare.device, devicetype: 4 } }), {}, `${auth(s)}&node=n&dvt=2`);
  t.equal((phone.json!.reasons as { code: string }[]).some((r) => r.code === 'ua_inconsistent'), true, "the body's devicetype 4 wins over the query's 2 (a Windows UA is no phone)");
  const badDvt = await ortb(s, JSON.stringify(bare), {}, `${auth(s)}&node=n&dvt=12`);
  t.equal(badDvt.status, 400, "the query's own bad value is refused");
  t.match(badDvt.json, { error: 'invalid_parameter', message: /dvt/ });
  const noNode = await ortb(s, JSON.stringify(bare), {}, auth(s));
  t.match(noNode.json, { error: 'missing_parameter', message: /node/ }, 'node stays required (the query names the bidder node)');
});

t.test("nbr 17 when the customer's policy blocks a supply-chain node", async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const r0 = await fetch(`${s.api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ username: s.customer.username, password: s.customer.password }) });
  const token = ((await r0.json()) as { access_token: string }).access_token;
  const put = (entries: unknown[]) => fetch(`${s.api}/v1/policy`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ entries }) });
  const web = fixtures.find(([n]) => n === 'exemplary/web-banner.json')![1].request as { source: { schain: { nodes: { asi: string; sid: string }[] } } };
  const node = web.source.schain.nodes[0]!;
  t.equal((await put([{ kind: 'seller', value: `${node.asi}:${node.sid}`, action: 'deny' }])).status, 200, 'seller entry set');
  const r = await ortb(s, JSON.stringify(web));
  t.match(r.json, { botRisk: { band: 'high' }, nbr: 17, reasons: [{ code: 'denylisted', class: 'POLICY' }] });
  t.equal((await put([{ kind: 'ip', value: '0.0.0.0/0', action: 'deny' }])).status, 200, 'an IP entry instead');
  t.match((await ortb(s, JSON.stringify(web))).json, { nbr: 4 }, 'any other deny: 4');
});

t.test("a stitching provider's range the customer declares (policy kind ssai) is not condemned as a data centre on stitched imps", async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const r0 = await fetch(`${s.api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ username: s.customer.username, password: s.customer.password }) });
  const token = ((await r0.json()) as { access_token: string }).access_token;
  const stitched = fixtures.find(([n]) => n === 'supplemental/ssai-datacenter-ip.json')![1].request as { imp: { ssai?: number }[]; device: { ip: string } };
  const codes = async (bid: unknown) => ((await ortb(s, JSON.stringify(bid))).json!.reasons as { code: string }[]).map((r) => r.code);
  t.ok((await codes(stitched)).includes('ssai_spoof'), 'undeclared: the SSAI spoof');
  const put = await fetch(`${s.api}/v1/policy`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ entries: [{ kind: 'ssai', value: `${stitched.device.ip}/32`, action: 'allow' }] }) });
  t.equal(put.status, 200, 'ssai entry set');
  const declared = await codes(stitched);
  t.notOk(declared.includes('ssai_spoof') || declared.includes('asn_hosting'), `declared: no data-centre reason (${declared.join(', ')})`);
  const notStitched = structuredClone(stitched);
  delete notStitched.imp[0]!.ssai;
  t.ok((await codes(notStitched)).includes('asn_hosting'), 'the same range without imp.ssai is a data centre as before');
  const library = structuredClone(stitched) as unknown as { device: { ua: string } };
  library.device.ua = 'okhttp/4.12.0';
  t.ok((await codes(library)).includes('ssai_spoof'), "a library's UA from the declared range is still the spoof");
});

// Where the body ends must be certain, or the rest of it would be read as the next request on
// the connection (a desync a proxy in front could be led into). Raw sockets: nothing added.
t.test('framing: one Content-Length or chunked; two lengths, none, or another transfer coding are refused and the connection closed', async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const port = Number(new URL(s.prebid).port);
  const good = JSON.stringify(fixtures.find(([n]) => n === 'exemplary/web-banner.json')![1].request);
  const n = Buffer.byteLength(good);
  // Everything the server sends until it closes (or 3 s pass: then `open` is true).
  const exchange = async (head: string, body: string) => {
    const r = await rawExchange(port, `POST /api/v1/ivt/ortb?${auth(s)}&node=bidder-eu-1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n${head}\r\n${body}`);
    return { text: r.text, open: !r.closed };
  };
  const chunked = await exchange('Transfer-Encoding: chunked\r\n', `${n.toString(16)}\r\n${good}\r\n0\r\n\r\n`);
  t.match(chunked.text, /^HTTP\/1\.1 200 OK\r\n[^]*"id":"req-web-1"/, 'chunked: a verdict');
  t.ok(chunked.open, 'chunked: the connection stays open');

  for (const [what, head] of [['the real length first', `Content-Length: ${n}\r\nContent-Length: 5\r\n`], ['the wrong one first', `Content-Length: 5\r\nContent-Length: ${n}\r\n`]] as const) {
    const two = await exchange(head, good);
    t.match(two.text, /^HTTP\/1\.1 400 Bad Request\r\n[^]*\{"error":"invalid_request","message":"The request has more than one Content-Length header: send one\."\}$/, `two Content-Lengths, ${what}: 400, one answer`);
    t.notOk(two.open, `two Content-Lengths, ${what}: closed`);
  }
  const gz = gzipSync(good).toString('latin1');
  const coded = await exchange('Transfer-Encoding: gzip, chunked\r\n', `${gz.length.toString(16)}\r\n${gz}\r\n0\r\n\r\n`);
  t.match(coded.text, /^HTTP\/1\.1 501 Not Implemented\r\n[^]*\{"error":"not_implemented","message":"Transfer-Encoding \\"gzip, chunked\\" is not supported[^"]*"\}$/, 'a transfer coding besides chunked: 501, one answer');
  t.notOk(coded.open, 'a transfer coding besides chunked: closed');
  const none = await exchange('', good);
  t.match(none.text, /^HTTP\/1\.1 411 Length Required\r\n[^]*\{"error":"length_required","message":"The request has no Content-Length[^"]*"\}$/, 'no length: 411, one answer (the body is not read as a request)');
  t.notOk(none.open, 'no length: closed');
  t.equal((await ortb(s, good)).status, 200, 'the thread still answers bid requests');
});

t.test('answers held to the end of the event loop turn: each connection gets its own, in order; a request pipelined behind a POST closes the connection', async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const port = Number(new URL(s.prebid).port);
  const bodies = fixtures.filter(([, f]) => f.status === 200).map(([, f]) => f.request as { id: string });
  t.ok(bodies.length >= 5, 'several fixtures with a verdict');
  // Many connections at once: answers found in one turn are written together, each to its own client.
  const all = await Promise.all(
    Array.from({ length: 40 }, (_, i) => {
      const bid = { ...bodies[i % bodies.length]!, id: `held-${i}` };
      return ortb(s, JSON.stringify(bid)).then((r) => ({ i, status: r.status, id: r.json?.id }));
    }),
  );
  t.same(
    all.filter((r) => r.status !== 200 || r.id !== `held-${r.i}`),
    [],
    'forty bid requests at once: every one answered 200 with its own id',
  );
  // One keep-alive connection, a POST after the previous answer came: both answered, in order.
  const head = (body: string) => `POST /api/v1/ivt/ortb?${auth(s)}&node=bidder-eu-1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const first = JSON.stringify({ ...bodies[0]!, id: 'first' });
  const second = JSON.stringify({ ...bodies[1]!, id: 'second' });
  const seq = await new Promise<string>((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(head(first)));
    let text = '';
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => {
      text += d;
      if (/"id":"first"/.test(text) && !text.includes('"id":"second"') && !text.includes('sent-second')) {
        text += 'sent-second';
        sock.write(head(second));
      }
      if (text.includes('"id":"second"')) {
        sock.destroy();
        resolve(text);
      }
    });
    sock.on('error', reject);
    setTimeout(() => reject(new Error(`no second answer: ${text}`)), 5000);
  });
  t.match(seq, /^HTTP\/1\.1 200 OK\r\n[^]*"id":"first"[^]*HTTP\/1\.1 200 OK\r\n[^]*"id":"second"/, 'keep-alive: the second POST answered after the first');
  // RFC 9112 9.3.2: a client should not pipeline behind a POST. uWebSockets.js closes a
  // connection whose next request comes while an answer is still held; nothing else breaks.
  const piped = await rawExchange(port, head(first) + `GET /api/v1/ivt/lookup?${auth(s)}&ip=8.8.8.8&ua=curl HTTP/1.1\r\nHost: a\r\n\r\n`);
  t.ok(piped.closed, 'a request pipelined behind a POST: the connection is closed');
  t.equal((await ortb(s, first)).status, 200, 'the thread still answers bid requests');
});
