// Every 200 lookup answer carries a lookup id (GET and OpenRTB alike), signed with the
// secret kept in <data-dir>/lid.key (made once, mode 0600, the same after a restart), and
// naming the customer, the band and the time of that lookup. Refusals carry none.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.ts';
import { LidCodec, emptyLidFacts } from '../../src/prebid/lid.ts';
import { LID_KEY_FILE } from '../../src/server/lid-secret.ts';
import { fixtureQuery } from '../reporting/client.ts';

const dir = mkdtempSync(join(tmpdir(), 'ivtd-lid-'));
/** A lid of the first run, beaconed after the restart. */
let firstRunLid = '';
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('GET and OpenRTB answers carry a lid the data dir\'s secret verifies; errors carry none', async (t) => {
  const srv = await startTestServer({ threads: 2 }, dir);
  t.teardown(() => srv.stop());
  const keyFile = join(dir, LID_KEY_FILE);
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'the secret is readable by its owner only');
  const codec = new LidCodec(new Uint8Array(readFileSync(keyFile)));
  const q = fixtureQuery('residential-desktop-chrome').replace('{p}', srv.customer.partner_id).replace('{k}', srv.customer.prebid_key);
  const before = Date.now();
  const seen = new Set<string>();
  for (let i = 0; i < 6; i++) {
    const res = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
    t.equal(res.status, 200);
    const body = (await res.json()) as { lid: string; botRisk: { band: string } };
    t.match(body.lid, /^[A-Za-z0-9_-]{107}$/);
    seen.add(body.lid);
    const f = emptyLidFacts();
    t.equal(codec.read(body.lid, f), '', 'genuine');
    t.equal(f.customerId, srv.customer.customer_id, 'names the customer');
    t.equal(f.band, body.botRisk.band, 'and the band answered');
    t.ok(f.at >= before && f.at <= Date.now(), 'and the time of the lookup');
    t.not(f.ipHi, 0, 'carries the IP history key');
  }
  t.equal(seen.size, 6, 'each lookup its own lid');
  firstRunLid = [...seen][0]!;

  const bad = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q.replace(/ip=[^&]+/, 'ip=nope')}`);
  t.equal(bad.status, 400);
  t.notOk('lid' in ((await bad.json()) as object), 'a refusal has no lid');

  const bid = (JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'ortb', 'exemplary', 'web-banner.json'), 'utf8')) as { request: { id: string } }).request;
  const o = await fetch(`${srv.prebid}/api/v1/ivt/ortb?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&node=n1`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(bid),
  });
  const oj = (await o.json()) as { lid?: string; id: string };
  t.equal(o.status, 200, JSON.stringify(oj));
  t.equal(oj.id, bid.id);
  t.equal(codec.read(oj.lid ?? '', emptyLidFacts()), '', 'the OpenRTB answer carries a genuine lid too');
});

t.test('the secret survives a restart: lids of the first run verify with the second\'s', async (t) => {
  const before = readFileSync(join(dir, LID_KEY_FILE));
  const srv = await startTestServer({}, dir);
  t.teardown(() => srv.stop());
  t.same(readFileSync(join(dir, LID_KEY_FILE)), before, 'the same key');
  const res = await fetch(`${srv.prebid}/api/v1/ivt/imp?lid=${firstRunLid}`, { headers: { 'x-device-ip': '73.162.10.25' } });
  t.equal(res.status, 204, 'a beacon for a lookup of the first run is taken, not refused');
});
