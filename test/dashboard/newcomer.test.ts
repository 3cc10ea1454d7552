// What a newcomer meets in the dashboard, in a real browser against the real server: the
// Integrations page's examples pasted into an interactive bash (GET and OpenRTB lookups),
// the chart's time axis by day and by hour, and the analytics page on a 390×844 phone.
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { buildDashboard } from '../../tools/build-dashboard.ts';
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

const srv = await startTestServer();
t.teardown(() => srv.stop());
for (const q of lookupQueries(srv)) {
  const r = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
  if (r.status !== 200) throw new Error(`lookup ${r.status}`);
}
// The threads hand their counts over once a second; then the writer stores them.
for (const deadline = Date.now() + 15_000; ; ) {
  await srv.server.reporting!.flush();
  const auth = Buffer.from(`${srv.customer.customer_id}:${srv.customer.reporting_key}`).toString('base64');
  const today = new Date().toISOString().slice(0, 10);
  const r = (await (await fetch(`${srv.reporting}/v1/report?start_date=${today}&end_date=${today}`, { headers: { Authorization: `Basic ${auth}` } })).json()) as { rows: Array<{ total_transactions: number }> };
  if ((r.rows[0]?.total_transactions ?? 0) >= lookupQueries(srv).length) break;
  if (Date.now() > deadline) throw new Error('reporting did not get the lookups within 15 s');
  await new Promise((r) => setTimeout(r, 300));
}

t.test('explore', async (t) => {
  const ctx = await browser.newContext({ viewport: PHONE });
  t.teardown(() => ctx.close());
  const { page } = await openPage(ctx, srv.api);
  await signIn(page, srv);
  await page.locator('table.report tbody tr').first().waitFor();
  await page.locator('table.category-shares tbody tr').first().waitFor();
  await page.waitForTimeout(500);
  await shot(page, 'phone-analytics');
  await page.setViewportSize(DESKTOP);
  await page.waitForTimeout(300);
  await page.locator('.chart').screenshot({ path: '/tmp/h6shots/chart-hour.png' });
  console.log(await page.locator('.chart').evaluate((e) => JSON.stringify((e as HTMLElement).dataset)));
  await page.getByText('By day').click();
  await page.waitForTimeout(500);
  await page.locator('.chart').screenshot({ path: '/tmp/h6shots/chart-day.png' });
  console.log(await page.locator('.chart').evaluate((e) => JSON.stringify((e as HTMLElement).dataset)));
});
