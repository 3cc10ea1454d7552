// The dashboard in a real browser against the real server (all listeners, a fresh data
// dir): sign-in, analytics equal to the reporting API, projects, key rotation, and a
// session that ends. Screenshots of every page go to test/artifacts/.
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { buildDashboard } from '../../tools/build-dashboard.ts';
import { utcDate } from '../../src/dashboard/ui/dates.ts';
import { DAY_MS } from '../../src/base/time.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { DESKTOP, launchChromium, openPage, screenshots } from './browser.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'lookup', 'exemplary');

await buildDashboard();
const browser: Browser = await launchChromium();
t.teardown(() => browser.close());

async function httpGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const r = await fetch(url, { headers });
  return { status: r.status, body: await r.text() };
}

/** The valid lookups of the exemplary fixtures for this customer. */
function lookupQueries(srv: TestServer, key = srv.customer.prebid_key): string[] {
  return readdirSync(FIXTURES)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) as { path?: string; query: string; status: number })
    .filter((fx) => fx.status === 200 && !fx.path)
    .map((fx) => fx.query.replaceAll('{p}', srv.customer.partner_id).replaceAll('{k}', key));
}

interface Report {
  meta: { start_date: string; end_date: string; group_by: string[]; total_rows: number; returned_rows: number; offset: number };
  rows: Array<Record<string, string | number>>;
}

/** The reporting API on its own port (HTTP Basic), as a customer's script would call it. */
async function report(srv: TestServer, query: string): Promise<Report> {
  const auth = Buffer.from(`${srv.customer.customer_id}:${srv.customer.reporting_key}`).toString('base64');
  const r = await httpGet(`${srv.reporting}/v1/report?${query}`, { Authorization: `Basic ${auth}` });
  if (r.status !== 200) throw new Error(`report ${query}: ${r.status} ${r.body}`);
  return JSON.parse(r.body) as Report;
}

/** Makes the lookups and waits until reporting has them all (threads hand counts over each second). */
async function recordLookups(srv: TestServer, queries: string[], range: string): Promise<void> {
  for (const q of queries) {
    const r = await httpGet(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
    if (r.status !== 200) throw new Error(`lookup ${r.status}: ${r.body}`);
  }
  const deadline = Date.now() + 15_000;
  for (;;) {
    await srv.server.reporting!.flush();
    const total = Number((await report(srv, range)).rows[0]?.total_transactions ?? 0);
    if (total >= queries.length) return;
    if (Date.now() > deadline) throw new Error(`reporting has ${total} of ${queries.length} lookups after 15 s`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** The report table on the page: one object per row, dimension values raw, metrics as numbers. */
async function tableRows(page: Page): Promise<Array<Record<string, string | number>>> {
  return page.locator('table.report tbody tr').evaluateAll((trs) =>
    trs.map((tr) => {
      const o: Record<string, string | number> = {};
      for (const td of Array.from(tr.querySelectorAll<HTMLElement>('td[data-col]'))) {
        const col = td.dataset.col!;
        o[col] = td.dataset.value ?? Number((td.textContent ?? '').replace(/,/g, ''));
      }
      return o;
    }),
  );
}

/** API rows in the table's shape (dimension values as the strings the table shows). */
function asTable(rows: Report['rows'], groupBy: string[]): Array<Record<string, string | number>> {
  const metrics = ['total_transactions', 'valid_transactions', 'invalid_transactions', 'givt_transactions', 'sivt_transactions'];
  return rows.map((r) => Object.fromEntries([...groupBy.map((d) => [d, r[d] === null || r[d] === undefined ? '' : String(r[d])]), ...metrics.map((m) => [m, r[m]])]));
}

/** Parses RFC 4180 CSV (quoted fields, doubled quotes, CRLF). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += c;
  }
  return rows;
}

async function signIn(page: Page, srv: TestServer): Promise<void> {
  await page.goto(`${srv.api}/`);
  await page.getByLabel('Username').fill(srv.customer.username);
  await page.getByLabel('Password').fill(srv.customer.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Analytics', level: 1 }).waitFor();
}

const NO_PROBLEMS = 'no CSP violations, script errors or requests to other origins';

t.test('the dashboard with a signed-in customer', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const ctx = await browser.newContext({ viewport: DESKTOP, acceptDownloads: true });
  t.teardown(() => ctx.close());
  const { page, watch } = await openPage(ctx, srv.api);

  await t.test('sign-in', async (t) => {
    const res = await page.goto(`${srv.api}/`);
    t.equal(res?.status(), 200, 'the dashboard is served on the account API port');
    t.match(res?.headers()['content-security-policy'], /default-src 'self'/);
    await page.getByRole('heading', { name: 'Sign in to ivtd' }).waitFor();
    await screenshots(page, 'login');
    await page.getByLabel('Username').fill(srv.customer.username);
    await page.getByLabel('Password').fill('wrong password!');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Incorrect username or password' }).waitFor();
    t.pass('a wrong password is explained on the form');
    // Keyboard only: fields are labelled, focus is visible, Enter submits.
    await page.getByLabel('Username').focus();
    await page.keyboard.press('Tab');
    t.ok(await page.getByLabel('Password').evaluate((el) => el === document.activeElement), 'Tab moves from username to password');
    t.not(await page.getByLabel('Password').evaluate((el) => getComputedStyle(el).outlineStyle), 'none', 'the focused field shows a focus ring');
    await page.keyboard.press('Control+A');
    await page.keyboard.type(srv.customer.password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Analytics', level: 1 }).waitFor();
    await page.locator('.who', { hasText: srv.customer.username }).waitFor();
    t.pass('the header names the user');
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
    t.equal(stored, '{}{}', 'no token in localStorage, sessionStorage or cookies');
  });

  await t.test('analytics shows what the reporting API returns', async (t) => {
    // The exemplary lookups, plus 25 with distinct p1 values (two pages of 20) and one with
    // a p1 that CSV has to quote.
    const base = lookupQueries(srv);
    const custom = Array.from({ length: 25 }, (_, i) => `${base[0]}&p1=v${String(i).padStart(2, '0')}`);
    custom.push(`${base[0]}&p1=${encodeURIComponent('x,"y" z')}`);
    const lastWeek = () => ({ today: utcDate(Date.now()), weekAgo: utcDate(Date.now() - 6 * DAY_MS) });
    const { today, weekAgo } = lastWeek();
    const range = `start_date=${weekAgo}&end_date=${today}`;
    await recordLookups(srv, [...base, ...custom], range);
    const total = await report(srv, range);
    t.equal(total.rows[0]!.total_transactions, base.length + custom.length, 'reporting has every lookup');

    await page.getByRole('link', { name: 'Analytics' }).click();
    await page.getByRole('heading', { name: 'Analytics', level: 1 }).waitFor();
    // The page takes its clock when it opens: after midnight UTC, that is the next day's week.
    const shownStart = await page.getByLabel('Start date').inputValue();
    const expected = shownStart === weekAgo ? { today, weekAgo } : lastWeek();
    t.equal(shownStart, expected.weekAgo, 'default range: the last 7 days (UTC)');
    t.equal(await page.getByLabel('End date').inputValue(), expected.today);

    // Default: grouped by date.
    await page.locator('table.report tbody tr').first().waitFor();
    const byDate = await report(srv, `${range}&group_by=date&limit=20&offset=0`);
    t.same(await tableRows(page), asTable(byDate.rows, ['date']), 'grouped by date: the same rows as the API');
    const tile = async (name: string) => Number(((await page.locator(`.tile.${name} .tile-value`).textContent()) ?? '').replace(/,/g, ''));
    await page.locator('.tile.total').waitFor();
    t.equal(await tile('total'), total.rows[0]!.total_transactions, 'headline total');
    t.equal(await tile('valid'), total.rows[0]!.valid_transactions, 'headline valid');
    t.equal(await tile('givt'), total.rows[0]!.givt_transactions, 'headline GIVT');
    t.equal(await tile('sivt'), total.rows[0]!.sivt_transactions, 'headline SIVT');
    t.equal(await page.locator('.chart canvas').count(), 1, 'the chart is drawn');

    // Invalid traffic by category: the API's report grouped by category, valid traffic left out.
    const byCategory = await report(srv, `${range}&group_by=category&limit=1000`);
    const invalidByCategory = byCategory.rows
      .filter((r) => Number(r.invalid_transactions) > 0)
      .map((r) => ({ category: String(r.category), invalid: r.invalid_transactions, givt: r.givt_transactions, sivt: r.sivt_transactions }));
    t.ok(invalidByCategory.length >= 2, `the fixtures are invalid for several reasons: ${invalidByCategory.map((c) => c.category).join(', ')}`);
    t.ok(byCategory.rows.some((r) => r.category === 'none' && r.invalid_transactions === 0), 'valid traffic is category none');
    await page.locator('table.category-shares tbody tr').first().waitFor();
    const shownCategories = await page.locator('table.category-shares tbody tr').evaluateAll((trs) =>
      // No helper functions in here: the page runs this source as is (tsx's __name is not there).
      trs.map((tr) => {
        const o: Record<string, string | number> = { category: (tr as HTMLElement).dataset.category! };
        for (const td of Array.from(tr.querySelectorAll<HTMLElement>('td[data-col]'))) o[td.dataset.col!.replace('_transactions', '')] = Number((td.textContent ?? '').replace(/,/g, ''));
        return o;
      }),
    );
    const byName = (a: Record<string, unknown>, b: Record<string, unknown>) => (String(a.category) < String(b.category) ? -1 : 1);
    t.same([...shownCategories].sort(byName), [...invalidByCategory].sort(byName), 'each category with invalid traffic, counts as the API gives them');
    t.ok(shownCategories.every((c, i) => i === 0 || Number(shownCategories[i - 1]!.invalid) >= Number(c.invalid)), 'most invalid first');
    t.match(await page.locator('table.category-shares tr[data-category=declared_crawler] th').textContent(), /Declared crawler or spider/, 'named in words');
    const [catDownload] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download category CSV' }).click()]);
    t.equal(catDownload.suggestedFilename(), `ivtd-invalid-by-category_${weekAgo}_${today}.csv`);
    const catCsv = parseCsv(readFileSync((await catDownload.path())!, 'utf8'));
    t.same(catCsv[0], ['category', 'invalid_transactions', 'givt_transactions', 'sivt_transactions', 'share']);
    t.same(
      catCsv.slice(1).map((r) => r.slice(0, 4)),
      shownCategories.map((c) => [c.category, String(c.invalid), String(c.givt), String(c.sivt)]),
      'category CSV: the rows on the page',
    );
    await screenshots(page, 'analytics');

    // Group by dvt and env, filtered to site traffic.
    await page.getByRole('checkbox', { name: /^date/ }).uncheck();
    await page.getByRole('checkbox', { name: /^dvt/ }).check();
    await page.getByRole('checkbox', { name: /^env/ }).check();
    await page.locator('details.filters summary').click();
    await page.getByLabel(/^env ·/).fill('site');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('table.report thead th[data-col=dvt]').waitFor();
    await page.locator('.status.loading').waitFor({ state: 'detached' }).catch(() => undefined);
    const byDvt = await report(srv, `${range}&group_by=dvt,env&limit=20&offset=0&env=site`);
    t.ok(byDvt.rows.length > 1, 'several device types');
    t.same(await tableRows(page), asTable(byDvt.rows, ['dvt', 'env']), 'grouped by dvt,env with a filter: the same rows as the API');
    await screenshots(page, 'analytics-grouped');

    // Group by category, filtered to two of them: the table names each in words.
    await page.getByLabel(/^env ·/).fill('');
    await page.getByRole('checkbox', { name: /^dvt/ }).uncheck();
    await page.getByRole('checkbox', { name: /^env/ }).uncheck();
    await page.getByRole('checkbox', { name: /^category/ }).check();
    const twoCategories = invalidByCategory.slice(0, 2).map((c) => c.category).join(',');
    await page.getByLabel(/^category ·/).fill(twoCategories);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('table.report thead th[data-col=category]').waitFor();
    await page.locator('.status.loading').waitFor({ state: 'detached' }).catch(() => undefined);
    const byCat = await report(srv, `${range}&group_by=category&limit=20&offset=0&category=${twoCategories}`);
    t.equal(byCat.rows.length, 2, 'the filter keeps the two categories');
    t.same(await tableRows(page), asTable(byCat.rows, ['category']), 'grouped by category with a category filter: the same rows as the API');
    t.match(await page.locator(`table.report td[data-col=category][data-value=${byCat.rows[0]!.category}]`).getAttribute('title'), /\w/, 'a category cell says what it means');
    await screenshots(page, 'analytics-category');

    // Group by p1: two pages; the CSV of page 2 is exactly that page.
    await page.getByLabel(/^category ·/).fill('');
    await page.getByRole('checkbox', { name: /^category/ }).uncheck();
    await page.getByRole('checkbox', { name: /^p1/ }).check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('table.report thead th[data-col=p1]').waitFor();
    const p1First = await report(srv, `${range}&group_by=p1&limit=20&offset=0`);
    await page.getByText(`Rows 1–20 of ${p1First.meta.total_rows}`).waitFor();
    t.same(await tableRows(page), asTable(p1First.rows, ['p1']), 'page 1 of p1');
    await page.getByRole('button', { name: 'Next →' }).click();
    const p1Second = await report(srv, `${range}&group_by=p1&limit=20&offset=20`);
    await page.getByText(`Rows 21–${p1First.meta.total_rows} of ${p1First.meta.total_rows}`).waitFor();
    t.same(await tableRows(page), asTable(p1Second.rows, ['p1']), 'page 2 of p1');
    t.ok(p1Second.rows.some((r) => r.p1 === 'x,"y" z'), 'the awkward value is on this page');

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    t.equal(download.suggestedFilename(), `ivtd-report_${weekAgo}_${today}_p1_p2.csv`);
    const csv = parseCsv(readFileSync((await download.path())!, 'utf8'));
    const cols = ['p1', 'total_transactions', 'valid_transactions', 'invalid_transactions', 'givt_transactions', 'sivt_transactions'];
    t.same(csv[0], cols, 'CSV header: the API field names');
    t.same(csv.slice(1), p1Second.rows.map((r) => cols.map((c) => String(r[c]))), 'CSV rows: exactly the API rows of this page');

    // After the bid: one lookup's impression beacon, shown by band and status; in the
    // calibration table the beacon stands apart (beaconed, none caught invalid) and is no
    // label of the truth (it was counted as a valid label: a bot fires its own beacon);
    // then the customer's feedback labels the lookup, and the share shows.
    const one = (await (await fetch(`${srv.prebid}/api/v1/ivt/lookup?${base[0]}`)).json()) as { lid: string; botRisk: { band: string } };
    t.equal((await fetch(`${srv.prebid}/api/v1/ivt/imp?lid=${one.lid}`)).status, 204, 'a beacon');
    type Cal = { rows: Array<{ band: string; labelled_lookups: number; by_beacon: { labelled: number } }> };
    const cal = async () => (await (await fetch(`${srv.reporting}/v1/report/calibration?${range}`, { headers: { authorization: 'Basic ' + Buffer.from(`${srv.customer.customer_id}:${srv.customer.reporting_key}`).toString('base64') } })).json()) as Cal;
    for (let i = 0; i < 50 && ((await cal()).rows.find((r) => r.band === one.botRisk.band)?.by_beacon.labelled ?? 0) < 1; i++) {
      await srv.server.reporting!.flushImpressions();
      await new Promise((r) => setTimeout(r, 200));
    }
    const calCell = (col: string) => page.locator(`table.calibration tr[data-band=${one.botRisk.band}] td[data-col=${col}]`);
    await page.getByRole('button', { name: '7 days' }).click();
    // The tables of the first load are there already: wait for the new answer.
    await calCell('beacon-labelled').filter({ hasText: /^1$/ }).waitFor({ timeout: 10_000 }).catch(() => undefined);
    t.same(await page.locator('table.calibration tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.band)), ['low', 'medium', 'high'], 'calibration: every band');
    t.equal(await calCell('beacon-labelled').textContent(), '1', 'the beacon: one beaconed lookup, in the beacons\' columns');
    t.equal(await calCell('beacon-invalid').textContent(), '0', 'none caught invalid');
    t.equal(await calCell('feedback-labelled').textContent(), '0', 'a clean beacon is no label of the truth');
    t.equal(await page.locator('table.calibration meter').count(), 0, 'no share without feedback');
    const impCells = await page.locator('table.impressions tbody td').allTextContents();
    t.equal(impCells.reduce((s, c) => s + Number(c.replace(/,/g, '')), 0), 1, 'one impression in the band × status table');
    const { login } = await import('../account/client.ts');
    const bearer = (await login(srv.api, srv.customer.username, srv.customer.password)).access_token;
    const fb = await fetch(`${srv.api}/v1/feedback`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: JSON.stringify({ labels: [{ lid: one.lid, label: 'invalid', source: 'chargeback' }] }) });
    t.equal(fb.status, 200, 'feedback labels the lookup');
    await page.getByRole('button', { name: '7 days' }).click();
    await calCell('feedback-labelled').filter({ hasText: /^1$/ }).waitFor({ timeout: 10_000 }).catch(() => undefined);
    t.equal(await calCell('feedback-labelled').textContent(), '1', 'the feedback label, in the feedback columns');
    t.equal(await calCell('feedback-invalid').textContent(), '1');
    t.equal(await page.locator('table.calibration meter').count(), 1, 'a share bar where feedback labelled something');
    t.match(await calCell('feedback-share').textContent(), /100\.0 %/);
    t.notMatch(await page.locator('section.post-bid').textContent(), /\(docs\/post-bid\.md\)/, 'no file path printed as text');
    await screenshots(page, 'after-the-bid');
    // At 420 px its tables stack as the report table does (they scrolled sideways).
    await page.setViewportSize({ width: 420, height: 844 });
    await page.waitForTimeout(150);
    const sideways = await page.evaluate(() => Array.from(document.querySelectorAll('section.post-bid .table-wrap')).map((w) => w.scrollWidth - w.clientWidth));
    t.ok(sideways.length === 2 && sideways.every((d) => d <= 1), `after the bid: no table scrolls sideways at 420 px (${sideways.join(', ')})`);
    t.match(await calCell('feedback-labelled').evaluate((td) => getComputedStyle(td, '::before').content), /Feedback: labelled/, 'each cell says what it is');
    await page.setViewportSize(DESKTOP);

    // Error states: a range the form refuses, then one the API refuses.
    await page.getByLabel('Start date').fill(today);
    await page.getByLabel('End date').fill(weekAgo);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('End date must not be before the start date.').waitFor();
    t.pass('a backwards range is explained before any request');
    await page.getByLabel('Start date').fill('2001-01-01');
    await page.getByLabel('End date').fill(today);
    await page.getByRole('button', { name: 'Apply' }).click();
    const apiError = await report(srv, `start_date=2001-01-01&end_date=${today}&group_by=p1&limit=20&offset=0`).then(
      () => '',
      (e: Error) => e.message,
    );
    t.match(apiError, /^report .*: 422 /, 'the API refuses a range past the retention');
    const shown = page.locator('.status.error').first();
    await shown.waitFor();
    t.match(await shown.textContent(), /Could not load the (report|chart|categories)/, 'the page says the request failed');
    t.match(await shown.textContent(), new RegExp(JSON.parse(apiError.replace(/^[^{]*/, '')).message.slice(0, 20).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'with the API message');
    t.ok(await shown.getByRole('button', { name: 'Try again' }).isVisible(), 'and offers to try again');
    await screenshots(page, 'analytics-error');
  });

  await t.test('projects: create, validation message, edit, delete', async (t) => {
    await page.getByRole('link', { name: 'Projects' }).click();
    await page.getByText('No projects yet').waitFor();
    // Nothing in ivtd scans: the page promised "an ad tag scanned on a schedule".
    const pageText = (await page.locator('section.projects').textContent()) ?? '';
    t.notMatch(pageText, /scanned on a schedule/, 'no promise of a scanner ivtd does not have');
    t.match(pageText, /ivtd does not scan tags, and calls no alert pixel/, 'says plainly what ivtd does with the scan settings');
    await page.getByRole('button', { name: 'New project' }).click();
    // Saved empty: every required field marked at once (the form showed the API's first fault only), each labelled required.
    await page.getByLabel('Scans per day').fill('');
    await page.getByRole('button', { name: 'Create project' }).click();
    const shown = await page.locator('form.project-form .field-error:not([hidden])').count();
    t.equal(shown, 4, 'name, demand ID, tag and scans per day: four errors at once');
    t.equal(await page.locator('form.project-form label', { hasText: '(required)' }).count(), 4, 'the required fields say so');
    await page.getByLabel('Scans per day').fill('1');
    t.match(await page.locator('form.project-form').textContent(), /Stored for your scanning tool; ivtd does not scan\..*ivtd calls nothing/s, 'the form says so beside the scan fields');
    await page.getByLabel('Name').fill('Homepage leaderboard');
    await page.getByLabel('Demand ID').fill('dsp-42');
    await page.getByLabel('Tag').fill('http://tags.example/leaderboard.js');
    await page.getByLabel('Scans per day').fill('4');
    await page.getByLabel('Locations').fill('us, gb');
    await page.getByRole('button', { name: 'Create project' }).click();
    const tagError = page.locator('#' + (await page.getByLabel('Tag').getAttribute('id')) + '-err');
    await tagError.waitFor({ state: 'visible' });
    t.match(await tagError.textContent(), /https/, 'the API says why the tag is refused, next to the tag');
    t.equal(await page.getByLabel('Tag').getAttribute('aria-invalid'), 'true');
    t.ok(await page.getByLabel('Tag').evaluate((el) => el === document.activeElement), 'focus moves to the field');
    await screenshots(page, 'projects-form-error');

    await page.getByLabel('Tag').fill('https://tags.example/leaderboard.js');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByText('Created project “Homepage leaderboard”.').waitFor();
    const row = page.locator('tbody tr', { hasText: 'Homepage leaderboard' });
    t.match(await row.textContent(), /dsp-42.*4.*US, GB/, 'the new project is listed with what the API stored');
    await screenshots(page, 'projects');

    await page.getByRole('button', { name: 'Edit Homepage leaderboard' }).click();
    await page.getByLabel('Scans per day').fill('500');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(/times_per_day must be a whole number/).waitFor();
    t.pass('an out-of-range value is refused next to its field');
    await page.getByLabel('Scans per day').fill('12');
    await page.getByLabel('Name').fill('Homepage leaderboard v2');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved project “Homepage leaderboard v2”.').waitFor();
    t.match(await page.locator('tbody tr', { hasText: 'Homepage leaderboard v2' }).textContent(), /12/);

    await page.getByRole('button', { name: 'Delete Homepage leaderboard v2' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    t.equal(await page.locator('tbody tr').count(), 1, 'cancel keeps the project');
    await page.getByRole('button', { name: 'Delete Homepage leaderboard v2' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete project' }).click();
    await page.getByText('No projects yet').waitFor();
    t.pass('deleted');
  });

  await t.test('integrations: rotate the pre-bid key; the old key is refused on the lookup port', async (t) => {
    const oldKey = srv.customer.prebid_key;
    const [query] = lookupQueries(srv, oldKey);
    t.equal((await httpGet(`${srv.prebid}/api/v1/ivt/lookup?${query}`)).status, 200, 'the old key works before rotation');

    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('heading', { name: 'Pre-bid lookups' }).waitFor();
    t.equal(await page.locator('#partner-id').textContent(), srv.customer.partner_id);
    t.equal(await page.locator('#customer-id').textContent(), srv.customer.customer_id);
    const masked = (await page.locator('[data-key-prefix=prebid]').textContent()) ?? '';
    t.ok(oldKey.startsWith(masked.replace(/•+$/, '')), 'the masked key shows the stored prefix');
    t.notOk(masked.includes(oldKey), 'and never the key');
    t.match(await page.locator('#lookup-url').textContent(), new RegExp(`:${srv.server.ports.prebid}/api/v1/ivt/lookup$`));
    t.match(await page.locator('#health-url').textContent(), new RegExp(`:${srv.server.ports.prebid}/health-check$`));
    // The three OpenAPI descriptions are linked, and each link serves its document.
    for (const [id, title] of [['openapi-prebid', 'ivtd pre-bid lookups'], ['openapi-reporting', 'ivtd reporting API'], ['openapi-account', 'ivtd account API']]) {
      const href = (await page.locator(`#${id}`).getAttribute('href')) ?? '';
      const doc = (await (await fetch(href)).json()) as { openapi: string; info: { title: string } };
      t.strictSame([doc.openapi, doc.info.title], ['3.1.0', title], `${id} links its description`);
    }
    await screenshots(page, 'integrations');

    await page.locator('[data-rotate=prebid]').click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('The current key keeps working').selectOption('0');
    await screenshots(page, 'integrations-rotate-dialog');
    await dialog.getByRole('button', { name: 'Rotate key' }).click();
    const reveal = page.locator('#new-prebid-key');
    await reveal.waitFor();
    const newKey = ((await reveal.textContent()) ?? '').trim();
    t.match(newKey, /^ivp_[A-Za-z0-9_-]{32}$/, 'the new key is shown once');
    t.not(newKey, oldKey);
    await screenshots(page, 'integrations-new-key');

    // The example lookup on the page now carries the new key: run it as a bidder would.
    const example = (await page.locator('.example pre').first().textContent()) ?? '';
    const url = /curl '([^']+)'/.exec(example)?.[1];
    t.ok(url, 'the example is a curl command');
    t.equal((await httpGet(url!)).status, 200, 'the example lookup works as shown');

    const oldStatus = (await httpGet(`${srv.prebid}/api/v1/ivt/lookup?${query}`)).status;
    t.equal(oldStatus, 401, 'the old key is refused at once (grace 0)');

    await page.getByRole('button', { name: 'I have saved it: hide' }).click();
    await page.locator('[data-key-prefix=prebid]').waitFor();
    t.equal(await page.locator('#new-prebid-key').count(), 0, 'once hidden, the key cannot be shown again');
    t.ok(newKey.startsWith(((await page.locator('[data-key-prefix=prebid]').textContent()) ?? '').replace(/•+$/, '')), 'the masked prefix is the new key');
    srv.customer.prebid_key = newKey;
  });

  await t.test('sign out revokes the session', async (t) => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You have signed out.').waitFor();
    t.pass('back on the sign-in page');
  });

  t.same(watch.problems, [], NO_PROBLEMS);
});

t.test('a session that cannot be refreshed returns to the sign-in page', async (t) => {
  const srv = await startTestServer({ accessTokenTtl: 1 });
  t.teardown(() => srv.stop());
  const ctx = await browser.newContext({ viewport: DESKTOP });
  t.teardown(() => ctx.close());
  const { page, watch } = await openPage(ctx, srv.api);
  const login = page.waitForResponse((r) => r.url().endsWith('/login') && r.status() === 200);
  await signIn(page, srv);
  const { refresh_token } = (await (await login).json()) as { refresh_token: string };

  // The page keeps a 1-second token alive by refreshing it.
  await page.waitForResponse((r) => r.url().endsWith('/refresh_token') && r.status() === 200, { timeout: 5000 });
  await page.getByRole('link', { name: 'Projects' }).click();
  await page.getByText('No projects yet').waitFor();
  t.pass('still signed in after the first access token expired');

  // Revoke the session from outside (as signing out elsewhere does).
  const out = await fetch(`${srv.api}/logout`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ refresh_token }) });
  t.equal(out.status, 204);
  await page.getByRole('heading', { name: 'Sign in to ivtd' }).waitFor({ timeout: 5000 });
  t.match(await page.locator('.login .notice').textContent(), /session has expired or was signed out/, 'the sign-in page says why');
  await screenshots(page, 'session-ended');
  t.same(watch.problems, [], NO_PROBLEMS);
});
