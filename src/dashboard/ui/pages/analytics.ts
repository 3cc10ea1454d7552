// Analytics: a date range, group-by dimensions and filters; headline figures and a time
// series of the range; invalid traffic by category (why it is invalid); then the report
// table, page by page, exactly as the API returns it. The form and the cards are made in
// analytics-form.ts and analytics-cards.ts; this page holds the query and loads each part.
import { reportSearch, type Report, type ReportQuery } from '../api-client.ts';
import { CATEGORY_CSV_COLUMNS, categoryCsvFileName, categoryShares, type CategoryShare } from '../categories.ts';
import { toCsv } from '../../../base/csv-text.ts';
import { csvFileName } from '../csv-download.ts';
import { daysInRange, lastDays } from '../dates.ts';
import { clear, downloadCsvFile, h } from '../dom.ts';
import { formatInt } from '../format.ts';
import { METRICS } from '../labels.ts';
import type { Page, PageContext } from '../page.ts';
import { postBidCard } from '../post-bid.ts';
import { buildSeries, defaultGranularity, groupByFor, MAX_HOURLY_DAYS, seriesTotals, type Granularity, type TimeRow } from '../series.ts';
import { queryForm } from './analytics-form.ts';
import { categoryCard, categoryTable, chartCard, headlineTiles, reportCard, reportTable } from './analytics-cards.ts';

/** Pages of the time-series query we are willing to fetch (1000 rows each). */
const MAX_SERIES_PAGES = 10;

// The query survives switching pages (not a reload: the session does not either).
let saved: ReportQuery | null = null;
let savedGranularity: Granularity | 'auto' = 'auto';

/** Back to the defaults (on sign-out: the next user starts fresh). */
export function forgetAnalyticsQuery(): void {
  saved = null;
  savedGranularity = 'auto';
}

function defaultQuery(): ReportQuery {
  const r = lastDays(Date.now(), 7);
  return { start_date: r.start, end_date: r.end, group_by: ['date'], limit: 20, offset: 0, filters: {} };
}

export function analyticsPage(ctx: PageContext): Page {
  let q: ReportQuery = saved ? { ...saved, filters: { ...saved.filters } } : defaultQuery();
  let current: Report | null = null;
  // Each request remembers its number; an answer to a superseded request is dropped.
  let tableSeq = 0;
  let seriesSeq = 0;
  let categorySeq = 0;
  let shares: CategoryShare[] = [];

  const query = queryForm();
  query.form.addEventListener('submit', (e) => {
    e.preventDefault();
    const next = query.read();
    if (!next) return;
    q = { ...next, offset: 0 };
    run();
  });
  const chart = chartCard((g) => {
    savedGranularity = g;
    void loadSeries();
  });
  const categories = categoryCard(() => downloadCategoryCsv());
  const table = reportCard((dir) => page(dir), () => downloadCsv());
  const postBid = postBidCard(ctx.api);

  const el = h('section', { class: 'page analytics' }, h('h1', { tabindex: -1 }, 'Analytics'), query.form, chart.el, categories.el, table.el, postBid.el);

  function page(dir: number): void {
    if (!current) return;
    const offset = q.offset + dir * q.limit;
    if (offset < 0 || offset >= current.meta.total_rows) return;
    q = { ...q, offset };
    void loadTable();
  }

  function run(): void {
    saved = q;
    query.updateFilterSummary();
    void loadTable();
    void loadSeries();
    void loadCategories();
    void postBid.load(q);
  }

  async function loadTable(): Promise<void> {
    const id = ++tableSeq;
    table.status.loading('Loading the report…');
    table.wrap.setAttribute('aria-busy', 'true');
    table.prevBtn.disabled = table.nextBtn.disabled = table.csvBtn.disabled = true;
    table.apiLink.textContent = `GET /v1/report?${reportSearch(q)}`;
    try {
      const report = await ctx.api.report(q);
      if (id !== tableSeq) return;
      current = report;
      saved = q;
      renderTable(report);
      table.status.done();
    } catch (e) {
      if (id !== tableSeq) return;
      current = null;
      clear(table.wrap);
      table.pageInfo.textContent = '';
      table.status.error(`Could not load the report: ${(e as Error).message}`, () => void loadTable());
    } finally {
      if (id === tableSeq) table.wrap.removeAttribute('aria-busy');
    }
  }

  function renderTable(r: Report): void {
    const rows = reportTable(r);
    if (r.rows.length === 0) {
      table.wrap.replaceChildren(rows, h('p', { class: 'empty' }, 'No transactions match this query. Lookups show up here within a few seconds of being made.'));
    } else {
      table.wrap.replaceChildren(rows);
    }
    const from = r.meta.total_rows === 0 ? 0 : r.meta.offset + 1;
    const to = r.meta.offset + r.meta.returned_rows;
    table.pageInfo.textContent = `Rows ${formatInt(from)}–${formatInt(to)} of ${formatInt(r.meta.total_rows)}`;
    table.prevBtn.disabled = r.meta.offset === 0;
    table.nextBtn.disabled = to >= r.meta.total_rows;
    table.csvBtn.disabled = r.rows.length === 0;
  }

  function downloadCsv(): void {
    if (!current) return;
    const cols = [...current.meta.group_by, ...METRICS.map((m) => m.key)];
    downloadCsvFile(csvFileName(q.start_date, q.end_date, current.meta.group_by, Math.floor(current.meta.offset / q.limit) + 1), toCsv(cols, current.rows));
  }

  async function loadCategories(): Promise<void> {
    const id = ++categorySeq;
    categories.status.loading('Loading the categories…');
    categories.csvBtn.disabled = true;
    try {
      const r = await ctx.api.report({ ...q, group_by: ['category'], limit: 1000, offset: 0 });
      if (id !== categorySeq) return;
      shares = categoryShares(r.rows);
      renderCategories();
      categories.status.done();
    } catch (e) {
      if (id !== categorySeq) return;
      shares = [];
      clear(categories.wrap);
      categories.status.error(`Could not load the categories: ${(e as Error).message}`, () => void loadCategories());
    }
  }

  function renderCategories(): void {
    categories.csvBtn.disabled = shares.length === 0;
    if (shares.length === 0) {
      categories.wrap.replaceChildren(h('p', { class: 'empty' }, 'No invalid transactions match this query.'));
      return;
    }
    categories.wrap.replaceChildren(categoryTable(shares));
  }

  function downloadCategoryCsv(): void {
    if (shares.length === 0) return;
    downloadCsvFile(categoryCsvFileName(q.start_date, q.end_date), toCsv(CATEGORY_CSV_COLUMNS, shares));
  }

  function granularity(): Granularity {
    const days = daysInRange(q.start_date, q.end_date);
    chart.granHour.disabled = days > MAX_HOURLY_DAYS;
    let g: Granularity = savedGranularity === 'auto' ? defaultGranularity({ start: q.start_date, end: q.end_date }) : savedGranularity;
    if (g === 'hour' && days > MAX_HOURLY_DAYS) g = 'day';
    chart.granHour.checked = g === 'hour';
    chart.granDay.checked = g === 'day';
    return g;
  }

  async function loadSeries(): Promise<void> {
    const id = ++seriesSeq;
    const g = granularity();
    chart.title.textContent = g === 'hour' ? 'Transactions by hour (UTC)' : 'Transactions by day (UTC)';
    chart.status.loading('Loading the chart…');
    const rows: TimeRow[] = [];
    try {
      for (let p = 0; p < MAX_SERIES_PAGES; p++) {
        const r = await ctx.api.report({ ...q, group_by: groupByFor(g).split(','), limit: 1000, offset: p * 1000 });
        if (id !== seriesSeq) return;
        rows.push(...(r.rows as unknown as TimeRow[]));
        if (rows.length >= r.meta.total_rows || r.rows.length === 0) break;
      }
      const range = { start: q.start_date, end: q.end_date };
      const s = buildSeries(rows, range, g, Date.now());
      chart.tiles.replaceChildren(...headlineTiles(seriesTotals(s)));
      chart.chart.show(s, g, range);
      chart.status.done();
    } catch (e) {
      if (id !== seriesSeq) return;
      clear(chart.tiles);
      chart.chart.clear();
      chart.status.error(`Could not load the chart: ${(e as Error).message}`, () => void loadSeries());
    }
  }

  query.fill(q);
  run();
  return { el, dispose: () => chart.chart.destroy() };
}
