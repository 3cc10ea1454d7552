// Impressions after a restart (a deploy within --imp-ttl): a real `ivtd serve` answers
// lookups, is stopped with SIGTERM and started again on the same data dir; beacons of the
// first run's lids then land on the second run and GET /v1/report/impressions counts them
// under their lookups' own dimensions (pub, sid, os…), found in reporting_tuple_ids (the
// tuple seed comes from lid.key, so the hash a lid carries names the same tuple in both
// runs). A lid naming a tuple nobody ever counted still counts as `__overflow__`.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LidCodec } from '../../src/prebid/lid.ts';
import { lidKeyPath } from '../../src/server/lid-secret.ts';
import { parseIp } from '../../src/signals/ip-address.ts';
import { freePort } from '../helpers/ports.ts';
import { startServe, type ServeProcess } from '../helpers/serve-process.ts';
import { basic, fixtureQuery, recentDays, withParams } from './client.ts';

const CHROME_WIN = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

interface Run {
  proc: ServeProcess;
  prebid: number;
  reporting: number;
  metrics: number;
}

async function serve(dir: string): Promise<Run> {
  const [prebid, api, reporting, metrics] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const proc = startServe(
    ['--data-dir', dir, '--prebid-port', String(prebid), '--api-port', String(api), '--reporting-port', String(reporting), '--metrics-port', String(metrics), '--flush-interval', '1', '--threads', '2'],
    { IVTD_LOG_LEVEL: 'info' },
  );
  await proc.waitFor(/"msg":"ivtd ready"/, 0, 60_000);
  return { proc, prebid, reporting, metrics };
}

async function stop(run: Run): Promise<number | null> {
  run.proc.child.kill('SIGTERM');
  return run.proc.exited;
}

t.test("beacons of the previous run's lids keep their lookups' dimensions", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-imp-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  const first = await serve(dir);
  t.teardown(() => void (first.proc.child.exitCode === null && first.proc.child.kill('SIGKILL')));
  const cred = (name: string) => new RegExp(`${name} +(\\S+)`).exec(first.proc.out())![1]!;
  const customer = { customer_id: cred('customer_id'), partner_id: cred('partner_id'), prebid_key: cred('prebid_key'), reporting_key: cred('reporting_key') };

  const lookupLid = async (port: number, pub: string, ip: string, uid: string): Promise<string> => {
    const q = withParams(fixtureQuery('residential-desktop-chrome'), { pub, ip, uid, ua: CHROME_WIN })
      .replace('{p}', customer.partner_id)
      .replace('{k}', customer.prebid_key);
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/ivt/lookup?${q}`);
    const body = (await res.json()) as { lid: string };
    if (res.status !== 200) throw new Error(JSON.stringify(body));
    return body.lid;
  };
  const beacon = async (port: number, lid: string, ip: string): Promise<void> => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/ivt/imp?lid=${lid}`, { headers: { 'x-device-ip': ip, 'x-device-user-agent': CHROME_WIN } });
    if (res.status !== 204) throw new Error(`beacon answered ${res.status}: ${await res.text()}`);
  };
  const impressions = async (port: number, groupBy: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/report/impressions?${new URLSearchParams({ ...recentDays(), group_by: groupBy })}`, {
      headers: { authorization: basic(customer.customer_id, customer.reporting_key) },
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  // First run: lookups of two publishers; their lids are kept for after the restart.
  const lids: Array<{ lid: string; ip: string }> = [];
  for (let i = 0; i < 3; i++) lids.push({ lid: await lookupLid(first.prebid, 'pub-before', `73.162.90.${i + 1}`, `rb-${i}`), ip: `73.162.90.${i + 1}` });
  lids.push({ lid: await lookupLid(first.prebid, 'pub-other', '73.162.91.1', 'ro-0'), ip: '73.162.91.1' });
  t.equal(await stop(first), 0, 'SIGTERM: exit 0');

  const second = await serve(dir);
  t.teardown(() => void (second.proc.child.exitCode === null && second.proc.child.kill('SIGKILL')));
  for (const { lid, ip } of lids) await beacon(second.prebid, lid, ip);

  // Control: a lid signed with the same secret (a real one as far as the beacon can tell)
  // whose tuple no run ever counted: still counted, with every lookup dimension __overflow__.
  const codec = new LidCodec(new Uint8Array(readFileSync(lidKeyPath(dir))));
  const unknown = codec.make({
    customerId: customer.customer_id, band: 'low', at: Date.now() - 60_000, ipNet: codec.ipNetDigest(parseIp('73.162.92.1')!),
    uaFamily: 0, device: 0, ipHi: 0, ipLo: 0, uidHi: 0, uidLo: 0, ifaHi: 0, ifaLo: 0, tupleHi: 0x1234567, tupleLo: 0x89abcdef,
  });
  await beacon(second.prebid, unknown, '73.162.92.1');

  const want = [
    { pub: '__overflow__', impressions: 1 },
    { pub: 'pub-before', impressions: 3 },
    { pub: 'pub-other', impressions: 1 },
  ];
  let got: any = null;
  const deadline = Date.now() + 30_000;
  for (;;) {
    got = await impressions(second.reporting, 'pub');
    const rows = got.body.rows?.map((r: any) => ({ pub: r.pub, impressions: r.impressions }));
    if (got.status === 200 && JSON.stringify(rows) === JSON.stringify(want)) break;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  t.equal(got.status, 200);
  t.strictSame(
    got.body.rows.map((r: any) => ({ pub: r.pub, impressions: r.impressions })),
    want,
    "the first run's lookups under their own pub; the lid of an unknown tuple under __overflow__",
  );
  const bySid = await impressions(second.reporting, 'pub,sid,os,browser');
  t.match(
    bySid.body.rows.find((r: any) => r.pub === 'pub-before'),
    { sid: /^(?!__overflow__).+/, os: 'windows', browser: 'chrome', impressions: 3 },
    "the lookup's other dimensions too",
  );

  // /metrics says what the archive did: the first run's tuples found on disk, no failed write.
  const metricsText = await (await fetch(`http://127.0.0.1:${second.metrics}/metrics`)).text();
  const sample = (re: RegExp) => Number(re.exec(metricsText)?.[1] ?? NaN);
  t.ok(sample(/^ivtd_tuple_archive_tuples_total\{outcome="found"\} (\d+)/m) >= 2, 'tuples found for the earlier run, counted in /metrics');
  t.equal(sample(/^ivtd_tuple_archive_write_failures_total (\d+)/m), 0, 'no failed write');

  // A lookup of this run still resolves as before.
  const now = await lookupLid(second.prebid, 'pub-after', '73.162.93.1', 'ra-0');
  await beacon(second.prebid, now, '73.162.93.1');
  const until = Date.now() + 20_000;
  let after: any = null;
  for (;;) {
    after = await impressions(second.reporting, 'pub');
    if (after.body.rows?.some((r: any) => r.pub === 'pub-after')) break;
    if (Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  t.match(after.body.rows.find((r: any) => r.pub === 'pub-after'), { impressions: 1 }, "this run's own lookups as before");
  t.equal(await stop(second), 0, 'SIGTERM: exit 0');
});
