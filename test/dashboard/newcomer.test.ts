// What a newcomer meets in the dashboard, in a real browser against the real server: the
// Integrations page's examples pasted into an interactive bash (GET and OpenRTB lookups),
// the chart's time axis by day and by hour, and the analytics page on a 390×844 phone.
// IVTD_SHOTS=<dir> keeps screenshots of what was checked.
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { buildDashboard } from '../../tools/build-dashboard.ts';
import { DIMENSIONS } from '../../src/base/enums.ts';
import { DIMENSION_LABELS } from '../../src/dashboard/ui/labels.ts';
import { addDays, dateMs, utcDate } from '../../src/dashboard/ui/dates.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { DESKTOP, launchChromium, openPage, PHONE } from './browser.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'lookup', 'exemplary');
const SHOTS = process.env.IVTD_SHOTS;

await buildDashboard();
const browser: Browser = await launchChromium();
t.teardown(() => browser.close());

function lookupQueries(srv: TestServer): string[] {
  return readdirSync(FIXTURES)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) as { path?: string; query: string; status: number })
    .filter((fx) => fx.status === 200 && !fx.path)
    .map((fx) => fx.query.replaceAll('{p}', srv.customer.partner_id).replaceAll('{k}', srv.customer.prebid_key));
}

async function signIn(page: Page, srv: TestServer): Promise<void> {
  await page.goto(`${srv.api}/`);
  await page.getByLabel('Username').fill(srv.customer.username);
  await page.getByLabel('Password').fill(srv.customer.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Analytics', level: 1 }).waitFor();
}

async function shot(page: Page, name: string): Promise<void> {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Pastes a command into an interactive bash (history expansion on, as in a terminal). */
function pasteIntoBash(command: string, env: Record<string, string>): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['--norc', '--noprofile', '-i'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HISTFILE: '/dev/null', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', () => resolve({ stdout, stderr }));
    child.stdin.end(`${command}\nexit\n`);
  });
}

const srv = await startTestServer();
t.teardown(() => srv.stop());
const queries = lookupQueries(srv);
for (const q of queries) {
  const r = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
  if (r.status !== 200) throw new Error(`lookup ${r.status}`);
}
// The threads hand their counts over once a second; then the writer stores them.
const today = utcDate(Date.now());
for (const deadline = Date.now() + 15_000; ; ) {
  await srv.server.reporting!.flush();
  const auth = Buffer.from(`${srv.customer.customer_id}:${srv.customer.reporting_key}`).toString('base64');
  const r = (await (await fetch(`${srv.reporting}/v1/report?start_date=${today}&end_date=${today}`, { headers: { Authorization: `Basic ${auth}` } })).json()) as {
    rows: Array<{ total_transactions: number }>;
  };
  if ((r.rows[0]?.total_transactions ?? 0) >= queries.length) break;
  if (Date.now() > deadline) throw new Error('reporting did not get the lookups within 15 s');
  await new Promise((r) => setTimeout(r, 300));
}

t.test('integrations: both lookup examples work pasted into an interactive bash', async (t) => {
  const ctx = await browser.newContext({ viewport: DESKTOP });
  t.teardown(() => ctx.close());
  const { page, watch } = await openPage(ctx, srv.api);
  await signIn(page, srv);
  await page.getByRole('link', { name: 'Integrations' }).click();
  await page.getByRole('heading', { name: 'Pre-bid lookups' }).waitFor();
  t.match(await page.locator('#ortb-url').textContent(), new RegExp(`:${srv.server.ports.prebid}/api/v1/ivt/ortb$`), 'the OpenRTB endpoint is listed');
  const example = async (title: string) => (await page.locator('.example', { has: page.getByRole('heading', { name: title, exact: true }) }).locator('pre').textContent()) ?? '';
  const env = { IVTD_PREBID_KEY: srv.customer.prebid_key };

  const get = await example('Example lookup');
  t.match(get, /schain=1\.0,1!exchange1/, 'the GET example carries a "!"');
  const ranGet = await pasteIntoBash(get, env);
  t.notMatch(ranGet.stderr, /event not found/, 'no history expansion');
  t.match(JSON.parse(ranGet.stdout), { botRisk: { band: 'low' }, schain: { valid: true, verified: true } }, 'the GET example answers a verdict');

  const ortb = await example('Example OpenRTB lookup');
  t.match(ortb, /^curl .*\/api\/v1\/ivt\/ortb\?/s);
  const ranOrtb = await pasteIntoBash(ortb, env);
  t.notMatch(ranOrtb.stderr, /event not found/);
  t.match(JSON.parse(ranOrtb.stdout), { id: 'req-1', botRisk: { band: 'low' }, schain: { valid: true, verified: true } }, 'the OpenRTB example answers the same verdict, with the request id');
  await shot(page, 'integrations');
  t.same(watch.problems, []);
});

t.test('the chart: by day each date once; by hour the whole range, today a whole day wide', async (t) => {
  const ctx = await browser.newContext({ viewport: DESKTOP });
  t.teardown(() => ctx.close());
  const { page, watch } = await openPage(ctx, srv.api);
  await signIn(page, srv);
  const chart = page.locator('.chart');
  const axis = async () => {
    await page.waitForFunction(() => document.querySelector<HTMLElement>('.chart')?.dataset.xLabels !== undefined);
    const d = await chart.evaluate((e) => ({ ...(e as HTMLElement).dataset }));
    return { labels: JSON.parse(d.xLabels!) as string[], min: Number(d.xMin), max: Number(d.xMax) };
  };
  await page.getByRole('heading', { name: 'Transactions by hour (UTC)' }).waitFor();
  // The page's own default range (the last 7 days as its clock saw them when it opened).
  const start = await page.getByLabel('Start date').inputValue();
  const end = await page.getByLabel('End date').inputValue();
  t.equal(start, addDays(end, -6), 'the default range is 7 days');
  const byHour = await axis();
  t.equal(byHour.min, dateMs(start) / 1000, 'by hour: from the first day’s midnight');
  t.equal(byHour.max, dateMs(addDays(end, 1)) / 1000, 'to the end of today: the hours still to come take their place, so today is not squeezed against the edge');
  t.ok(byHour.labels.length >= 7, `ticks: ${byHour.labels.join(' ')}`);
  if (SHOTS) await chart.screenshot({ path: join(SHOTS, 'chart-hour.png') });

  await page.getByText('By day').click();
  await page.getByRole('heading', { name: 'Transactions by day (UTC)' }).waitFor();
  await page.waitForFunction(() => !JSON.parse(document.querySelector<HTMLElement>('.chart')?.dataset.xLabels ?? '[]').some((l: string) => l.includes(':')));
  const byDay = await axis();
  t.same(byDay.labels, [start, ...[1, 2, 3, 4, 5, 6].map((i) => addDays(start, i).slice(5))], 'by day: one tick per date, each date once');
  t.ok(byDay.min < dateMs(start) / 1000 && byDay.max > dateMs(end) / 1000, 'the first and last days are inside the frame');
  if (SHOTS) await chart.screenshot({ path: join(SHOTS, 'chart-day.png') });
  t.same(watch.problems, []);
});

t.test('on a 390×844 phone nothing is clipped: tables reflow, group-by boxes keep their names', async (t) => {
  const ctx = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
  t.teardown(() => ctx.close());
  const { page, watch } = await openPage(ctx, srv.api);
  await signIn(page, srv);
  await page.locator('table.report tbody tr').first().waitFor();
  await page.locator('table.category-shares tbody tr').first().waitFor();
  await page.getByRole('checkbox', { name: /^hour/ }).check();
  await page.getByRole('checkbox', { name: /^category/ }).check();
  await page.getByRole('checkbox', { name: /^dvt/ }).check();
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.locator('table.report thead th[data-col=dvt]').waitFor({ state: 'attached' });
  await page.locator('.status.loading').waitFor({ state: 'detached' }).catch(() => undefined);
  await shot(page, 'phone-analytics');
  if (SHOTS) await page.locator('table.report tbody tr').nth(1).screenshot({ path: join(SHOTS, 'phone-report-row.png') });

  for (const table of ['table.category-shares', 'table.report']) {
    // The page may still replace a table it is rendering (the report after Apply, the cards
    // that load beside it): measure one that is attached, asking again until it is.
    const measure = () =>
      page.locator(table).evaluate((tb, width) => {
        const wrap = tb.parentElement;
        if (wrap === null || !tb.isConnected) return null;
        const cells = Array.from(tb.querySelectorAll<HTMLElement>('tbody td, tbody th'));
        return {
          cells: cells.length,
          hiddenSideways: wrap.scrollWidth - wrap.clientWidth,
          outside: cells.filter((c) => c.getBoundingClientRect().right > Math.min(width, wrap.getBoundingClientRect().right) + 0.5).map((c) => c.dataset.col ?? c.textContent),
          unlabelled: cells.filter((c) => c.tagName === 'TD' && getComputedStyle(c, '::before').content.replace(/"/g, '') !== c.dataset.label).length,
        };
      }, PHONE.width).catch(() => null);
    let m = await measure();
    for (let tries = 0; m === null && tries < 50; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      m = await measure();
    }
    if (m === null) throw new Error(`${table} never stayed attached long enough to measure`);
    t.ok(m.cells > 0, `${table}: has rows`);
    t.equal(m.hiddenSideways, 0, `${table}: nothing hidden to the side`);
    t.same(m.outside, [], `${table}: every value within the screen`);
    t.equal(m.unlabelled, 0, `${table}: each value shows what it is`);
  }
  t.equal(await page.evaluate(() => document.documentElement.scrollWidth), PHONE.width, 'the page does not scroll sideways');

  for (const d of DIMENSIONS) {
    const label = page.locator('label.check', { has: page.locator(`input[value="${d}"]`) });
    const name = label.locator('.muted');
    t.ok(await name.isVisible(), `${d}: its name is shown`);
    const fits = await name.evaluate((e) => e.scrollWidth <= e.clientWidth && e.getBoundingClientRect().right <= window.innerWidth);
    t.ok(fits, `${d}: "${DIMENSION_LABELS[d]}" is not cut off`);
    t.equal(await name.textContent(), DIMENSION_LABELS[d]);
  }
  t.same(watch.problems, []);
});
