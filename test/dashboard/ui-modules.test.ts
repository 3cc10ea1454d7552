// The dashboard's pure modules (no DOM): CSV, UTC date ranges, the chart series, formatting,
// the curl examples and the refresh schedule.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIMENSIONS, FILTERS } from '../../src/base/enums.ts';
import { reportSearch } from '../../src/dashboard/ui/api-client.ts';
import { csvField, toCsv } from '../../src/base/csv-text.ts';
import { csvFileName } from '../../src/dashboard/ui/csv-download.ts';
import { addDays, daysInRange, isDate, lastDays, rangeProblem, utcDate } from '../../src/dashboard/ui/dates.ts';
import { EXAMPLE_BID_REQUEST, healthCurl, lookupCurl, ortbCurl, reportCurl, shellQuote } from '../../src/dashboard/ui/examples.ts';
import { countOf, dimensionValueLabel, formatInt, formatRate, ivtRate, maskedKey } from '../../src/dashboard/ui/format.ts';
import { CATEGORY_LABELS, DIMENSION_LABELS } from '../../src/dashboard/ui/labels.ts';
import { CATEGORY_CSV_COLUMNS, categoryCsvFileName, categoryShares } from '../../src/dashboard/ui/categories.ts';
import { CATEGORIES } from '../../src/signals/category.ts';
import { axisLabel, buildSeries, COUNT_INCRS, defaultGranularity, groupByFor, seriesTotals, timeIncrs, xExtent, type TimeRow } from '../../src/dashboard/ui/series.ts';
import { refreshDelayMs } from '../../src/dashboard/ui/session.ts';

t.test('csv escaping', async (t) => {
  t.equal(csvField('plain'), 'plain');
  t.equal(csvField(42), '42');
  t.equal(csvField(null), '');
  t.equal(csvField(undefined), '');
  t.equal(csvField('a,b'), '"a,b"');
  t.equal(csvField('say "hi"'), '"say ""hi"""');
  t.equal(csvField('two\nlines'), '"two\nlines"');
  t.equal(csvField('cr\rhere'), '"cr\rhere"');
  t.equal(csvField(' padded '), '" padded "');
  t.equal(csvField('+SUM(A1)'), "'+SUM(A1)", 'formula-looking text is neutralised');
  t.equal(csvField('-2+3'), "'-2+3");
  t.equal(csvField('@cmd'), "'@cmd");
  t.equal(csvField('-5'), '-5', 'a plain negative number stays a number');
  t.equal(csvField('=1,2'), `"'=1,2"`, 'neutralised and then quoted');
  const text = toCsv(['date', 'p1', 'total_transactions'], [
    { date: '2024-05-01', p1: 'x,"y"', total_transactions: 3 },
    { date: '2024-05-02', p1: null, total_transactions: 0 },
  ]);
  t.equal(text, 'date,p1,total_transactions\r\n2024-05-01,"x,""y""",3\r\n2024-05-02,,0\r\n');
  t.equal(csvFileName('2024-05-01', '2024-05-07', ['pub', 'geo'], 2), 'ivtd-report_2024-05-01_2024-05-07_pub-geo_p2.csv');
  t.equal(csvFileName('2024-05-01', '2024-05-07', [], 1), 'ivtd-report_2024-05-01_2024-05-07_total.csv');
});

// Python's csv module is a strict RFC 4180 reader available on the CI image.
function hasPython(): boolean {
  try {
    execFileSync('python3', ['-c', 'import csv'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

t.test('csv round-trips through a real CSV reader', { skip: hasPython() ? false : 'python3 not installed' }, async (t) => {
  const tricky = ['a,b', 'q"uote', 'multi\r\nline', ' lead', 'trail ', 'ünïcødé', ''];
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-csv-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'x.csv');
  writeFileSync(file, toCsv(['v', 'n'], tricky.map((v, i) => ({ v, n: i }))));
  const out = execFileSync('python3', ['-c', 'import csv,json,sys; print(json.dumps(list(csv.reader(open(sys.argv[1], newline="", encoding="utf-8")))))', file], { encoding: 'utf8' });
  t.same(JSON.parse(out), [['v', 'n'], ...tricky.map((v, i) => [v, String(i)])]);
});

t.test('UTC dates and the default range', async (t) => {
  // 2024-03-10 23:30 UTC is already the 11th east of UTC and still the 10th west of it: we use UTC.
  const now = Date.UTC(2024, 2, 10, 23, 30);
  t.equal(utcDate(now), '2024-03-10');
  t.same(lastDays(now), { start: '2024-03-04', end: '2024-03-10' }, 'last 7 days, today included');
  t.same(lastDays(now, 1), { start: '2024-03-10', end: '2024-03-10' });
  t.equal(addDays('2024-02-28', 1), '2024-02-29', 'leap day');
  t.equal(addDays('2024-03-01', -1), '2024-02-29');
  t.equal(addDays('2023-12-31', 1), '2024-01-01');
  t.equal(daysInRange('2024-01-01', '2024-01-31'), 31);
  t.equal(daysInRange('2024-01-02', '2024-01-01'), 0);
  t.ok(isDate('2024-02-29'));
  t.notOk(isDate('2023-02-29'), 'not a real date');
  t.notOk(isDate('2024-2-1'));
  t.notOk(isDate(''));
  t.equal(rangeProblem({ start: '2024-01-02', end: '2024-01-01' }), 'End date must not be before the start date.');
  t.match(rangeProblem({ start: 'x', end: '2024-01-01' }), /Start date/);
  t.equal(rangeProblem({ start: '2024-01-01', end: '2024-01-01' }), undefined);
});

const row = (date: string, hour: number | undefined, total: number, givt: number, sivt: number): TimeRow => ({
  date,
  ...(hour === undefined ? {} : { hour }),
  total_transactions: total,
  valid_transactions: total - givt - sivt,
  invalid_transactions: givt + sivt,
  givt_transactions: givt,
  sivt_transactions: sivt,
});

t.test('hourly series fills gaps and stops at the current hour', async (t) => {
  const range = { start: '2024-05-01', end: '2024-05-02' };
  const now = Date.UTC(2024, 4, 2, 5, 20); // 05:20 on the last day
  const s = buildSeries([row('2024-05-01', 0, 10, 1, 2), row('2024-05-02', 5, 4, 0, 4), row('2024-05-03', 1, 99, 0, 0)], range, 'hour', now);
  t.equal(s.x.length, 24 + 6, 'all of day one and hours 0..5 of day two');
  t.equal(s.x[0], Date.UTC(2024, 4, 1) / 1000);
  t.equal(s.x[1]! - s.x[0]!, 3600);
  t.same([s.total[0], s.valid[0], s.invalid[0], s.givt[0], s.sivt[0]], [10, 7, 3, 1, 2]);
  t.equal(s.total[1], 0, 'a gap is zero');
  t.equal(s.rate[1], null, 'no rate without transactions');
  t.equal(s.rate[0], 30);
  t.equal(s.total[29], 4);
  t.equal(s.rate[29], 100);
  t.same(seriesTotals(s), { total_transactions: 14, valid_transactions: 7, invalid_transactions: 7, givt_transactions: 1, sivt_transactions: 6 }, 'rows outside the range are ignored');
});

t.test('daily series and granularity', async (t) => {
  const range = { start: '2024-05-01', end: '2024-05-07' };
  const s = buildSeries([row('2024-05-03', undefined, 5, 1, 0)], range, 'day', Date.UTC(2024, 5, 1));
  t.equal(s.x.length, 7, 'a past range is drawn whole');
  t.same(s.total, [0, 0, 5, 0, 0, 0, 0]);
  t.equal(defaultGranularity(range), 'hour');
  t.equal(defaultGranularity({ start: '2024-05-01', end: '2024-05-08' }), 'day');
  t.equal(groupByFor('hour'), 'date,hour');
  t.equal(groupByFor('day'), 'date');
});

t.test('formatting', async (t) => {
  t.equal(formatInt(1234567), '1,234,567');
  t.equal(countOf(1, 'new entry', 'new entries'), '1 new entry', 'one, not "1 new entries"');
  t.equal(countOf(0, 'entry', 'entries'), '0 entries');
  t.equal(countOf(1000, 'entry', 'entries'), '1,000 entries');
  t.equal(formatRate(ivtRate(1, 8), 8), '12.5%');
  t.equal(formatRate(ivtRate(0, 0), 0), '–');
  t.equal(dimensionValueLabel('dvt', 2), 'Personal computer');
  t.equal(dimensionValueLabel('adt', '2'), 'Video');
  t.equal(dimensionValueLabel('pub', 'x'), undefined);
  t.match(maskedKey('ivp_abcd'), /^ivp_abcd•{4,}$/);
  t.notMatch(maskedKey('ivp_abcd'), /[A-Za-z0-9_]{9}/, 'nothing but the prefix is shown');
});

t.test('every reporting dimension is labelled', async (t) => {
  t.same(Object.keys(DIMENSION_LABELS).sort(), [...DIMENSIONS].sort());
  for (const f of FILTERS) t.ok(DIMENSION_LABELS[f], `filter ${f} has a label`);
});

t.test('invalid traffic by category: shares of the invalid, most first, valid traffic left out', async (t) => {
  t.same(Object.keys(CATEGORY_LABELS), [...CATEGORIES], 'every category has a label, in the order of the list');
  t.equal(dimensionValueLabel('category', 'data_center'), 'Data-center traffic');
  t.equal(dimensionValueLabel('category', ''), 'Not recorded (counted before categories)');
  const m = (total: number, givt: number, sivt: number) => ({ total_transactions: total, valid_transactions: total - givt - sivt, invalid_transactions: givt + sivt, givt_transactions: givt, sivt_transactions: sivt });
  const shares = categoryShares([
    { category: 'none', ...m(90, 0, 0) },
    { category: 'activity', ...m(1, 0, 1) },
    { category: 'data_center', ...m(5, 4, 1) },
    { category: '', ...m(7, 1, 0) },
    { category: 'declared_crawler', ...m(1, 1, 0) },
  ]);
  t.same(
    shares.map((s) => [s.category, s.invalid_transactions, s.share]),
    [['data_center', 5, 0.625], ['declared_crawler', 1, 0.125], ['activity', 1, 0.125], ['', 1, 0.125]],
    "most first; ties in the list's order, the unrecorded last among them; none and valid-only rows dropped",
  );
  t.same(shares[0], { category: 'data_center', label: 'Data-center traffic', invalid_transactions: 5, givt_transactions: 4, sivt_transactions: 1, share: 0.625 });
  t.same(categoryShares([{ category: 'none', ...m(3, 0, 0) }]), [], 'no invalid traffic: nothing to show');
  t.equal(
    toCsv(CATEGORY_CSV_COLUMNS, [shares[0]!, shares[3]!]),
    'category,invalid_transactions,givt_transactions,sivt_transactions,share\r\ndata_center,5,4,1,0.625\r\n,1,1,0,0.125\r\n',
  );
  t.equal(categoryCsvFileName('2024-05-01', '2024-05-07'), 'ivtd-invalid-by-category_2024-05-01_2024-05-07.csv');
});

t.test('report query string', async (t) => {
  const qs = reportSearch({ start_date: '2024-05-01', end_date: '2024-05-07', group_by: ['date', 'geo'], limit: 50, offset: 100, filters: { geo: ' US, GB ,', dvt: '', pub: 'a b' } });
  t.equal(qs, 'start_date=2024-05-01&end_date=2024-05-07&group_by=date,geo&limit=50&offset=100&geo=US,GB&pub=a+b');
  t.equal(new URLSearchParams(reportSearch({ start_date: 'a', end_date: 'b', group_by: [], limit: 1, offset: 0, filters: { p1: 'x&y=z' } })).get('p1'), 'x&y=z', 'values stay escaped');
  t.equal(reportSearch({ start_date: '2024-05-01', end_date: '2024-05-01', group_by: [], limit: 20, offset: 0, filters: {} }), 'start_date=2024-05-01&end_date=2024-05-01&limit=20&offset=0', 'no group_by: one total row');
});

t.test('curl examples', async (t) => {
  t.equal(shellQuote("it's"), `'it'\\''s'`);
  const withKey = lookupCurl('http://127.0.0.1:9898', '1f0c6a1e-0000-4000-8000-000000000000', 'ivp_Ab-c_');
  t.match(withKey, /^curl 'http:\/\/127\.0\.0\.1:9898\/api\/v1\/ivt\/lookup\?schain=1\.0,1!exchange1\.example,1234,1&p=1f0c6a1e-0000-4000-8000-000000000000&k=ivp_Ab-c_&pub=/);
  t.notMatch(withKey.slice(withKey.indexOf('?')), /[A-Z]+=/, 'parameter names are lowercase (spec 4.4 rule 2)');
  const noKey = lookupCurl('http://h:1', 'p', null);
  // Single quotes around the URL (its `!` is history expansion in double quotes), opened around the variable.
  t.match(noKey, /^curl 'http:\/\/h:1\/api\/v1\/ivt\/lookup\?schain=1\.0,1!exchange1\.example,1234,1&p=p&k='"\$\{IVTD_PREBID_KEY\}"'&pub=[^']*'$/, 'the shell expands the key variable');
  const ortb = ortbCurl('http://h:1', 'p', null);
  t.match(ortb, /^curl -H 'Content-Type: application\/json' --data-binary '\{"id":"req-1",[^']*\}' \\\n {2}'http:\/\/h:1\/api\/v1\/ivt\/ortb\?p=p&k='"\$\{IVTD_PREBID_KEY\}"'&node=bidder-1'$/);
  t.same(JSON.parse(/--data-binary '([^']*)'/.exec(ortb)![1]!), EXAMPLE_BID_REQUEST, 'the body is the example bid request');
  t.notMatch(ortbCurl('http://h:1', 'p', 'ivp_k'), /IVTD_PREBID_KEY/, 'a known key is written in');
  const rep = reportCurl('http://h:9900', 'cust', null, Date.UTC(2024, 4, 7, 12));
  t.equal(rep, `curl -u "cust:\${IVTD_REPORTING_KEY}" 'http://h:9900/v1/report?start_date=2024-05-01&end_date=2024-05-07&group_by=date'`);
  t.equal(healthCurl('http://h:1'), `curl -i 'http://h:1/health-check'`);
});

t.test('refresh schedule', async (t) => {
  t.equal(refreshDelayMs(900), 840_000, 'a minute before a 15-minute token expires');
  t.equal(refreshDelayMs(60), 45_000, 'a quarter before a short token expires');
  t.equal(refreshDelayMs(1), 750);
  t.ok(refreshDelayMs(0) >= 250, 'never a busy loop');
});

t.test('chart axis labels are 24-hour UTC', async (t) => {
  const at = (h: number) => Date.UTC(2024, 4, 2, h) / 1000;
  t.equal(axisLabel(at(0), 'hour', false), '05-02', 'midnight shows the date');
  t.equal(axisLabel(at(8), 'hour', false), '08:00');
  t.equal(axisLabel(at(16), 'hour', true), '16:00');
  t.equal(axisLabel(at(0), 'hour', true), '2024-05-02', 'the first tick carries the year');
  t.equal(axisLabel(at(0), 'day', false), '05-02');
});

t.test('chart axes: the whole range, whole days by day, whole numbers of transactions', async (t) => {
  const week = { start: '2024-05-01', end: '2024-05-07' };
  t.same(xExtent(week, 'hour'), [Date.UTC(2024, 4, 1) / 1000, Date.UTC(2024, 4, 8) / 1000], 'by hour: every day a whole day wide, the last one too');
  t.same(xExtent(week, 'day'), [Date.UTC(2024, 4, 1) / 1000 - 43200, Date.UTC(2024, 4, 7) / 1000 + 43200], 'by day: half a day around the first and last points');
  t.ok(timeIncrs('day').every((s) => s % 86400 === 0), 'by day: ticks only on whole days (a date never repeats)');
  t.ok(timeIncrs('hour').every((s) => s % 3600 === 0 && (s >= 86400 ? s % 86400 === 0 : 86400 % s === 0)), 'by hour: spacings that divide a day');
  t.ok(COUNT_INCRS.every((n) => Number.isInteger(n)) && COUNT_INCRS[0] === 1, 'count ticks are whole numbers');
});
