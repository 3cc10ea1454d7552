// A fleet on one machine, end to end: a real ClickHouse started here, one full instance
// (`--role all`) and two edges (`--role edge`), real lookups through their pre-bid ports,
// reports through the full instance's reporting API. Exact fleet totals and per-node
// splits, tenancy, keys created and revoked on the full instance honoured by the edges,
// ClickHouse stopped and started in the middle (no count lost or doubled), an edge
// restarted during the outage still serving, and a bot IP published by one edge seen by
// the other.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sendControl } from '../../src/provisioning/control.ts';
import { ConfigError, resolveConfig } from '../../src/base/config.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { classifyTransaction, type ScoreResult } from '../../src/signals/score.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { startTestServer, testConfig } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import { basic, fixtureQuery, recentDays, withParams, type LookupAnswer } from '../reporting/client.ts';

const QUERY = fixtureQuery('residential-desktop-chrome');
const BOT = fixtureQuery('headless-browser');

// Keys reach the edges within 5 s by design (published at once, pulled every 2 s: keys.ts,
// whose constants test/fleet/keys.test.ts checks). Here three servers, ClickHouse and the
// rest of the suite share two cores, where one ClickHouse query has taken seconds: the
// wall-clock ceiling is looser than the budget (a pull loop that stalled or a publication
// left to the hourly cleanup would still miss it); the measured delay is in the message.
const PROPAGATION_CEILING_MS = 15_000;

interface Creds {
  customer_id: string;
  partner_id: string;
  prebid_key: string;
  reporting_key: string;
}

interface Node {
  name: string;
  server: RunningServer;
  prebid: string;
}

/** One lookup; resolves with the HTTP status and, on 200, the answer. */
async function lookup(node: Node, c: Creds, query: string, key = c.prebid_key): Promise<{ status: number; answer?: LookupAnswer }> {
  const q = withParams(query.replace('{p}', c.partner_id).replace('{k}', key), { node: node.name });
  const res = await fetch(`${node.prebid}/api/v1/ivt/lookup?${q}`);
  const text = await res.text();
  return res.status === 200 ? { status: 200, answer: JSON.parse(text) as LookupAnswer } : { status: res.status };
}

t.test('a fleet: one full instance, two edges, one ClickHouse', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const ch = await startClickHouse();
  t.teardown(() => ch.destroy());
  const url = ch.url('fleet');
  const dirs: string[] = [];
  t.teardown(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const full = await startTestServer({ clickhouseUrl: url, flushInterval: 1 });
  const fullNode: Node = { name: 'full', server: full.server, prebid: full.prebid };
  const edgeConfig = (dir: string) => testConfig(dir, { role: 'edge', clickhouseUrl: url, flushInterval: 1 });
  const startEdge = async (name: string, dir?: string): Promise<Node> => {
    const d = dir ?? mkdtempSync(join(tmpdir(), `ivtd-${name}-`));
    if (!dir) dirs.push(d);
    const server = await startServer(edgeConfig(d), { botIpIntervalMs: 1000 });
    return { name, server, prebid: `http://127.0.0.1:${server.ports.prebid}` };
  };
  let e1 = await startEdge('edge-1');
  const e2 = await startEdge('edge-2');
  t.teardown(async () => {
    await e1.server.stop();
    await e2.server.stop();
    await full.stop();
  });

  const A: Creds = full.customer;
  // The second customer is created through the control socket, as `ivtd customer create` does.
  const createdAt = Date.now();
  const B: Creds = await sendControl(full.dataDir, 'customer.create', { name: 'Other Co', username: 'other-co', password: 'correct horse battery' });

  /** Expected transactions per customer and node, from the answers themselves. */
  const sent = new Map<string, { total: number; givt: number; sivt: number }>();
  /** One lookup, tallied when it is answered (and so counted): resolves with its status. */
  const probe = async (node: Node, c: Creds, query = QUERY, key?: string): Promise<number> => {
    const r = await lookup(node, c, query, key);
    if (r.status === 200) {
      const cls = classifyTransaction({ ...r.answer!.components, ...r.answer!.botRisk, reasons: [], leading: '' } as ScoreResult);
      const k = `${c.customer_id}/${node.name}`;
      const s = sent.get(k) ?? { total: 0, givt: 0, sivt: 0 };
      s.total++;
      if (cls === 'givt') s.givt++;
      if (cls === 'sivt') s.sivt++;
      sent.set(k, s);
    }
    return r.status;
  };
  const send = async (node: Node, c: Creds, n: number, query = QUERY, key?: string) => {
    for (let i = 0; i < n; i++) {
      const status = await probe(node, c, withParams(query, { uid: `u-${node.name}-${i}` }), key);
      if (status !== 200) throw new Error(`lookup on ${node.name} answered ${status}`);
    }
  };
  const expectedSplit = (c: Creds) =>
    Object.fromEntries([...sent].filter(([k]) => k.startsWith(c.customer_id)).map(([k, s]) => [k.split('/')[1], s]));
  const expectedTotal = (c: Creds) => [...sent].filter(([k]) => k.startsWith(c.customer_id)).reduce((n, [, s]) => n + s.total, 0);

  const report = async (c: Creds, params: Record<string, string>) => {
    const res = await fetch(`${full.reporting}/v1/report?${new URLSearchParams({ ...recentDays(), ...params })}`, {
      headers: { authorization: basic(c.customer_id, c.reporting_key) },
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const split = async (c: Creds) => {
    const r = await report(c, { group_by: 'node' });
    if (r.status !== 200) return null;
    return Object.fromEntries(r.body.rows.map((row: any) => [row.node, { total: row.total_transactions, givt: row.givt_transactions, sivt: row.sivt_transactions }]));
  };
  /** Flushes every node (spool → ClickHouse) until the fleet report shows every lookup sent, node by node. */
  const settle = async (nodes: Node[]) => {
    await until(
      'every count in ClickHouse',
      async () => {
        for (const n of nodes) await n.server.reporting!.flush().catch(() => undefined);
        for (const c of [A, B]) if (JSON.stringify(await split(c)) !== JSON.stringify(expectedSplit(c))) return false;
        return true;
      },
      15_000,
    ).catch(() => undefined); // checkSplits reports the difference
  };
  const checkSplits = async (t: Test, c: Creds, label: string) => {
    t.same(await split(c), expectedSplit(c), `${label}: exact per-node split`);
    const total = await report(c, {});
    t.equal(total.body.rows[0].total_transactions, expectedTotal(c), `${label}: exact fleet total`);
  };

  await t.test('keys created on the full instance reach both edges within 5 s', async (t) => {
    for (const e of [e1, e2]) {
      await until(`${e.name} accepts A`, async () => (await probe(e, A)) === 200);
      const ms = await until(`${e.name} accepts B`, async () => (await probe(e, B)) === 200);
      t.ok(Date.now() - createdAt <= PROPAGATION_CEILING_MS, `${e.name} accepted a new customer's key ${Date.now() - createdAt} ms after its creation (${ms} ms polling; budget 5 s)`);
    }
  });

  await t.test('exact fleet totals and per-node splits; each customer sees only its own', async (t) => {
    await send(e1, A, 5);
    await send(e2, A, 3);
    await send(e2, A, 2, BOT);
    await send(fullNode, A, 2);
    await send(e2, B, 4);
    await send(e1, B, 1);
    await settle([fullNode, e1, e2]);
    await checkSplits(t, A, 'customer A');
    await checkSplits(t, B, 'customer B');
    const strangers = await report(B, { node: 'full' });
    t.equal(strangers.body.rows[0].total_transactions, 0, "B's report has none of A's lookups on the full instance");
  });

  let oldKey = '';
  await t.test('a key revoked on the full instance is refused by the edges within 5 s', async (t) => {
    oldKey = A.prebid_key;
    const revokedAt = Date.now();
    const r = await sendControl(full.dataDir, 'key.rotate', { customer: A.customer_id, kind: 'prebid', graceSeconds: 0 });
    A.prebid_key = r.key;
    for (const e of [e1, e2]) {
      await until(`${e.name} refuses the old key`, async () => (await probe(e, A, QUERY, oldKey)) === 401);
      t.ok(Date.now() - revokedAt <= PROPAGATION_CEILING_MS, `${e.name} refuses the revoked key ${Date.now() - revokedAt} ms after the rotation (budget 5 s)`);
      await until(`${e.name} accepts the new key`, async () => (await probe(e, A)) === 200);
    }
    t.equal(await probe(fullNode, A, QUERY, oldKey), 401, 'and the full instance itself');
  });

  await t.test('ClickHouse stopped and started in the middle: no count lost or doubled; an edge restarted meanwhile still serves', async (t) => {
    await settle([fullNode, e1, e2]);
    await ch.stop();
    await send(e1, A, 4);
    await send(e2, A, 2);
    await send(fullNode, A, 3);
    await send(e2, B, 2);
    await new Promise((r) => setTimeout(r, 1500)); // the threads hand their counts over every second
    for (const n of [fullNode, e1, e2]) await t.rejects(n.server.reporting!.flush(), /unreachable|ClickHouse/, `${n.name}: delivery fails, counts spooled`);
    t.ok(e1.server.fleet!.writer.stats().spoolBatches > 0, 'edge-1 holds spooled batches');
    const during = await report(A, {});
    t.equal(during.status, 503, 'reports say ClickHouse is away');
    t.equal(during.body.error, 'unavailable');

    // edge-1 restarts while ClickHouse is down: the SIGTERM path spools, the new run serves the kept keys.
    const dir = e1.server.config.dataDir;
    await e1.server.stop();
    e1 = await startEdge('edge-1', dir);
    t.equal(await probe(e1, A), 200, 'the restarted edge serves the key it kept');
    t.equal(await probe(e1, A, QUERY, oldKey), 401, 'and still refuses the revoked one');
    await send(e1, A, 3);
    await new Promise((r) => setTimeout(r, 1500));

    // A new edge (an empty data dir) started during the outage has no key set: it comes up and
    // says it cannot serve lookups (503, health too) until its first pull, then serves.
    const e3 = await startEdge('edge-3');
    let e3Stopped = false;
    t.teardown(async () => {
      if (!e3Stopped) await e3.server.stop(); // when a check below threw before its own stop
    });
    const health3 = async () => (await fetch(`${e3.prebid}/health-check`)).status;
    t.equal(await health3(), 503, 'a new edge without a key set: /health-check 503');
    const refused = await fetch(`${e3.prebid}/api/v1/ivt/lookup?${QUERY.replace('{p}', A.partner_id).replace('{k}', A.prebid_key)}`);
    t.equal(refused.status, 503, 'its lookups 503, not 401 for a valid key');
    t.match(await refused.json(), { error: 'unavailable', message: /no key set yet/ });

    await ch.start();
    await until('edge-3 has the key set', async () => (await health3()) === 200);
    t.pass('edge-3 healthy once ClickHouse is back and the set pulled');
    await e3.server.stop(); // no lookup counted there: the splits below stay the three nodes'
    e3Stopped = true;
    await settle([fullNode, e1, e2]);
    await new Promise((r) => setTimeout(r, 1500)); // one more flush interval: nothing extra arrives
    for (const n of [fullNode, e1, e2]) await n.server.reporting!.flush();
    await checkSplits(t, A, 'after the outage, customer A');
    await checkSplits(t, B, 'after the outage, customer B');
    t.equal(e1.server.fleet!.writer.stats().spoolBatches, 0, 'spool empty');
  });

  await t.test('a bot IP published by one edge reaches the other', async (t) => {
    const ip = '203.0.113.77';
    t.notOk((await e2.server.fleet!.pullFleetBotIps()).includes(ip));
    t.equal(await e1.server.fleet!.publishBotIps([{ ip, lookups: 40, invalid: 36 }]), 1);
    t.ok((await e2.server.fleet!.pullFleetBotIps()).includes(ip), 'in edge-2’s fleet set');
  });

  await t.test('an edge serves the pre-bid port and /metrics only, and refuses provisioning', async (t) => {
    t.equal(e2.server.ports.reporting, 0, 'no reporting listener');
    t.equal(e2.server.ports.api, 0, 'no account API listener');
    // The one rule of every role: /metrics on --metrics-host:--metrics-port, alone.
    const base = `http://127.0.0.1:${e2.server.ports.metrics}`;
    const m = await fetch(`${base}/metrics`);
    t.equal(m.status, 200);
    const text = await m.text();
    t.match(text, /ivtd_fleet_spool_batches 0/);
    t.match(text, /ivtd_fleet_key_set_version [1-9]/);
    t.match(text, /ivtd_lookups_total/);
    for (const path of ['/v1/report', '/', '/login', '/v1/account']) t.equal((await fetch(base + path)).status, 404, `${path} is not served`);
    await t.rejects(sendControl(e2.server.config.dataDir, 'customer.list', {}), /fleet edge/);
    const fm = await (await fetch(`${full.metrics}/metrics`)).text();
    t.match(fm, /ivtd_fleet_batches_delivered_total [1-9]/, 'the full instance delivered batches');
  });

  await t.test('bots seen by one edge flag their IP on the other, within the exchange period', async (t) => {
    const botIp = '198.51.100.201';
    const cleanIp = '198.51.100.202';
    const on = async (node: Node, query: string, ip: string) => (await lookup(node, A, withParams(query, { ip }))).answer!.ipReputation.ipBotActivity;
    t.equal(await on(e2, QUERY, botIp), false, 'edge-2 knows nothing of the IP yet');
    // Headless Chrome from one address on edge-1: invalid on the request's own evidence.
    for (let i = 0; i < 15; i++) await lookup(e1, A, withParams(BOT, { ip: botIp }));
    const ms = await until('edge-2 flags the IP', () => on(e2, QUERY, botIp), 15_000);
    t.ok(ms < 15_000, `flagged on edge-2 after ${ms} ms (exchange every second in this test, every minute by default)`);
    t.equal(await on(e2, QUERY, cleanIp), false, 'an IP nobody saw bots on stays clean');
  });
});

t.test('--role edge needs --clickhouse-url; a bad URL or role stops the start', async (t) => {
  t.throws(() => resolveConfig({ role: 'edge' }, {}), { name: 'Error', constructor: ConfigError });
  t.throws(() => resolveConfig({ role: 'edge' }, {}), /needs --clickhouse-url/);
  t.throws(() => resolveConfig({ role: 'relay' }, {}), /role must be one of all, edge/);
  t.throws(() => resolveConfig({ clickhouseUrl: 'clickhouse:8123' }, {}), /http:\/\/ or https:\/\//);
  t.match(resolveConfig({}, { IVTD_CLICKHOUSE_URL: 'http://ch:8123/f', IVTD_ROLE: 'edge' }), { role: 'edge', clickhouseUrl: 'http://ch:8123/f' });
  t.match(resolveConfig({}, {}), { role: 'all', clickhouseUrl: undefined });
});

t.test('an edge whose ClickHouse accepts connections and never answers still starts, answers and stops', async (t) => {
  const held = new Set<Socket>();
  const silent = createServer((s) => {
    held.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of held) s.destroy();
    silent.close();
  });
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-edge-silent-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const t0 = Date.now();
  const edge = await startServer(testConfig(dir, { role: 'edge', clickhouseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/ivtd` }));
  const startMs = Date.now() - t0;
  t.ok(startMs < 10_000, `started in ${startMs} ms`);
  // A new edge that never had a key set knows no key: it says it cannot serve lookups (before,
  // it answered 200 here and 401 "Invalid API key" to every bidder's valid key).
  t.equal((await fetch(`http://127.0.0.1:${edge.ports.prebid}/health-check`)).status, 503, 'no key set yet: /health-check 503 (up, cannot serve lookups)');
  const q = QUERY.replace('{p}', '00000000-0000-4000-8000-000000000000').replace('{k}', 'ivp_x');
  const answer = await fetch(`http://127.0.0.1:${edge.ports.prebid}/api/v1/ivt/lookup?${q}`);
  t.equal(answer.status, 503, 'a lookup answers at once: 503');
  t.match(await answer.json(), { error: 'unavailable', message: /no key set yet: ClickHouse has not answered since it started/ }, 'saying why');
  const s0 = Date.now();
  await edge.stop();
  t.ok(Date.now() - s0 < 10_000, `stopped in ${Date.now() - s0} ms`);
});
