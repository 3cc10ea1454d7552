// End to end: a real server with --data-refresh, its refresher fetching from a local HTTP
// server that plays every host (cloud ranges, Tor exits, an operator's VPN list, iCloud
// Private Relay egress, an exchange's sellers.json, a publisher's ads.txt); the lookup
// threads report the domains and selling systems they see, the refresher crawls them, the
// server reloads, and lookups on the pre-bid port answer from the new data.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeWeb } from '../helpers/fake-web.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const TEXT = { 'Content-Type': 'text/plain; charset=utf-8' };

async function until(what: string, fn: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface Answer {
  botRisk: { score: number; band: string };
  components: { p_givt: number; p_sivt: number };
  ipReputation: { ipHosting: boolean; ipVpn: boolean };
  schain: { valid: boolean; verified: boolean; complete: number };
}

let uidSeq = 0;
function query(ts: TestServer, p: { ip: string; dmn?: string; pub?: string; sid?: string; schain?: string }): string {
  const c = ts.customer;
  const params = new URLSearchParams({
    p: c.partner_id, k: c.prebid_key, pub: p.pub ?? 'pub-1', node: 'n1', ip: p.ip, ua: CHROME,
    uid: `u-${++uidSeq}`, sid: p.sid ?? 'exchange1.example', adt: '1', dvt: '2',
  });
  if (p.dmn) params.set('dmn', p.dmn);
  // The schain goes first and keeps its own encoding (spec 4.4).
  return `${p.schain ? `schain=${p.schain}&` : ''}${params.toString()}`;
}

async function lookup(ts: TestServer, p: Parameters<typeof query>[1]): Promise<Answer> {
  const r = await fetch(`${ts.prebid}/api/v1/ivt/lookup?${query(ts, p)}`);
  t.equal(r.status, 200);
  return (await r.json()) as Answer;
}

function explain(ts: TestServer, p: Parameters<typeof query>[1]) {
  const ex = ts.server.explainEngine().explain(query(ts, p), Date.now());
  return { reasons: ex.reasons, adsTxt: ex.signals?.adsTxt, ip: ex.signals?.ip };
}

const AWS = JSON.stringify({
  syncToken: '1717000000', createDate: '2024-05-29-16-00-00',
  prefixes: [{ ip_prefix: '23.24.0.0/24', region: 'us-east-1', service: 'EC2', network_border_group: 'us-east-1' }],
  ipv6_prefixes: [],
});

t.test('refreshed ranges, sellers.json and ads.txt reach the lookups', async (t) => {
  const w = await FakeWeb.start();
  t.teardown(() => w.stop());
  w.set('/aws.json', { body: AWS, etag: '"a1"' });
  w.set('/torbulkexitlist', '23.24.1.5\n');
  w.set('/vpn.txt', '# an operator list\n23.24.2.0/24\n');
  // Relay egress: one block in a residential network, one in AWS (hosting by the ASN list).
  w.set('/egress-ip-ranges.csv', '23.24.3.0/24,US,US-CA,Los Angeles,\n3.5.140.0/24,US,US-NY,New York,\n');
  w.set('/sellers/exchange1.example.json', JSON.stringify({
    version: '1.0',
    sellers: [
      { seller_id: 'pub-1', seller_type: 'PUBLISHER', domain: 'news.example', name: 'News' },
      { seller_id: 'int-7', seller_type: 'INTERMEDIARY', domain: 'resale.example' },
    ],
  }));
  w.set('news.example/ads.txt', { body: 'exchange1.example, pub-1, DIRECT\nexchange1.example, int-7, DIRECT\nexchange1.example, res-3, RESELLER\n', headers: TEXT });

  const dir = mkdtempSync(join(tmpdir(), 'ivtd-refresh-lookup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'sources.json'), JSON.stringify({
    sources: [
      { name: 'aws', format: 'aws-ip-ranges', url: `${w.base}/aws.json` },
      { name: 'tor', format: 'tor-exit-list', url: `${w.base}/torbulkexitlist` },
      { name: 'my-vpns', format: 'cidr-list', category: 'vpn', url: `${w.base}/vpn.txt` },
      { name: 'icloud-relay', format: 'apple-private-relay', url: `${w.base}/egress-ip-ranges.csv` },
    ],
    // No listed sellers.json nor ads.txt domain: both come from traffic.
    sellers: { url: 'http://{domain}/sellers/{domain}.json', fromTraffic: 10 },
    adsTxt: { fromTraffic: 10, rate: 100 },
  }));
  const ts = await startTestServer({ threads: 1, dataRefresh: 300 }, dir, { dataConnect: w.connect });
  t.teardown(() => ts.stop());
  const refresher = ts.server.refresher!;

  // Before any refresh: the lists of the build only.
  const ads = { dmn: 'www.news.example', pub: 'int-7' };
  const chain = '1.0,1!exchange1.example,pub-1,1';
  t.match(await lookup(ts, { ip: '23.24.0.9' }), { ipReputation: { ipHosting: false, ipVpn: false } }, 'not hosting yet (and now cached)');
  t.match(await lookup(ts, { ip: '23.24.1.5' }), { ipReputation: { ipVpn: false } });
  t.match(await lookup(ts, { ip: '23.24.50.1', schain: chain }), { schain: { valid: true, verified: false } }, 'no sellers.json for exchange1 yet');
  t.equal((await lookup(ts, { ip: '23.24.50.1', ...ads })).components.p_sivt, 0, 'nothing against the seller before the crawl');
  const before = explain(ts, { ip: '23.24.50.1', ...ads });
  t.equal(before.adsTxt!.reason, 'not_crawled');
  t.notOk(before.reasons.includes('seller_unauthorized'), 'a publisher not crawled yet never counts against the request');
  const relayBefore = explain(ts, { ip: '3.5.140.2' });
  t.match(relayBefore.ip, { hosting: true, hostingSource: 'asn-list', relay: false }, 'AWS network by the ASN list');

  // The lookup thread reports what it saw (once a second): the crawl lists follow traffic.
  await until('the seen domains to reach the refresher', () => {
    const s = refresher.status();
    return (s.adsTxt.site.new ?? 0) >= 1 && s.sellers.fromTraffic >= 1;
  });
  // (The timer's first pass, 5 s after the start, may have done part of this already.)
  await refresher.runOnce({ all: true });
  const st = refresher.status();
  t.ok(st.sources.every((s) => s.status === 'ok'), 'every source fetched');
  t.match(st.sellers, { fromTraffic: 1, ok: 1 }, 'the sellers.json of the sid seen in traffic');
  t.match(st.adsTxt.site, { ok: 1 }, 'news.example/ads.txt crawled (root of www.news.example)');
  t.ok(w.requestsTo('news.example/ads.txt').length >= 1);
  await until('the reload the refresh asked for', () => {
    const b = ts.server.bundle;
    // The four refreshed lists (the embedded crawler-range snapshot is loaded besides them).
    return b.ipRanges.files.filter((f) => !f.source.startsWith('embedded:')).length === 4 && b.adsTxt.stats.ok === 1 && b.sellers.some((f) => f.name === 'exchange1.example.json');
  });

  const hosting = await lookup(ts, { ip: '23.24.0.9' });
  t.match(hosting, { ipReputation: { ipHosting: true, ipVpn: false } }, 'AWS published range → ipHosting (the cached verdict of the old generation is not served)');
  t.ok(hosting.components.p_givt >= 0.6);
  t.match(explain(ts, { ip: '23.24.0.9' }).ip, { hosting: true, hostingSource: 'published-ranges' });
  const tor = await lookup(ts, { ip: '23.24.1.5' });
  t.match(tor, { ipReputation: { ipVpn: true } }, 'Tor exit list → ipVpn');
  t.ok(explain(ts, { ip: '23.24.1.5' }).reasons.includes('ip_tor'));
  t.match(await lookup(ts, { ip: '23.24.2.77' }), { ipReputation: { ipVpn: true, ipHosting: false } }, 'operator VPN list → ipVpn');
  t.match(explain(ts, { ip: '23.24.2.77' }), { reasons: ['ip_vpn'], ip: { vpnSource: 'published-ranges' } });

  // iCloud Private Relay: its own reason, neither hosting nor VPN, low on its own.
  const relay = await lookup(ts, { ip: '23.24.3.4' });
  t.match(relay, { botRisk: { band: 'low' }, ipReputation: { ipHosting: false, ipVpn: false } });
  t.same(explain(ts, { ip: '23.24.3.4' }).reasons, ['ip_relay']);
  const relayAws = await lookup(ts, { ip: '3.5.140.2' });
  t.match(relayAws, { botRisk: { band: 'low' }, ipReputation: { ipHosting: false, ipVpn: false } }, 'relay egress inside AWS is not hosting');
  t.same(explain(ts, { ip: '3.5.140.2' }).reasons, ['ip_relay']);

  // sellers.json fetched from traffic → schain.verified.
  t.match(await lookup(ts, { ip: '23.24.50.1', schain: chain }), { schain: { valid: true, verified: true, complete: 1 } });
  t.match(await lookup(ts, { ip: '23.24.50.1', schain: '1.0,1!exchange1.example,nobody,1' }), { schain: { verified: false } });

  // ads.txt: DIRECT for an INTERMEDIARY account is suspect; the publisher's own account is the owner.
  const suspect = explain(ts, { ip: '23.24.50.1', ...ads });
  t.match(suspect.adsTxt, { verdict: 'unauthorized', reason: 'direct_not_publisher' });
  t.same(suspect.reasons, ['seller_unauthorized']);
  const suspectAnswer = await lookup(ts, { ip: '23.24.50.1', ...ads });
  t.equal(suspectAnswer.components.p_sivt, 0.4, 'seller_unauthorized feeds p_sivt');
  t.match(explain(ts, { ip: '23.24.50.1', dmn: 'news.example', pub: 'pub-1' }), { adsTxt: { verdict: 'authorized', reason: 'owner' }, reasons: [] });
  t.match(explain(ts, { ip: '23.24.50.1', dmn: 'news.example', pub: 'res-3' }), { adsTxt: { reason: 'reseller' }, reasons: [] });
  t.match(explain(ts, { ip: '23.24.50.1', dmn: 'news.example', pub: 'stranger' }), { adsTxt: { reason: 'seller_not_listed' }, reasons: ['seller_unauthorized'] });
  t.match(
    explain(ts, { ip: '23.24.50.1', dmn: 'news.example', pub: 'pub-1', schain: '1.0,1!exchange1.example,pub-1,1!other.example,x-1,1' }),
    { adsTxt: { reason: 'schain_node_not_listed' }, reasons: ['schain_unverified', 'seller_unauthorized'] },
    'a paying node of the chain must be in the publisher\'s file too',
  );
  t.match(explain(ts, { ip: '23.24.50.1', dmn: 'elsewhere.example', pub: 'stranger' }), { adsTxt: { reason: 'not_crawled' }, reasons: [] });

  // A source that breaks keeps the data in use.
  w.set('/aws.json', { body: '<html>maintenance</html>', headers: { 'Content-Type': 'text/html' } });
  const broken = await refresher.runOnce({ all: true });
  t.match(broken.items.find((i) => i.name === 'aws'), { result: 'failed', detail: /stays in use/ });
  await ts.server.reload();
  t.match(await lookup(ts, { ip: '23.24.0.10' }), { ipReputation: { ipHosting: true } }, 'the last good AWS ranges still apply');
});
