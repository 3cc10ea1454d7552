// The impression beacon, GET /api/v1/ivt/imp?lid=…, through the real pre-bid listener:
// 204 at once (the GIF with fmt=gif); valid, replay (across threads: the seen-lids table is
// shared), mismatch (another network AND another UA family), expired; the device is the
// peer unless the peer is a trusted proxy (X-Device-IP, X-Forwarded-For,
// X-Device-User-Agent); a garbled or forged lid gets a JSON 400 and shows only in /metrics;
// replays teach the history, so the IP shows ipBotActivity on its next lookups.
import t from 'tap';
import { fetchConforms } from '../helpers/openapi.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { LidCodec, emptyLidFacts } from '../../src/prebid/lid.ts';
import { lidKeyPath } from '../../src/server/lid-secret.ts';
import { parseIp } from '../../src/signals/ip-address.ts';
import { fixtureQuery, withParams } from '../reporting/client.ts';

const CHROME_WIN = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';

async function lookupLid(srv: TestServer, ip: string, uid = `u-${ip}`): Promise<{ lid: string; ipBotActivity: boolean }> {
  const q = withParams(fixtureQuery('residential-desktop-chrome'), { ip, uid, ua: CHROME_WIN })
    .replace('{p}', srv.customer.partner_id)
    .replace('{k}', srv.customer.prebid_key);
  const res = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
  const body = (await res.json()) as { lid: string; ipReputation: { ipBotActivity: boolean } };
  if (res.status !== 200) throw new Error(JSON.stringify(body));
  return { lid: body.lid, ipBotActivity: body.ipReputation.ipBotActivity };
}

async function beacon(srv: TestServer, query: string, headers: Record<string, string> = {}, method = 'GET') {
  const url = `${srv.prebid}/api/v1/ivt/imp?${query}`;
  const res = await fetch(url, { method, headers });
  // The GIF is not text: its type is what the description checks.
  fetchConforms(method, url, res, res.headers.get('content-type') === 'image/gif' ? '' : await res.clone().text(), ['prebid']);
  return res;
}

/** The device of the lookup, named by the (trusted, loopback) caller. */
const sameDevice = (ip: string) => ({ 'x-device-ip': ip, 'x-device-user-agent': CHROME_WIN });

async function outcomes(srv: TestServer): Promise<Record<string, number>> {
  const text = await (await fetch(`${srv.metrics}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^ivtd_impression_beacons_total\{outcome="([a-z]+)"\} (\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

t.test('valid, replay across threads, GIF, and what /metrics counts', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  const { lid } = await lookupLid(srv, '73.162.20.5');
  const first = await beacon(srv, `lid=${lid}&cb=12345`, sameDevice('73.162.20.5'));
  t.equal(first.status, 204, 'valid: 204');
  t.equal(await first.text(), '', 'no body');
  t.equal(first.headers.get('cache-control'), 'no-store');
  // Fresh connections each: with two threads some land on the other one; still replays.
  for (let i = 0; i < 4; i++) {
    const again = await fetch(`${srv.prebid}/api/v1/ivt/imp?lid=${lid}`, { headers: { ...sameDevice('73.162.20.5'), connection: 'close' } });
    t.equal(again.status, 204, 'a replay answers the same');
  }
  const { lid: lid2 } = await lookupLid(srv, '73.162.20.6');
  const gif = await beacon(srv, `lid=${lid2}&fmt=gif`, sameDevice('73.162.20.6'));
  t.equal(gif.status, 200);
  t.equal(gif.headers.get('content-type'), 'image/gif');
  const bytes = Buffer.from(await gif.arrayBuffer());
  t.equal(bytes.length, 43, 'a 1×1 GIF');
  t.equal(bytes.subarray(0, 6).toString('latin1'), 'GIF89a');
  await until('beacon metrics', async () => {
    const o = await outcomes(srv);
    return o.valid === 2 && o.replay === 4;
  });
  t.pass('2 valid, 4 replays in /metrics');
});

// navigator.sendBeacon always POSTs (Content-Length: 0 with no data; text/plain or a Blob
// with some): the same beacon. A body is never read; its connection closes after the answer.
t.test('POST, as navigator.sendBeacon sends: judged like GET; a body is left unread and its connection closed', async (t) => {
  const srv = await startTestServer({ threads: 1 });
  t.teardown(() => srv.stop());
  const port = Number(new URL(srv.prebid).port);
  const { lid } = await lookupLid(srv, '73.162.21.5');
  const { lid: lid2 } = await lookupLid(srv, '73.162.21.6');
  const head = (l: string, ip: string, extra = '') =>
    `POST /api/v1/ivt/imp?lid=${l} HTTP/1.1\r\nHost: a\r\nX-Device-IP: ${ip}\r\nX-Device-User-Agent: ${CHROME_WIN}\r\n${extra}`;
  // No data: an empty body, then a GET on the same connection is read as the next request.
  const empty = await rawExchange(port, `${head(lid, '73.162.21.5', 'Content-Length: 0\r\n')}\r\nGET /health-check HTTP/1.1\r\nHost: a\r\n\r\n`, { until: /204 No Content[^]*\r\n\r\nHTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n/ });
  t.match(empty.text, /^HTTP\/1\.1 204 No Content\r\n/, 'an empty POST: 204');
  t.match(empty.text, /\r\n\r\nHTTP\/1\.1 200 OK\r\n/, 'and the connection goes on');
  // Data (sendBeacon(url, "x=1")): 204, the body not taken for a request, the connection closed.
  const data = await rawExchange(port, `${head(lid2, '73.162.21.6', 'Content-Type: text/plain;charset=UTF-8\r\nContent-Length: 14\r\n')}\r\nGET /nope HTTP`);
  t.match(data.text, /^HTTP\/1\.1 204 No Content\r\n/, 'a POST with a body: 204');
  t.notMatch(data.text, /404|400/, 'its body was never read as a request');
  t.ok(data.closed, 'the connection closed after the answer');
  const replay = await fetch(`${srv.prebid}/api/v1/ivt/imp?lid=${lid}`, { method: 'POST', headers: sameDevice('73.162.21.5') });
  t.equal(replay.status, 204, 'fetch POST of the first lid again');
  await until('two valid, one replay', async () => {
    const o = await outcomes(srv);
    return o.valid === 2 && o.replay === 1;
  });
  t.pass('the POSTs are judged: 2 valid, 1 replay in /metrics');
});

t.test('garbled, forged and foreign lids: JSON 400, never counted as impressions', async (t) => {
  const srv = await startTestServer({});
  t.teardown(() => srv.stop());
  const { lid } = await lookupLid(srv, '73.162.20.7');
  const flip = lid.slice(0, 20) + (lid[20] === 'A' ? 'B' : 'A') + lid.slice(21);
  const cases: Array<[string, string, string]> = [
    ['', 'missing_parameter', 'no lid'],
    ['lid=', 'missing_parameter', 'an empty lid'],
    ['lid=hello', 'invalid_parameter', 'too short'],
    [`lid=${lid.slice(0, -2)}%41%41`, 'invalid_parameter', 'percent-encoded'],
    [`lid=${flip}`, 'invalid_parameter', 'one character changed'],
    [`lid=${lid}&fmt=png`, 'invalid_parameter', 'an unknown format'],
  ];
  for (const [q, code, what] of cases) {
    const res = await beacon(srv, q);
    t.equal(res.status, 400, what);
    t.match(await res.json(), { error: code, message: /lid|fmt/ }, what);
  }
  const other = new LidCodec(new Uint8Array(16).fill(1));
  const x = { customerId: srv.customer.customer_id, band: 'low', at: Date.now(), ipNet: 0, uaFamily: 0, device: 0, ipHi: 0, ipLo: 0, uidHi: 0, uidLo: 0, ifaHi: 0, ifaLo: 0, tupleHi: 0, tupleLo: 0 };
  const foreign = await beacon(srv, `lid=${other.make(x)}`);
  t.equal(foreign.status, 400, 'a lid signed with another secret');
  t.match(await foreign.json(), { error: 'invalid_parameter', message: /signature/ });
  const put = await beacon(srv, `lid=${lid}`, {}, 'PUT');
  t.equal(put.status, 405);
  t.equal(put.headers.get('allow'), 'GET, POST', 'GET, and POST for navigator.sendBeacon');
  t.match(await put.json(), { error: 'method_not_allowed' });
  const upper = await fetch(`${srv.prebid}/api/v1/ivt/IMP?lid=${lid}`);
  t.equal(upper.status, 400);
  t.match(await upper.json(), { error: 'uppercase_not_allowed' });
  await until('refusals in /metrics', async () => (await outcomes(srv)).refused === cases.length + 2);
  const o = await outcomes(srv);
  t.notOk(o.valid || o.replay || o.mismatch || o.expired, 'none judged an impression');
  // The genuine lid still counts once.
  t.equal((await beacon(srv, `lid=${lid}`, sameDevice('73.162.20.7'))).status, 204);
  await until('the genuine one', async () => (await outcomes(srv)).valid === 1);
  t.pass();
});

t.test('mismatch needs another network AND another UA family; trusted proxies name the device', async (t) => {
  const srv = await startTestServer({});
  t.teardown(() => srv.stop());
  const ip = '73.162.30.10';
  const judged: string[] = [];
  const expect = async (headers: Record<string, string>, outcome: string, what: string) => {
    const before = await outcomes(srv);
    const { lid } = await lookupLid(srv, ip, `u-${judged.length}`);
    const res = await beacon(srv, `lid=${lid}`, headers);
    t.equal(res.status, 204, what);
    judged.push(outcome);
    await until(what, async () => ((await outcomes(srv))[outcome] ?? 0) === (before[outcome] ?? 0) + 1);
    t.pass(`${what}: ${outcome}`);
  };
  await expect({ 'x-device-ip': '73.162.30.99', 'x-device-user-agent': CHROME_WIN }, 'valid', 'same /24, same UA');
  await expect({ 'x-device-ip': '198.51.100.7', 'x-device-user-agent': CHROME_WIN }, 'valid', 'another network, same UA family');
  await expect({ 'x-device-ip': '73.162.30.200', 'x-device-user-agent': IPHONE }, 'valid', 'same /24, another UA');
  await expect({ 'x-device-ip': '198.51.100.7', 'x-device-user-agent': IPHONE }, 'mismatch', 'another network and another UA family');
  await expect({ 'x-forwarded-for': '198.51.100.7, 127.0.0.1', 'user-agent': IPHONE }, 'mismatch', 'X-Forwarded-For: the nearest untrusted hop');
  await expect({ 'x-forwarded-for': '10.9.9.9, 73.162.30.44', 'user-agent': CHROME_WIN }, 'valid', 'X-Forwarded-For: the left hop is the client\'s word, not the device');
  await expect({ 'user-agent': CHROME_WIN }, 'valid', 'no headers: the peer (loopback) and its UA; same family');
  const bad = await beacon(srv, `lid=${(await lookupLid(srv, ip, 'u-bad')).lid}`, { 'x-device-ip': 'not-an-ip' });
  t.equal(bad.status, 400);
  t.match(await bad.json(), { error: 'invalid_parameter', message: /X-Device-IP/ });

  const strict = await startTestServer({ trustedProxies: '10.0.0.0/8' });
  t.teardown(() => strict.stop());
  const { lid } = await lookupLid(strict, ip);
  t.equal((await beacon(strict, `lid=${lid}`, { 'x-device-ip': ip, 'x-device-user-agent': CHROME_WIN, 'user-agent': IPHONE })).status, 204);
  await until('an untrusted peer\'s headers are ignored', async () => (await outcomes(strict)).mismatch === 1);
  t.pass('the loopback peer is not trusted there: its own address and User-Agent are the device');
});

t.test('expired: older than --imp-ttl; not a replay however often', async (t) => {
  const srv = await startTestServer({ impTtl: 600 });
  t.teardown(() => srv.stop());
  const codec = new LidCodec(new Uint8Array(readFileSync(lidKeyPath(srv.dataDir))));
  const x = {
    customerId: srv.customer.customer_id, band: 'medium', at: Date.now() - 601_000, ipNet: codec.ipNetDigest(parseIp('73.162.40.1')!),
    uaFamily: 0, device: 0, ipHi: 0, ipLo: 0, uidHi: 0, uidLo: 0, ifaHi: 0, ifaLo: 0, tupleHi: 0, tupleLo: 0,
  };
  const old = codec.make(x);
  t.equal(codec.read(old, emptyLidFacts()), '');
  for (let i = 0; i < 2; i++) t.equal((await beacon(srv, `lid=${old}`, sameDevice('73.162.40.1'))).status, 204);
  x.at = Date.now() - 500_000;
  t.equal((await beacon(srv, `lid=${codec.make(x)}`, { 'x-device-ip': '73.162.40.1' })).status, 204);
  await until('expired twice, the on-time one valid', async () => {
    const o = await outcomes(srv);
    return o.expired === 2 && o.valid === 1;
  });
  t.pass();
});

t.test('an IP whose impressions keep being replayed shows ipBotActivity on its next lookups', async (t) => {
  const srv = await startTestServer({});
  t.teardown(() => srv.stop());
  const replayed = '73.162.50.10';
  const honest = '73.162.51.10';
  for (let i = 0; i < 25; i++) {
    const a = await lookupLid(srv, replayed, `r-${i}`);
    const b = await lookupLid(srv, honest, `h-${i}`);
    if (i === 0) t.notOk(a.ipBotActivity, 'the replayed IP starts clean');
    t.notOk(b.ipBotActivity, 'the honest IP stays clean');
    t.equal((await beacon(srv, `lid=${b.lid}`, sameDevice(honest))).status, 204);
    for (let k = 0; k < 3; k++) t.equal((await beacon(srv, `lid=${a.lid}`, sameDevice(replayed))).status, 204);
  }
  t.ok((await lookupLid(srv, replayed, 'r-next')).ipBotActivity, 'the replayed IP: ipBotActivity');
  t.notOk((await lookupLid(srv, honest, 'h-next')).ipBotActivity, 'the honest IP: none');
});

t.test('an IFA whose impressions keep being replayed shows the history signal on its next lookups', async (t) => {
  const srv = await startTestServer({});
  t.teardown(() => srv.stop());
  const replayedIfa = '6d92078a-8246-4ba4-ae5b-76104861e7dc';
  const honestIfa = '9b2a1f0e-3c4d-4e5f-8a6b-7c8d9e0f1a2b';
  /** A lookup from a fresh IP and uid each time: only the IFA carries history from one to the next. */
  const lookup = async (ifa: string, ip: string, uid: string) => {
    const q = withParams(fixtureQuery('residential-desktop-chrome'), { ip, uid, ifa, ua: CHROME_WIN })
      .replace('{p}', srv.customer.partner_id)
      .replace('{k}', srv.customer.prebid_key);
    const res = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
    const body = (await res.json()) as { lid: string; components: { p_hist: number } };
    t.equal(res.status, 200);
    return body;
  };
  for (let i = 0; i < 25; i++) {
    const a = await lookup(replayedIfa, `73.163.${i}.10`, `ra-${i}`);
    const b = await lookup(honestIfa, `73.164.${i}.10`, `hb-${i}`);
    if (i === 0) t.equal(a.components.p_hist, b.components.p_hist, 'both IFAs start alike');
    t.equal((await beacon(srv, `lid=${b.lid}`, sameDevice(`73.164.${i}.10`))).status, 204);
    for (let k = 0; k < 3; k++) t.equal((await beacon(srv, `lid=${a.lid}`, sameDevice(`73.163.${i}.10`))).status, 204);
  }
  await until('every beacon judged', async () => {
    const o = await outcomes(srv);
    return o.replay === 50 && o.valid === 50;
  });
  const replayed = await lookup(replayedIfa, '73.165.0.10', 'ra-next');
  const honest = await lookup(honestIfa, '73.165.1.10', 'hb-next');
  t.ok(replayed.components.p_hist > honest.components.p_hist + 0.1, `the replayed IFA's next lookup carries history (p_hist ${replayed.components.p_hist} vs ${honest.components.p_hist})`);
});
