// Analytics: a date range, group-by dimensions and filters; headline figures and a time
// series of the range; invalid traffic by category (why it is invalid); then the report
// table, page by page, exactly as the API returns it.
import { DIMENSIONS, FILTERS, type Dimension } from '../../../base/enums.ts';
import { reportSearch, type Report, type ReportQuery, type ReportRow } from '../api-client.ts';
import { CATEGORY_CSV_COLUMNS, categoryCsvFileName, categoryShares, type CategoryShare } from '../categories.ts';
import { TransactionsChart } from '../chart.ts';
import { toCsv } from '../../../base/csv-text.ts';
import { csvFileName } from '../csv-download.ts';
import { daysInRange, lastDays, rangeProblem, type DateRange } from '../dates.ts';
import { clear, downloadCsvFile, field, h, statusBox } from '../dom.ts';
import { dimensionValueLabel, formatInt, formatRate, ivtRate } from '../format.ts';
import { DIMENSION_LABELS, FILTER_HINTS, METRICS } from '../labels.ts';
import type { Page, PageContext } from '../page.ts';
import { postBidCard } from '../post-bid.ts';
import { buildSeries, defaultGranularity, groupByFor, MAX_HOURLY_DAYS, seriesTotals, type Granularity, type TimeRow } from '../series.ts';

const PAGE_SIZES = [20, 50, 100, 500, 1000];
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

  // ---- the query form
  const start = field('Start date', h('input', { type: 'date', name: 'start_date', required: true }));
  const end = field('End date', h('input', { type: 'date', name: 'end_date', required: true }));
  const rangeError = h('p', { class: 'field-error', role: 'alert', hidden: true });
  const presets = h(
    'div',
    { class: 'presets', role: 'group', 'aria-label': 'Quick ranges' },
    ...[
      ['Today', 1],
      ['7 days', 7],
      ['30 days', 30],
      ['90 days', 90],
    ].map(([label, days]) =>
      h('button', { type: 'button', class: 'secondary small', onclick: () => setRange(lastDays(Date.now(), days as number), true) }, String(label)),
    ),
  );

  const groupBoxes = new Map<Dimension, HTMLInputElement>();
  const groupFieldset = h(
    'fieldset',
    { class: 'group-by' },
    h('legend', {}, 'Group by'),
    h(
      'div',
      { class: 'checks' },
      ...DIMENSIONS.map((d) => {
        const box = h('input', { type: 'checkbox', name: 'group_by', value: d });
        groupBoxes.set(d, box);
        return h('label', { class: 'check', title: DIMENSION_LABELS[d] }, box, h('span', {}, d), h('span', { class: 'muted' }, DIMENSION_LABELS[d]));
      }),
    ),
  );

  const filterInputs = new Map<string, HTMLInputElement>();
  const filterSummary = h('summary', {}, 'Filters');
  const filterDetails = h(
    'details',
    { class: 'filters' },
    filterSummary,
    h(
      'div',
      { class: 'filter-grid' },
      ...FILTERS.map((f) => {
        const input = h('input', { type: 'text', name: f, autocomplete: 'off', spellcheck: 'false', placeholder: FILTER_HINTS[f] ?? 'comma-separated' });
        filterInputs.set(f, input);
        return field(`${f} · ${DIMENSION_LABELS[f]}`, input).wrap;
      }),
    ),
    h('p', { class: 'hint' }, 'Each filter takes one or more comma-separated values; rows must match every filter you fill in.'),
  );

  const limitSelect = h('select', { name: 'limit' }, ...PAGE_SIZES.map((n) => h('option', { value: n }, String(n))));
  const limit = field('Rows per page', limitSelect);
  const applyBtn = h('button', { type: 'submit' }, 'Apply');
  const form = h(
    'form',
    { class: 'query card', 'aria-label': 'Report query' },
    h('div', { class: 'row' }, start.wrap, end.wrap, presets),
    rangeError,
    groupFieldset,
    filterDetails,
    h('div', { class: 'row end' }, limit.wrap, applyBtn),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const next = readForm();
    if (!next) return;
    q = { ...next, offset: 0 };
    run();
  });

  // ---- headline figures and the chart
  const tiles = h('div', { class: 'tiles', 'aria-live': 'polite' });
  const granHour = h('input', { type: 'radio', name: 'granularity', value: 'hour' });
  const granDay = h('input', { type: 'radio', name: 'granularity', value: 'day' });
  const granGroup = h(
    'div',
    { class: 'segmented', role: 'radiogroup', 'aria-label': 'Chart resolution' },
    h('label', {}, granHour, h('span', {}, 'By hour')),
    h('label', {}, granDay, h('span', {}, 'By day')),
  );
  for (const r of [granHour, granDay]) {
    r.addEventListener('change', () => {
      savedGranularity = r.value as Granularity;
      void loadSeries();
    });
  }
  const chartTitle = h('h2', {}, 'Transactions over time');
  const chartStatus = statusBox();
  const chartBox = h('div', { class: 'chart', role: 'img', 'aria-label': 'Chart of total, valid, GIVT and SIVT transactions and the IVT rate over the selected range' });
  const chart = new TransactionsChart(chartBox);

  // ---- invalid traffic by category: one report grouped by category over the same range and filters
  const categoryStatus = statusBox();
  const categoryWrap = h('div', { class: 'table-wrap', tabindex: 0, 'aria-label': 'Invalid transactions by category' });
  const categoryCsvBtn = h('button', { type: 'button', class: 'secondary', onclick: () => downloadCategoryCsv() }, 'Download category CSV');

  // ---- the table
  const tableStatus = statusBox();
  const tableWrap = h('div', { class: 'table-wrap', tabindex: 0, 'aria-label': 'Report rows' });
  const pageInfo = h('p', { class: 'page-info', 'aria-live': 'polite' });
  const prevBtn = h('button', { type: 'button', class: 'secondary', onclick: () => page(-1) }, '← Previous');
  const nextBtn = h('button', { type: 'button', class: 'secondary', onclick: () => page(1) }, 'Next →');
  const csvBtn = h('button', { type: 'button', class: 'secondary', onclick: () => downloadCsv() }, 'Download CSV');
  const apiLink = h('p', { class: 'hint api-query' });
  const postBid = postBidCard(ctx.api);

  const el = h(
    'section',
    { class: 'page analytics' },
    h('h1', { tabindex: -1 }, 'Analytics'),
    form,
    h('section', { class: 'card', 'aria-labelledby': 'chart-h' }, h('div', { class: 'card-head' }, chartTitle, granGroup), tiles, chartStatus.el, chartBox),
    h(
      'section',
      { class: 'card categories', 'aria-labelledby': 'categories-h' },
      h('div', { class: 'card-head' }, h('h2', { id: 'categories-h' }, 'Invalid traffic by category'), categoryCsvBtn),
      h('p', { class: 'hint intro' }, 'Why transactions were invalid: the leading reason of each, in MRC’s GIVT/SIVT terms (group or filter by category for more).'),
      categoryStatus.el,
      categoryWrap,
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'table-h' },
      h('div', { class: 'card-head' }, h('h2', { id: 'table-h' }, 'Report'), csvBtn),
      tableStatus.el,
      tableWrap,
      h('div', { class: 'pager' }, prevBtn, pageInfo, nextBtn),
      apiLink,
    ),
    postBid.el,
  );
  chartTitle.id = 'chart-h';

  function setRange(r: DateRange, submit: boolean): void {
    start.control.value = r.start;
    end.control.value = r.end;
    if (submit) form.requestSubmit();
  }

  function fillForm(): void {
    setRange({ start: q.start_date, end: q.end_date }, false);
    for (const [d, box] of groupBoxes) box.checked = q.group_by.includes(d);
    for (const [f, input] of filterInputs) input.value = q.filters[f] ?? '';
    limitSelect.value = String(q.limit);
    updateFilterSummary();
  }

  function updateFilterSummary(): void {
    const n = [...filterInputs.values()].filter((i) => i.value.trim()).length;
    filterSummary.textContent = n ? `Filters (${n} active)` : 'Filters';
    if (n) filterDetails.open = true;
  }

  function readForm(): ReportQuery | null {
    const range = { start: start.control.value, end: end.control.value };
    const problem = rangeProblem(range);
    rangeError.textContent = problem ?? '';
    rangeError.hidden = !problem;
    if (problem) {
      start.control.focus();
      return null;
    }
    const filters: Record<string, string> = {};
    for (const [f, input] of filterInputs) if (input.value.trim()) filters[f] = input.value.trim();
    return {
      start_date: range.start,
      end_date: range.end,
      group_by: DIMENSIONS.filter((d) => groupBoxes.get(d)!.checked),
      limit: Number(limitSelect.value),
      offset: 0,
      filters,
    };
  }

  function page(dir: number): void {
    if (!current) return;
    const offset = q.offset + dir * q.limit;
    if (offset < 0 || offset >= current.meta.total_rows) return;
    q = { ...q, offset };
    void loadTable();
  }

  function run(): void {
    saved = q;
    updateFilterSummary();
    void loadTable();
    void loadSeries();
    void loadCategories();
    void postBid.load(q);
  }

  async function loadTable(): Promise<void> {
    const id = ++tableSeq;
    tableStatus.loading('Loading the report…');
    tableWrap.setAttribute('aria-busy', 'true');
    prevBtn.disabled = nextBtn.disabled = csvBtn.disabled = true;
    apiLink.textContent = `GET /v1/report?${reportSearch(q)}`;
    try {
      const report = await ctx.api.report(q);
      if (id !== tableSeq) return;
      current = report;
      saved = q;
      renderTable(report);
      tableStatus.done();
    } catch (e) {
      if (id !== tableSeq) return;
      current = null;
      clear(tableWrap);
      pageInfo.textContent = '';
      tableStatus.error(`Could not load the report: ${(e as Error).message}`, () => void loadTable());
    } finally {
      if (id === tableSeq) tableWrap.removeAttribute('aria-busy');
    }
  }

  function renderTable(r: Report): void {
    const dims = r.meta.group_by;
    const table = h(
      'table',
      { class: 'report' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...dims.map((d) => h('th', { scope: 'col', title: DIMENSION_LABELS[d as Dimension] ?? d, 'data-col': d }, d)),
          ...METRICS.map((m) => h('th', { scope: 'col', class: 'num', title: m.key, 'data-col': m.key }, m.label)),
          h('th', { scope: 'col', class: 'num' }, 'IVT rate'),
        ),
      ),
      h(
        'tbody',
        {},
        ...r.rows.map((row) =>
          h(
            'tr',
            {},
            ...dims.map((d) => dimCell(d, row)),
            ...METRICS.map((m) => h('td', { class: 'num', 'data-col': m.key, 'data-label': m.label }, formatInt(row[m.key]))),
            h('td', { class: 'num muted', 'data-label': 'IVT rate' }, formatRate(ivtRate(row.invalid_transactions, row.total_transactions), row.total_transactions)),
          ),
        ),
      ),
    );
    if (r.rows.length === 0) {
      tableWrap.replaceChildren(table, h('p', { class: 'empty' }, 'No transactions match this query. Lookups show up here within a few seconds of being made.'));
    } else {
      tableWrap.replaceChildren(table);
    }
    const from = r.meta.total_rows === 0 ? 0 : r.meta.offset + 1;
    const to = r.meta.offset + r.meta.returned_rows;
    pageInfo.textContent = `Rows ${formatInt(from)}–${formatInt(to)} of ${formatInt(r.meta.total_rows)}`;
    prevBtn.disabled = r.meta.offset === 0;
    nextBtn.disabled = to >= r.meta.total_rows;
    csvBtn.disabled = r.rows.length === 0;
  }

  function dimCell(d: string, row: ReportRow): HTMLTableCellElement {
    const v = row[d];
    const raw = v === null || v === undefined ? '' : String(v);
    const meaning = dimensionValueLabel(d, v);
    return h(
      'td',
      // data-label: on a phone each row is a block of "label value" lines (app.css).
      { 'data-col': d, 'data-value': raw, 'data-label': d, title: meaning },
      raw === '' ? h('span', { class: 'muted' }, meaning ?? '(none)') : raw,
      meaning && raw !== '' ? h('span', { class: 'muted' }, ` ${meaning}`) : null,
    );
  }

  function downloadCsv(): void {
    if (!current) return;
    const cols = [...current.meta.group_by, ...METRICS.map((m) => m.key)];
    downloadCsvFile(csvFileName(q.start_date, q.end_date, current.meta.group_by, Math.floor(current.meta.offset / q.limit) + 1), toCsv(cols, current.rows));
  }

  async function loadCategories(): Promise<void> {
    const id = ++categorySeq;
    categoryStatus.loading('Loading the categories…');
    categoryCsvBtn.disabled = true;
    try {
      const r = await ctx.api.report({ ...q, group_by: ['category'], limit: 1000, offset: 0 });
      if (id !== categorySeq) return;
      shares = categoryShares(r.rows);
      renderCategories();
      categoryStatus.done();
    } catch (e) {
      if (id !== categorySeq) return;
      shares = [];
      clear(categoryWrap);
      categoryStatus.error(`Could not load the categories: ${(e as Error).message}`, () => void loadCategories());
    }
  }

  function renderCategories(): void {
    categoryCsvBtn.disabled = shares.length === 0;
    if (shares.length === 0) {
      categoryWrap.replaceChildren(h('p', { class: 'empty' }, 'No invalid transactions match this query.'));
      return;
    }
    const table = h(
      'table',
      { class: 'category-shares' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, 'Category'),
          h('th', { scope: 'col', class: 'num' }, 'Invalid'),
          h('th', { scope: 'col', class: 'num' }, 'GIVT'),
          h('th', { scope: 'col', class: 'num' }, 'SIVT'),
          h('th', { scope: 'col', class: 'share' }, 'Share of invalid'),
        ),
      ),
      h(
        'tbody',
        {},
        ...shares.map((c) => {
          const pct = `${(c.share * 100).toFixed(1)}%`;
          return h(
            'tr',
            { 'data-category': c.category },
            h('th', { scope: 'row' }, c.label, c.category ? h('span', { class: 'muted' }, ` ${c.category}`) : null),
            h('td', { class: 'num', 'data-col': 'invalid_transactions', 'data-label': 'Invalid' }, formatInt(c.invalid_transactions)),
            h('td', { class: 'num', 'data-col': 'givt_transactions', 'data-label': 'GIVT' }, formatInt(c.givt_transactions)),
            h('td', { class: 'num', 'data-col': 'sivt_transactions', 'data-label': 'SIVT' }, formatInt(c.sivt_transactions)),
            h(
              'td',
              { class: 'share', 'data-label': 'Share of invalid' },
              h('meter', { min: 0, max: 1, value: c.share, 'aria-label': `${c.label}: ${pct} of invalid` }),
              h('span', { class: 'num' }, pct),
            ),
          );
        }),
      ),
    );
    categoryWrap.replaceChildren(table);
  }

  function downloadCategoryCsv(): void {
    if (shares.length === 0) return;
    downloadCsvFile(categoryCsvFileName(q.start_date, q.end_date), toCsv(CATEGORY_CSV_COLUMNS, shares));
  }

  function granularity(): Granularity {
    const days = daysInRange(q.start_date, q.end_date);
    granHour.disabled = days > MAX_HOURLY_DAYS;
    let g: Granularity = savedGranularity === 'auto' ? defaultGranularity({ start: q.start_date, end: q.end_date }) : savedGranularity;
    if (g === 'hour' && days > MAX_HOURLY_DAYS) g = 'day';
    granHour.checked = g === 'hour';
    granDay.checked = g === 'day';
    return g;
  }

  async function loadSeries(): Promise<void> {
    const id = ++seriesSeq;
    const g = granularity();
    chartTitle.textContent = g === 'hour' ? 'Transactions by hour (UTC)' : 'Transactions by day (UTC)';
    chartStatus.loading('Loading the chart…');
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
      renderTiles(seriesTotals(s));
      chart.show(s, g, range);
      chartStatus.done();
    } catch (e) {
      if (id !== seriesSeq) return;
      clear(tiles);
      chart.clear();
      chartStatus.error(`Could not load the chart: ${(e as Error).message}`, () => void loadSeries());
    }
  }

  function renderTiles(t: ReturnType<typeof seriesTotals>): void {
    const tile = (label: string, value: string, cls: string, sub?: string) =>
      h('div', { class: `tile ${cls}` }, h('span', { class: 'tile-label' }, label), h('span', { class: 'tile-value' }, value), sub ? h('span', { class: 'tile-sub' }, sub) : null);
    const total = t.total_transactions;
    tiles.replaceChildren(
      tile('Total', formatInt(total), 'total'),
      tile('Valid', formatInt(t.valid_transactions), 'valid'),
      tile('Invalid', formatInt(t.invalid_transactions), 'invalid', `IVT rate ${formatRate(ivtRate(t.invalid_transactions, total), total)}`),
      tile('GIVT', formatInt(t.givt_transactions), 'givt'),
      tile('SIVT', formatInt(t.sivt_transactions), 'sivt'),
      // Decided by the customer's own deny list: neither valid nor GIVT nor SIVT (the report's
      // policy_transactions, here what total leaves after valid and invalid).
      tile('Your deny list', formatInt(total - t.valid_transactions - t.invalid_transactions), 'policy', 'outside GIVT and SIVT'),
    );
  }

  fillForm();
  run();
  return { el, dispose: () => chart.destroy() };
}
