// The Policy page in a real browser against the real server: add (with the API's refusal
// next to the field), search, remove, import and export CSV, and the lookup port answering
// by what the page set.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { buildDashboard } from '../../tools/build-dashboard.ts';
import { startTestServer } from '../helpers/server.ts';
import { DESKTOP, launchChromium, openPage, screenshots } from './browser.ts';

await buildDashboard();
const browser: Browser = await launchChromium();
t.teardown(() => browser.close());

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

t.test('policy page: add, search, remove, import and export CSV', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const ctx = await browser.newContext({ viewport: DESKTOP, acceptDownloads: true });
  t.teardown(() => ctx.close());
  const { page, watch } = await openPage(ctx, srv.api);
  const c = srv.customer;
  const band = async (pub: string) => {
    const q = new URLSearchParams({ p: c.partner_id, k: c.prebid_key, pub, node: 'n', ip: '73.162.10.20', ua: CHROME, uid: `u-${pub}-${Math.random()}`, sid: 'ok.example', adt: '1', dvt: '2' });
    const r = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`, { headers: { connection: 'close' } });
    return ((await r.json()) as { botRisk: { band: string } }).botRisk.band;
  };

  await page.goto(`${srv.api}/`);
  await page.getByLabel('Username').fill(c.username);
  await page.getByLabel('Password').fill(c.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Analytics', level: 1 }).waitFor();
  await page.getByRole('link', { name: 'Policy' }).click();
  await page.getByText('No entries yet').waitFor();

  const addForm = page.getByRole('form', { name: 'Add an entry' });
  // The add row lines up (the value box sat ~60 px above Kind and Action: its hint below it
  // under align-items: flex-end) and the action menu shows its whole text ("Deny (band high").
  const tops = await addForm.evaluate((f) => Array.from(f.querySelectorAll('input, select')).map((c) => Math.round(c.getBoundingClientRect().top)));
  t.ok(Math.max(...tops) - Math.min(...tops) <= 2, `kind, value and action boxes on one line (tops ${tops.join(', ')})`);
  const cut = await addForm.getByLabel('Action').evaluate((sel) => {
    const s = sel as HTMLSelectElement;
    const probe = document.createElement('span');
    probe.style.font = getComputedStyle(s).font;
    probe.style.position = 'absolute';
    probe.style.whiteSpace = 'nowrap';
    document.body.append(probe);
    const widest = Math.max(...Array.from(s.options).map((o) => ((probe.textContent = o.text), probe.getBoundingClientRect().width)));
    probe.remove();
    return { widest, room: s.clientWidth - 36 }; // padding and the arrow
  });
  t.ok(cut.widest <= cut.room, `the action menu's longest option fits (${cut.widest.toFixed(0)} px of text in ${cut.room} px)`);

  await addForm.getByLabel('Kind').selectOption('ip');
  await addForm.getByLabel('Value').fill('10.0.0.1/8');
  await addForm.getByRole('button', { name: 'Add entry' }).click();
  const err = page.locator('#' + (await addForm.getByLabel('Value').getAttribute('id')) + '-err');
  await err.waitFor({ state: 'visible' });
  t.match(await err.textContent(), /10\.0\.0\.0\/8/, "the API's refusal is shown next to the value, saying what to write");

  await addForm.getByLabel('Kind').selectOption('publisher');
  await addForm.getByLabel('Value').fill('pub-cheat');
  await addForm.getByRole('button', { name: 'Add entry' }).click();
  await page.locator('tbody tr[data-value="pub-cheat"]').waitFor();
  t.equal(await band('pub-cheat'), 'high', 'the lookup port denies what the page added');
  t.equal(await band('pub-fine'), 'low');

  // Import a CSV, then search it.
  const dir = t.testdir();
  const csv = join(dir, 'import.csv');
  writeFileSync(csv, 'kind,action,value\r\nua_substring,allow,PartnerBot\r\ndomain,deny,cheat.example\r\nseller,deny,exchange.example:9\r\n');
  await page.locator('input[type=file]').setInputFiles(csv);
  await page.getByText('Imported import.csv: 3 new entries; the list has 4.').waitFor();
  t.equal(await page.locator('tbody tr').count(), 4);
  await page.getByRole('searchbox').fill('cheat');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 2);
  t.match(await page.locator('#policy-summary').textContent(), /4 of at most 100,000 entries; 2 match/);
  await screenshots(page, 'policy');

  // A bad CSV is refused before anything is sent, naming its line.
  writeFileSync(csv, 'kind,action,value\r\nip,deny,999.1.1.1\r\n');
  await page.locator('input[type=file]').setInputFiles(csv);
  await page.getByText(/import\.csv: .*999\.1\.1\.1/).waitFor();
  t.pass('a bad line is named');

  // Remove.
  await page.getByRole('button', { name: 'Remove publisher pub-cheat' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 1);
  t.equal(await band('pub-cheat'), 'low', 'removed: the model decides again');

  // Export: what import reads.
  await page.getByRole('searchbox').fill('');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 3);
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export CSV' }).click();
  const file = await (await download).path();
  t.equal(readFileSync(file, 'utf8'), 'kind,action,value\r\ndomain,deny,cheat.example\r\nseller,deny,exchange.example:9\r\nua_substring,allow,PartnerBot\r\n');

  // Thresholds.
  const th = page.getByRole('form', { name: 'Band thresholds' });
  await th.getByLabel('Medium from').fill('0.8');
  await th.getByLabel('High from').fill('0.5');
  await th.getByRole('button', { name: 'Save thresholds' }).click();
  await page.getByText(/medium \(0\.8\) must be below high/).waitFor();
  t.pass('thresholds refused with the reason next to the field');

  // At 420 px the entries table stacks, as the report table does, instead of scrolling sideways.
  await page.setViewportSize({ width: 420, height: 844 });
  await page.waitForTimeout(150);
  const wide = await page.evaluate(() => Array.from(document.querySelectorAll('.table-wrap')).map((w) => w.scrollWidth - w.clientWidth));
  t.ok(wide.every((d) => d <= 1), `no table scrolls sideways at 420 px (${wide.join(', ')})`);
  t.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 420), 'nor the page');
  await screenshots(page, 'policy');

  t.same(watch.problems, [], 'no CSP violations, script errors or requests to other origins');
});
