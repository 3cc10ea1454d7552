// Fleet-wide activity (issue 55) on a real ClickHouse with several hosts in one process:
// one full instance and three edges. A bot (one uid, one IP, 40 lookups/s) sent round-robin
// over the four is caught on every one about as one host alone catches the same bot (run
// beside it, in the same seconds); a carrier-NAT address with hundreds of users, spread the
// same way, is not flagged where one host would not flag it; ClickHouse stopped mid-way
// (local history alone, no error) and back; an edge joining late sees the fleet within an
// interval.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { startTestServer, testConfig } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import { fixtureQuery, withParams } from '../reporting/client.ts';
import { drive, lookupOn, summary, type Host } from './activity-drive.ts';

const BASE = fixtureQuery('residential-desktop-chrome');
// Desktop browsers only: the fixture says dvt=2 (a PC), and a phone's UA there is a fact of its own.
const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
];

const bot = (uid: string, ip: string) => () => withParams(BASE, { uid, ip });

interface Node extends Host {
  server: RunningServer;
}

// Four servers, a ClickHouse stopped and started, two minutes of traffic.
t.setTimeout(400_000);

t.test('fleet-wide activity on a real ClickHouse', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed', timeout: 400_000 }, async (t) => {
  const ch = await startClickHouse();
  t.teardown(() => ch.destroy());
  const url = ch.url('activity');
  const dirs: string[] = [];
  const running: RunningServer[] = [];
  t.teardown(async () => {
    for (const s of running.reverse()) await s.stop().catch(() => undefined);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const full = await startTestServer({ clickhouseUrl: url, flushInterval: 1 });
  running.push(full.server);
  const c = full.customer;
  const startEdge = async (name: string, started?: (s: RunningServer) => void): Promise<Node> => {
    const d = mkdtempSync(join(tmpdir(), `ivtd-${name}-`));
    dirs.push(d);
    const server = await startServer(testConfig(d, { role: 'edge', clickhouseUrl: url, flushInterval: 1 }));
    running.push(server);
    started?.(server);
    const node = { name, server, prebid: `http://127.0.0.1:${server.ports.prebid}` };
    await until(`${name} has the keys`, async () => (await lookupOn(node, c, bot('warm', '198.51.100.250')())).status === 200, 20_000);
    return node;
  };
  const hosts: Node[] = [{ name: 'full', server: full.server, prebid: full.prebid }];
  for (const n of ['edge-1', 'edge-2', 'edge-3']) hosts.push(await startEdge(n));
  await until('every host exchanges activity', async () => hosts.every((h) => h.server.fleet!.activity!.state === 'up'), 20_000);

  t.test('a bot round-robin over four hosts is caught as one host alone catches it; carrier NAT is not flagged by the fleet', async (t) => {
    // Beside each other in the same seconds: the same bot to one host (the reference) and
    // round-robin to all four; a carrier-NAT address (300 users, a few lookups each, six
    // UA strings) to one host and round-robin over the four.
    const users = 300;
    const natQuery = (ip: string) => (i: number) => withParams(BASE, { ip, uid: `nat-user-${i % users}`, ua: UAS[i % UAS.length]! });
    const answers = await drive(c, [
      { name: 'single', hosts: [hosts[1]!], rate: 40, query: bot('bot-single', '73.162.10.21') },
      { name: 'fleet', hosts, rate: 40, query: bot('bot-fleet', '73.162.10.22') },
      { name: 'nat-single', hosts: [hosts[2]!], rate: 30, query: natQuery('24.48.10.1') },
      { name: 'nat-fleet', hosts, rate: 30, query: natQuery('24.48.10.2') },
    ], 40);
    for (const [name, list] of answers) t.ok(list.every((a) => a.status === 200), `${name}: every lookup answered 200`);
    for (const h of hosts) {
      const a = h.server.fleet!.activity!;
      t.comment(`${h.name}: exchange ${a.state}, ${a.failures} failures, ${a.rowsSent} rows sent, ${a.rowsReceived} received, last pull ${a.lastPullMs.toFixed(0)} ms, ${a.computed} views computed (last ${a.lastComputeMs.toFixed(0)} ms)`);
    }
    t.ok(hosts[0]!.server.fleet!.activity!.computed > 20, 'the full instance computes the view');
    // An edge computes a view only while none is fresh (at its start, before the full instance's first).
    t.ok(hosts.slice(1).every((h) => h.server.fleet!.activity!.computed <= 5), 'the edges read the full instance\'s view');
    const single = summary(answers.get('single')!);
    const fleet = summary(answers.get('fleet')!);
    t.comment(`one host: high ${(single.share * 100).toFixed(1)} %, first high at ${single.firstHigh.toFixed(1)} s, high for good from ${single.steadyFrom.toFixed(1)} s`);
    t.comment(`four hosts round-robin: high ${(fleet.share * 100).toFixed(1)} %, first high at ${fleet.firstHigh.toFixed(1)} s, high for good from ${fleet.steadyFrom.toFixed(1)} s`);
    t.ok(single.share > 0.5, 'the reference: one host catches the bot');
    t.ok(fleet.share >= 0.9 * single.share, `spread over four hosts, high ≥ 0.9 × one host's share (${fleet.share.toFixed(3)} vs ${single.share.toFixed(3)})`);
    // The target is "from within 10 s of the start, as one host (~9 s)". On a machine shared by
    // other test runs one host itself takes longer, so the fleet is held to the reference
    // measured beside it, plus one exchange's lag (an interval and a pull).
    const lagS = 2;
    const by = Math.max(10, single.steadyFrom + lagS);
    t.ok(fleet.steadyFrom <= by, `high for good from ${fleet.steadyFrom.toFixed(1)} s (one host: ${single.steadyFrom.toFixed(1)} s; at most ${by.toFixed(1)} s)`);
    for (const h of hosts) {
      const on = summary(answers.get('fleet')!.filter((a) => a.host === h.name));
      t.ok(on.steadyFrom <= by, `${h.name}: the bot is high there from ${on.steadyFrom.toFixed(1)} s on (${(on.share * 100).toFixed(0)} % of its lookups there)`);
    }
    // Carrier NAT: whatever one host says about 300 users behind one address, the fleet says no worse.
    const natSingle = answers.get('nat-single')!;
    const natFleet = answers.get('nat-fleet')!;
    const flagged = (l: typeof natFleet) => l.filter((a) => a.ipBotActivity || a.band === 'high').length / l.length;
    t.comment(`carrier NAT: flagged on one host ${(flagged(natSingle) * 100).toFixed(1)} %, over four hosts ${(flagged(natFleet) * 100).toFixed(1)} %`);
    t.equal(flagged(natSingle), 0, 'one host does not flag 300 users behind one address');
    t.equal(flagged(natFleet), 0, 'neither does the fleet');
    // The fleet did see the address: its explain names the other hosts' counts.
    const ex = hosts[3]!.server.explainEngine().explain(withParams(BASE, { ip: '24.48.10.2', uid: 'nat-user-1', ua: UAS[1]! }).replace('{p}', c.partner_id).replace('{k}', c.prebid_key), Date.now());
    const fleetFacts = ex.signals?.fleet;
    t.ok(fleetFacts?.ip, 'explain: the IP has fleet facts');
    t.ok(fleetFacts!.ip!.rate > 0 && fleetFacts!.ip!.distinctB >= 100, `explain: the fleet's rate (${fleetFacts!.ip!.rate}/min) and distinct uids (${fleetFacts!.ip!.distinctB})`);
    const m = await (await fetch(`http://127.0.0.1:${hosts[1]!.server.ports.metrics}/metrics`)).text();
    for (const name of ['ivtd_fleet_activity_age_seconds', 'ivtd_fleet_activity_rows_sent_total', 'ivtd_fleet_activity_rows_received_total', 'ivtd_fleet_activity_failures_total']) {
      t.match(m, new RegExp(`^${name} [0-9.e+-]+$`, 'm'), `/metrics has ${name}`);
    }
    t.match(m, /^ivtd_fleet_activity_up 1$/m);
    // The buffer hands its rows on to the table in this database (its engine names it at creation).
    t.ok(Number(await ch.sql('SELECT count() FROM activity.activity')) > 0, 'the rows reach the MergeTree behind the buffer');
  });

  t.test('ClickHouse stopped mid-way: local history alone, then the fleet again; a late edge sees it within an interval', async (t) => {
    const three = hosts.slice(0, 3);
    const query = bot('bot-outage', '73.162.10.23');
    const answers = await drive(c, [{ name: 'bot', hosts: three, rate: 40, query }], 30, {
      8: () => ch.stop(),
      16: async () => {
        t.ok(three.every((h) => h.server.fleet!.activity!.state === 'down'), 'every host noticed the outage');
        await until('local history alone', async () => three.every((h) => h.server.fleet!.activity!.viewKeys === 0), 8000);
        t.pass('and, once its view is stale, scores on local history alone');
        await ch.start();
      },
    });
    t.ok(answers.get('bot')!.every((a) => a.status === 200), 'every lookup answered 200 throughout');
    await until('every host is back', async () => three.every((h) => h.server.fleet!.activity!.state === 'up'), 15_000);
    t.ok(three.every((h) => h.server.fleet!.activity!.failures > 0), 'the failures are counted');
    // The bot goes on; an edge joins meanwhile.
    let late: Node | null = null;
    let viewAfterMs = Infinity;
    const after = await drive(c, [{ name: 'bot', hosts: three, rate: 40, query }], 8, {
      1: async () => {
        late = await startEdge('late', (server) => {
          const t0 = Date.now();
          void until('the late edge has the fleet view', async () => server.fleet!.activity!.viewKeys > 0, 10_000).then(() => (viewAfterMs = Date.now() - t0), () => undefined);
        });
      },
    });
    const exAfter = three[1]!.server.explainEngine().explain(query().replace('{p}', c.partner_id).replace('{k}', c.prebid_key), Date.now());
    t.comment(`after the outage, edge-1: ${JSON.stringify(exAfter.signals?.fleet?.uid)} uidRate ${exAfter.signals?.history.uidRate} ${three.map((h) => `${h.name} ${h.server.fleet!.activity!.state}/${h.server.fleet!.activity!.viewKeys}/${h.server.fleet!.activity!.computed}`).join(' ')}`);
    const last = after.get('bot')!;
    const notHigh = last.filter((a) => a.band !== 'high');
    t.ok(last.length > 0 && notHigh.length === 0, `after the outage the bot is high on every host (${last.length - notHigh.length}/${last.length}; not: ${notHigh.map((a) => `${a.host}@${a.at.toFixed(1)}:${a.band}`).join(' ')})`);
    t.comment(`late edge: the fleet's view ${viewAfterMs} ms after its start`);
    t.ok(viewAfterMs <= 3000, 'the late edge has the fleet view within about an interval of its start (the next boundary, a pull)');
    // What the late edge knows of the bot is the fleet's: its own history holds none of it.
    const ex = late!.server.explainEngine().explain(query().replace('{p}', c.partner_id).replace('{k}', c.prebid_key), Date.now());
    const uid = ex.signals?.fleet?.uid;
    t.ok(uid && uid.rate > 100, `the late edge's explain: the fleet's rate for the bot's uid (${uid?.rate}/min)`);
    t.ok(ex.signals!.history.uidRate >= uid!.rate, "and its history facts include it");
  });
});
