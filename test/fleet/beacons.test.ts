// Beacons in a fleet, end to end: one full instance and one edge on one ClickHouse, real
// lookups and beacons through their pre-bid ports, reports through the full instance.
// - impressions beaconed on the edge reach the full instance's impressions and
//   calibration reports (through ClickHouse), with their lookup's dimensions;
// - a lid seen by one host and replayed to the other is a `replay` there once the hosts
//   exchanged their seen lids (the exchange runs every 300 ms here, 10 s by default);
// - an IP whose impressions are replayed on one host is flagged (ipBotActivity) on the
//   other through the bot-IP exchange (every 500 ms here, a minute by default).
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { startTestServer, testConfig } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import { basic, fixtureQuery, recentDays, withParams } from '../reporting/client.ts';

const CHROME_WIN = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const INTERVALS = { botIpIntervalMs: 500, seenLidIntervalMs: 300 };

t.test('beacons across a fleet', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const ch = await startClickHouse();
  t.teardown(() => ch.destroy());
  const url = ch.url('beacons');
  const full = await startTestServer({ clickhouseUrl: url, flushInterval: 1 }, undefined, INTERVALS);
  const edgeDir = mkdtempSync(join(tmpdir(), 'ivtd-edge-'));
  // The edge starts after the full instance, so it takes the fleet's lid secret.
  const edge: RunningServer = await startServer(testConfig(edgeDir, { role: 'edge', clickhouseUrl: url, flushInterval: 1 }), INTERVALS);
  t.teardown(async () => {
    await edge.stop();
    await full.stop();
    rmSync(edgeDir, { recursive: true, force: true });
  });
  const hosts = { full: full.prebid, edge: `http://127.0.0.1:${edge.ports.prebid}` };
  const c = full.customer;
  // The edge serves once it pulled the key set.
  await until('the edge knows the key', async () => (await fetch(`${hosts.edge}/api/v1/ivt/lookup?${query('198.51.100.1', 'warm')}`)).status === 200, 15_000);

  function query(ip: string, uid: string, node = 'n') {
    return withParams(fixtureQuery('residential-desktop-chrome'), { ip, uid, ua: CHROME_WIN, node }).replace('{p}', c.partner_id).replace('{k}', c.prebid_key);
  }
  async function lookup(host: string, ip: string, uid: string, node = 'n') {
    const res = await fetch(`${host}/api/v1/ivt/lookup?${query(ip, uid, node)}`);
    t.equal(res.status, 200);
    return (await res.json()) as { lid: string; botRisk: { band: string }; ipReputation: { ipBotActivity: boolean } };
  }
  const beacon = async (host: string, lid: string, ip: string) => {
    const res = await fetch(`${host}/api/v1/ivt/imp?lid=${lid}`, { headers: { 'x-device-ip': ip, 'x-device-user-agent': CHROME_WIN } });
    t.equal(res.status, 204);
  };
  const report = async (path: string, params: Record<string, string>) => {
    const res = await fetch(`${full.reporting}${path}?${new URLSearchParams({ ...recentDays(), ...params })}`, { headers: { authorization: basic(c.customer_id, c.reporting_key) } });
    return { status: res.status, body: (await res.json()) as any };
  };

  await t.test('impressions beaconed on the edge are reported by the full instance, with their lookup\'s dimensions', async (t) => {
    const ip = '73.170.1.10';
    for (let i = 0; i < 4; i++) {
      const a = await lookup(hosts.edge, ip, `imp-${i}`, 'edge-node');
      await beacon(hosts.edge, a.lid, ip);
    }
    const ms = await until('four valid impressions of node edge-node', async () => {
      const r = await report('/v1/report/impressions', { group_by: 'node,imp_status', node: 'edge-node' });
      return r.status === 200 && r.body.rows.length === 1 && r.body.rows[0].impressions === 4;
    }, 20_000);
    const r = await report('/v1/report/impressions', { group_by: 'node,imp_status,band', node: 'edge-node' });
    t.same(r.body.rows, [{ node: 'edge-node', imp_status: 'valid', band: 'low', impressions: 4, valid_impressions: 4, invalid_impressions: 0 }], `through ClickHouse in ${ms} ms`);
    const cal = await report('/v1/report/calibration', {});
    t.equal(cal.status, 200);
    t.ok(cal.body.rows.find((x: any) => x.band === 'low').by_beacon.labelled >= 4, 'calibration counts the beacons\' labels');
  });

  await t.test('a lid seen on one host and replayed to the other is a replay there', async (t) => {
    const ip = '73.170.2.10';
    const a = await lookup(hosts.full, ip, 'replay-1', 'replay-node');
    await beacon(hosts.full, a.lid, ip);
    // The full instance publishes the first sight (its thread reports it within a second)...
    await until('the first sight is in ClickHouse', async () => (await ch.sql('SELECT count() FROM beacons.seen_lids')).trim() !== '0', 10_000);
    // ...and the edge pulls it at one of its next exchanges (every 300 ms here; later on a
    // loaded host): its /metrics counts the lids it learnt from the other host.
    const remembered = async () => {
      const m = await (await fetch(`http://127.0.0.1:${edge.ports.metrics}/metrics`)).text();
      return Number(/^ivtd_fleet_seen_lids_remembered_total (\d+)/m.exec(m)?.[1] ?? 0);
    };
    await until('the edge remembered the first sight', async () => (await remembered()) >= 1, 20_000);
    await beacon(hosts.edge, a.lid, ip);
    // The edge does not know the lookup's dimensions (its tuple dictionary holds its own
    // lookups' tuples): the replay counts with every lookup dimension __overflow__, its
    // band and status kept (docs/fleet.md, "Impressions").
    await until('the edge judged it a replay', async () => {
      const r = await report('/v1/report/impressions', { group_by: 'imp_status' });
      return r.status === 200 && r.body.rows.some((x: any) => x.imp_status === 'replay' && x.impressions === 1);
    }, 20_000);
    const r = await report('/v1/report/impressions', { group_by: 'imp_status,node,band', imp_status: 'replay' });
    t.same(r.body.rows, [{ imp_status: 'replay', node: '__overflow__', band: 'low', impressions: 1, valid_impressions: 0, invalid_impressions: 1 }], 'one replay, judged on the edge');
    const v = await report('/v1/report/impressions', { group_by: 'imp_status', node: 'replay-node' });
    t.same(v.body.rows.map((x: any) => [x.imp_status, x.impressions]), [['valid', 1]], 'the first sight, valid on the full instance, with its dimensions');
    const m = await (await fetch(`http://127.0.0.1:${edge.ports.metrics}/metrics`)).text();
    t.equal(Number(/^ivtd_fleet_seen_lid_exchange_failures_total (\d+)/m.exec(m)?.[1] ?? NaN), 0, "the edge's /metrics: no failed exchange");
  });

  await t.test('an IP whose impressions are replayed on one host is flagged on the other', async (t) => {
    const ip = '73.170.3.10';
    const honest = '73.170.4.10';
    const first = await lookup(hosts.edge, ip, 'bot-first');
    t.notOk(first.ipReputation.ipBotActivity, 'the edge knows nothing of the IP yet');
    // Lookups and replayed impressions on the full instance only.
    for (let i = 0; i < 12; i++) {
      const a = await lookup(hosts.full, ip, `bot-${i}`);
      for (let k = 0; k < 3; k++) await beacon(hosts.full, a.lid, ip);
      const h = await lookup(hosts.full, honest, `honest-${i}`);
      await beacon(hosts.full, h.lid, honest);
    }
    const ms = await until('the edge flags the IP', async () => (await lookup(hosts.edge, ip, 'bot-next')).ipReputation.ipBotActivity, 20_000);
    t.pass(`flagged on the edge after ${ms} ms`);
    t.notOk((await lookup(hosts.edge, honest, 'honest-next')).ipReputation.ipBotActivity, 'an IP whose impressions were valid stays clean');
  });
});
