// The analytics page's cards below its query form: the headline figures and the chart, the
// invalid traffic by category, and the report table with its pager; each made empty here
// (its parts returned for the page to fill) with the builders of what fills it.
import type { Dimension } from '../../../base/enums.ts';
import type { Report, ReportRow } from '../api-client.ts';
import type { CategoryShare } from '../categories.ts';
import { TransactionsChart } from '../chart.ts';
import { h, statusBox } from '../dom.ts';
import { dimensionValueLabel, formatInt, formatRate, ivtRate } from '../format.ts';
import { DIMENSION_LABELS, METRICS } from '../labels.ts';
import type { Granularity, seriesTotals } from '../series.ts';

type StatusBox = ReturnType<typeof statusBox>;

/** The headline figures and the chart, with its hour/day choice (`onGranularity` when it changes). */
export function chartCard(onGranularity: (g: Granularity) => void): {
  el: HTMLElement;
  tiles: HTMLDivElement;
  granHour: HTMLInputElement;
  granDay: HTMLInputElement;
  title: HTMLHeadingElement;
  status: StatusBox;
  chart: TransactionsChart;
} {
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
    r.addEventListener('change', () => onGranularity(r.value as Granularity));
  }
  const title = h('h2', {}, 'Transactions over time');
  const status = statusBox();
  const chartBox = h('div', { class: 'chart', role: 'img', 'aria-label': 'Chart of total, valid, GIVT and SIVT transactions and the IVT rate over the selected range' });
  const chart = new TransactionsChart(chartBox);
  const el = h('section', { class: 'card', 'aria-labelledby': 'chart-h' }, h('div', { class: 'card-head' }, title, granGroup), tiles, status.el, chartBox);
  title.id = 'chart-h';
  return { el, tiles, granHour, granDay, title, status, chart };
}

/** The headline tiles of a range's totals. */
export function headlineTiles(t: ReturnType<typeof seriesTotals>): HTMLDivElement[] {
  const total = t.total_transactions;
  return [
    tile('Total', formatInt(total), 'total'),
    tile('Valid', formatInt(t.valid_transactions), 'valid'),
    tile('Invalid', formatInt(t.invalid_transactions), 'invalid', `IVT rate ${formatRate(ivtRate(t.invalid_transactions, total), total)}`),
    tile('GIVT', formatInt(t.givt_transactions), 'givt'),
    tile('SIVT', formatInt(t.sivt_transactions), 'sivt'),
    // Decided by the customer's own deny list: neither valid nor GIVT nor SIVT (the report's
    // policy_transactions, here what total leaves after valid and invalid).
    tile('Your deny list', formatInt(total - t.valid_transactions - t.invalid_transactions), 'policy', 'outside GIVT and SIVT'),
  ];
}

function tile(label: string, value: string, cls: string, sub?: string): HTMLDivElement {
  return h('div', { class: `tile ${cls}` }, h('span', { class: 'tile-label' }, label), h('span', { class: 'tile-value' }, value), sub ? h('span', { class: 'tile-sub' }, sub) : null);
}

/** Invalid traffic by category: one report grouped by category over the same range and filters. */
export function categoryCard(onCsv: () => void): { el: HTMLElement; status: StatusBox; wrap: HTMLDivElement; csvBtn: HTMLButtonElement } {
  const status = statusBox();
  const wrap = h('div', { class: 'table-wrap', tabindex: 0, 'aria-label': 'Invalid transactions by category' });
  const csvBtn = h('button', { type: 'button', class: 'secondary', onclick: () => onCsv() }, 'Download category CSV');
  const el = h(
    'section',
    { class: 'card categories', 'aria-labelledby': 'categories-h' },
    h('div', { class: 'card-head' }, h('h2', { id: 'categories-h' }, 'Invalid traffic by category'), csvBtn),
    h('p', { class: 'hint intro' }, 'Why transactions were invalid: the leading reason of each, in MRC’s GIVT/SIVT terms (group or filter by category for more).'),
    status.el,
    wrap,
  );
  return { el, status, wrap, csvBtn };
}

/** The table of category shares (at least one). */
export function categoryTable(shares: CategoryShare[]): HTMLTableElement {
  return h(
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
}

/** The report card: the table, its pager and CSV button, and the API query that fetched it. */
export function reportCard(onPage: (dir: number) => void, onCsv: () => void): {
  el: HTMLElement;
  status: StatusBox;
  wrap: HTMLDivElement;
  pageInfo: HTMLParagraphElement;
  prevBtn: HTMLButtonElement;
  nextBtn: HTMLButtonElement;
  csvBtn: HTMLButtonElement;
  apiLink: HTMLParagraphElement;
} {
  const status = statusBox();
  const wrap = h('div', { class: 'table-wrap', tabindex: 0, 'aria-label': 'Report rows' });
  const pageInfo = h('p', { class: 'page-info', 'aria-live': 'polite' });
  const prevBtn = h('button', { type: 'button', class: 'secondary', onclick: () => onPage(-1) }, '← Previous');
  const nextBtn = h('button', { type: 'button', class: 'secondary', onclick: () => onPage(1) }, 'Next →');
  const csvBtn = h('button', { type: 'button', class: 'secondary', onclick: () => onCsv() }, 'Download CSV');
  const apiLink = h('p', { class: 'hint api-query' });
  const el = h(
    'section',
    { class: 'card', 'aria-labelledby': 'table-h' },
    h('div', { class: 'card-head' }, h('h2', { id: 'table-h' }, 'Report'), csvBtn),
    status.el,
    wrap,
    h('div', { class: 'pager' }, prevBtn, pageInfo, nextBtn),
    apiLink,
  );
  return { el, status, wrap, pageInfo, prevBtn, nextBtn, csvBtn, apiLink };
}

/** The report's rows as a table: its group-by dimensions, the metrics and the IVT rate. */
export function reportTable(r: Report): HTMLTableElement {
  const dims = r.meta.group_by;
  return h(
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
