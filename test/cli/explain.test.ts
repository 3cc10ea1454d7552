// `ivtd explain 'QUERY'` (and `--file` for a bid request): the admin explain from the
// command line, judged by the running server over its control socket (it existed only as
// GET /v1/account/explain); without a server it says so.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestServer } from '../helpers/server.ts';
import { runIvtd } from './run-cli.ts';

t.test('explain a GET lookup and a bid request through the running server', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36');
  const q = `p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&pub=p&node=n&ip=159.89.0.1&ua=${ua}&uid=u1&sid=s.example&adt=1&dvt=2`;
  const json = await runIvtd(['explain', q, '--json', '--data-dir', srv.dataDir]);
  t.equal(json.code, 0, json.stderr);
  const ex = JSON.parse(json.stdout) as { status: number; reasons: string[]; category: string };
  t.equal(ex.status, 200);
  t.same(ex.reasons, ['ua_declared_bot', 'ua_headless', 'asn_hosting'], 'the reason codes the account route gives');
  t.equal(ex.category, 'declared_crawler');
  const text = await runIvtd(['explain', q, '--data-dir', srv.dataDir]);
  t.match(text.stdout, /^Answer 200: band high \(score [\d.]+\)\n {2}transaction {3}givt \(category declared_crawler\)\n {2}reasons {7}ua_declared_bot, ua_headless, asn_hosting/);

  const fixture = fileURLToPath(new URL('../fixtures/ortb/supplemental/sua-contradicts-ua.json', import.meta.url));
  const { readFileSync, writeFileSync } = await import('node:fs');
  const body = join(srv.dataDir, 'bid.json');
  writeFileSync(body, JSON.stringify((JSON.parse(readFileSync(fixture, 'utf8')) as { request: unknown }).request));
  const ortb = await runIvtd(['explain', `p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&node=n`, '--file', body, '--data-dir', srv.dataDir]);
  t.equal(ortb.code, 0, ortb.stderr);
  t.match(ortb.stdout, /sua_mismatch/);
  t.match(ortb.stdout, /UA {12}sua_mismatch: device\.sua says platform macos, the UA string windows/, 'and why sua_mismatch fired');
  const bad = await runIvtd(['explain', 'p=x&k=y', '--file', '-', '--data-dir', srv.dataDir], { stdin: '{"id": 1' });
  t.equal(bad.code, 2, 'a body that is no bid request: a value not allowed');
  t.match(bad.stderr, /--file: /);
});

t.test('without a running server: says so, exit 1; usage errors exit 2', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-explain-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const none = await runIvtd(['explain', 'p=x&k=y', '--data-dir', dir]);
  t.equal(none.code, 1);
  t.match(none.stderr, /no ivtd server is running on .*explain judges a lookup with the running server's data and keys/);
  const two = await runIvtd(['explain', 'a=1', 'b=2', '--data-dir', dir]);
  t.equal(two.code, 2);
  t.match(two.stderr, /"explain" takes one lookup query string, quoted/);
  const help = await runIvtd(['explain', '--help']);
  t.match(help.stdout, /ivtd explain 'QUERY' \[--file BIDREQUEST\.json\|-\]/);
});
