// docs/post-bid.md's display-creative snippets, as written, in a real browser (Debian's
// Chromium through playwright-core) on a page of another origin: the script form fires
// navigator.sendBeacon (a POST) and the pixel a GET; both beacons must be judged, not
// refused. The lids come from lookups made with the browser's own UA, from 127.0.0.1 as
// the browser's beacons are, so each is `valid`.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { launchChromium } from '../dashboard/browser.ts';
import { startTestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

const DOC = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'post-bid.md'), 'utf8');
const section = DOC.slice(DOC.indexOf('## In a display creative'));
const PIXEL = /```html\n([^]*?)```/.exec(section)![1]!;
const SCRIPT = /```js\n([^]*?)```/.exec(section)![1]!;
const DOC_LID = /lid=([A-Za-z0-9_-]+…)/.exec(PIXEL)![1]!;

const srv = await startTestServer({ threads: 1 });
t.teardown(() => srv.stop());
const browser = await launchChromium();
t.teardown(() => browser.close());

async function outcomes(): Promise<Record<string, number>> {
  const text = await (await fetch(`${srv.metrics}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^ivtd_impression_beacons_total\{outcome="([a-z]+)"\} (\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

t.test('the documented snippets fire beacons ivtd judges: sendBeacon (POST) and the pixel (GET)', async (t) => {
  const ctx = await browser.newContext();
  t.teardown(() => ctx.close());
  const page = await ctx.newPage();
  const ua = await page.evaluate(() => navigator.userAgent);
  const lidFor = async (uid: string) => {
    const q = new URLSearchParams({ p: srv.customer.partner_id, k: srv.customer.prebid_key, pub: 'pub-1', node: 'n', ip: '127.0.0.1', ua, uid, sid: 'exchange1.example', adt: '1', dvt: '2' });
    const r = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
    return ((await r.json()) as { lid: string }).lid;
  };
  const [scriptLid, pixelLid] = [await lidFor('beacon-script'), await lidFor('beacon-pixel')];
  // The snippets with this server's address and a real lid in place of the doc's.
  const fill = (s: string, lid: string) => s.replaceAll('https://ivtd.example.com', srv.prebid).replaceAll(DOC_LID, lid);
  t.ok(fill(SCRIPT, scriptLid).includes('navigator.sendBeacon'), 'the script form uses sendBeacon');
  const html = `<!doctype html><html><body>${fill(PIXEL, pixelLid)}<script>${fill(SCRIPT, scriptLid)}</script></body></html>`;
  // A page of its own origin, as a publisher's would be.
  const site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => site.close(() => r())));
  await page.goto(`http://127.0.0.1:${(site.address() as AddressInfo).port}/`);
  await until('both beacons judged', async () => ((await outcomes()).valid ?? 0) === 2, 10_000);
  const o = await outcomes();
  t.equal(o.valid, 2, 'two valid impressions: the sendBeacon POST and the pixel GET');
  t.notOk(o.refused, 'none refused (a POST was a 405 before)');
});
