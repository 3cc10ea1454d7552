// Activity-based IVT end to end: a real server, real lookups, the real history. One uid or
// one IFA far beyond what a person produces reaches `high` on its own (clean UA, clean
// residential IP), and so does one address whose users each do (its cookie-less users
// told apart by UA: test/signals/score.test.ts, on the real history with a clock); a busy
// carrier-NAT address of many ordinary users does not. The server runs two lookup threads
// where it matters: history is shared, so a client spread over both is seen whole.
import t from 'tap';
import { getPipelined } from '../helpers/pipelined.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const ROKU = 'Roku/DVP-13.0 (13.0.0.4100-46)';

interface Lookup { ip: string; ua: string; uid: string; extra?: string }
interface Answer { botRisk: { band: string; score: number }; components: { p_hist: number } }
interface Explained { response: Answer; reasons: string[]; transaction: string }

function query(srv: TestServer, l: Lookup): string {
  return `p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&pub=pub-1&node=n1&ip=${l.ip}` +
    `&ua=${encodeURIComponent(l.ua)}&uid=${encodeURIComponent(l.uid)}&sid=exchange.example&adt=1${l.extra ?? '&dvt=2'}`;
}

/**
 * Sends every lookup over `parallel` connections, several pipelined on each (the client's
 * cost kept small: test/helpers/pipelined.ts); every answer must be a 200. Returns the
 * answer to the last one sent.
 */
async function send(srv: TestServer, lookups: Lookup[], parallel = 16): Promise<Answer> {
  const answers = await getPipelined(srv.server.ports.prebid, lookups.map((l) => `/api/v1/ivt/lookup?${query(srv, l)}`), { connections: parallel });
  const refused = answers.find((a) => a.status !== 200);
  if (refused) throw new Error(`lookup ${refused.status}: ${refused.body}`);
  return JSON.parse(answers[answers.length - 1]!.body) as Answer;
}

async function explain(srv: TestServer, l: Lookup): Promise<Explained> {
  const login = await fetch(`${srv.api}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: srv.customer.username, password: srv.customer.password }),
  });
  const { access_token } = (await login.json()) as { access_token: string };
  const r = await fetch(`${srv.api}/v1/account/explain?${query(srv, l)}`, { headers: { authorization: `Bearer ${access_token}` } });
  return (await r.json()) as Explained;
}

t.test('one uid hammering from one IP with a clean Chrome UA is high on activity alone (two lookup threads)', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  const one: Lookup = { ip: '86.12.40.7', ua: CHROME, uid: 'hammer-uid-1' };
  const before = await explain(srv, one);
  t.not(before.response.botRisk.band, 'high', `a first lookup is not high (${before.response.botRisk.band})`);

  const last = await send(srv, Array.from({ length: 3000 }, () => one));
  t.equal(last.botRisk.band, 'high', `the lookup port answers high (score ${last.botRisk.score})`);
  const e = await explain(srv, one);
  t.equal(e.response.botRisk.band, 'high');
  t.ok(e.reasons.includes('uid_activity_excessive'), `reasons: ${e.reasons.join(', ')}`);
  t.notOk(e.reasons.includes('ip_activity_excessive'), 'one user behind the IP: the per-user IP term stays silent');
  t.equal(e.transaction, 'sivt', 'counted invalid in reporting');
  t.equal(e.reasons.filter((r) => !/velocity|activity|many|hopping|history|burst/.test(r)).length, 0, 'nothing but activity fired');
});

t.test('one IFA hammering is high on activity alone', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  // A TV app without a cookie: the uid is untracked, the IFA is the device's identity.
  const one: Lookup = { ip: '73.40.12.9', ua: ROKU, uid: '0', extra: '&dvt=3&app=com.example.tv&ifa=5b0e3c2a-9d41-4f7e-8a36-1c2d3e4f5a6b' };
  const last = await send(srv, Array.from({ length: 3000 }, () => one));
  t.equal(last.botRisk.band, 'high', `the lookup port answers high (score ${last.botRisk.score})`);
  const e = await explain(srv, one);
  t.ok(e.reasons.includes('ifa_activity_excessive'), `reasons: ${e.reasons.join(', ')}`);
  t.notOk(e.reasons.includes('uid_activity_excessive'), 'no uid to blame');
});

t.test('a busy carrier-NAT address of ordinary users stays below high (two lookup threads)', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  // 300 subscribers, 40 browser builds, 2 lookups each within the minute: 600/min on one IP.
  const uas = Array.from({ length: 40 }, (_, i) =>
    `Mozilla/5.0 (Linux; Android 14; SM-S91${i % 10}B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/12${i % 4}.0.${6000 + i}.0 Mobile Safari/537.36`);
  const lookups: Lookup[] = [];
  for (let round = 0; round < 2; round++) {
    for (let u = 0; u < 300; u++) lookups.push({ ip: '31.94.12.34', ua: uas[u % 40]!, uid: `sub-${u}`, extra: '&dvt=4' });
  }
  const last = await send(srv, lookups);
  t.not(last.botRisk.band, 'high', `the lookup port answers ${last.botRisk.band} (score ${last.botRisk.score})`);
  const e = await explain(srv, lookups[0]!);
  t.not(e.response.botRisk.band, 'high', `score ${e.response.botRisk.score}, reasons: ${e.reasons.join(', ')}`);
  t.notOk(e.reasons.includes('ip_activity_excessive'), 'each user is at a human rate');
  t.equal(e.transaction, 'valid');
});

t.test('one address rotating many uids, each beyond a person, is high (two lookup threads)', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  // 20 cookies from one address, one UA, about 1 000 lookups each in a burst.
  const lookups: Lookup[] = Array.from({ length: 20_000 }, (_, i) => ({ ip: '98.33.4.22', ua: CHROME, uid: `farm-${i % 20}` }));
  const last = await send(srv, lookups, 32);
  t.equal(last.botRisk.band, 'high', `the lookup port answers high (score ${last.botRisk.score})`);
  const e = await explain(srv, lookups[0]!);
  t.ok(e.reasons.includes('ip_activity_excessive'), `reasons: ${e.reasons.join(', ')}`);
  t.ok(e.reasons.includes('uid_activity_excessive'), 'and each uid on its own');
  t.equal(e.transaction, 'sivt', 'counted invalid in reporting');
});
