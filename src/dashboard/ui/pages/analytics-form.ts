// The analytics page's query form: the date range with its quick ranges, the group-by
// dimensions, the filters and the page size. It shows a query (fill) and reads one back
// (read); the page decides what submitting it does.
import { DIMENSIONS, FILTERS, type Dimension } from '../../../base/enums.ts';
import type { ReportQuery } from '../api-client.ts';
import { lastDays, rangeProblem, type DateRange } from '../dates.ts';
import { field, h } from '../dom.ts';
import { DIMENSION_LABELS, FILTER_HINTS } from '../labels.ts';

const PAGE_SIZES = [20, 50, 100, 500, 1000];

export interface QueryForm {
  form: HTMLFormElement;
  /** Shows `q` in the fields. */
  fill(q: ReportQuery): void;
  /** The query the fields say (offset 0), or null with the range's problem shown. */
  read(): ReportQuery | null;
  /** "Filters (n active)", the filters opened when any is set. */
  updateFilterSummary(): void;
}

export function queryForm(): QueryForm {
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

  function setRange(r: DateRange, submit: boolean): void {
    start.control.value = r.start;
    end.control.value = r.end;
    if (submit) form.requestSubmit();
  }

  function fill(q: ReportQuery): void {
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

  function read(): ReportQuery | null {
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

  return { form, fill, read, updateFilterSummary };
}
