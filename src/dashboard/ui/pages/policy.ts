// Policy: the customer's own allow and deny lists and band thresholds (docs/policy.md).
// Search, add, remove, import and export as CSV. The entries are checked by the same rules
// as the API's (src/policy/model.ts) before they are sent, so a bad CSV line is named here.
// The kinds' labels and the entries' table are in policy-parts.ts.
import { parsePolicyCsv, policyToCsv } from '../../../policy/policy-csv.ts';
import { ENTRY_KINDS, PolicyError } from '../../../policy/model.ts';
import type { PolicyEntry, PolicyKind, PolicyView } from '../api-client.ts';
import { ApiError } from '../session.ts';
import { confirmDialog, downloadCsvFile, field, h, setFieldError, statusBox } from '../dom.ts';
import { countOf, formatInt } from '../format.ts';
import type { Page, PageContext } from '../page.ts';
import { KIND_HINT, KIND_LABEL, policyTable } from './policy-parts.ts';

const PAGE_SIZE = 50;

export function policyPage(ctx: PageContext): Page {
  const status = statusBox();
  let offset = 0;
  let view: PolicyView | null = null;

  const search = h('input', { type: 'search', name: 'search', placeholder: 'Search values', autocomplete: 'off' });
  const kindFilter = h('select', { name: 'kind-filter' }, h('option', { value: '' }, 'All kinds'), ...ENTRY_KINDS.map((k) => h('option', { value: k }, KIND_LABEL[k])));
  const summary = h('p', { class: 'hint', id: 'policy-summary' });
  const notice = h('p', { class: 'notice', role: 'status', id: 'policy-notice' });
  const listWrap = h('div', { class: 'table-wrap' });
  const prevBtn = h('button', { type: 'button', class: 'secondary small' }, 'Previous');
  const nextBtn = h('button', { type: 'button', class: 'secondary small' }, 'Next');
  const pageInfo = h('span', { class: 'hint' });
  const pager = h('div', { class: 'pager' }, prevBtn, pageInfo, nextBtn);

  // Add one entry.
  const addKind = field('Kind', h('select', { name: 'kind' }, ...ENTRY_KINDS.map((k) => h('option', { value: k }, KIND_LABEL[k]))));
  const addValue = field('Value', h('input', { type: 'text', name: 'value', autocomplete: 'off', required: true }), KIND_HINT.ip);
  const addAction = field('Action', h('select', { name: 'action' }, h('option', { value: 'deny' }, 'Deny (band high)'), h('option', { value: 'allow' }, 'Allow (band low)')));
  const addBtn = h('button', { type: 'submit' }, 'Add entry');
  const addForm = h('form', { class: 'row entry', 'aria-label': 'Add an entry' }, addKind.wrap, addValue.wrap, addAction.wrap, addBtn);
  addValue.wrap.classList.add('value');
  addKind.control.addEventListener('change', () => {
    const hint = addValue.wrap.querySelector('.hint');
    if (hint) hint.textContent = KIND_HINT[addKind.control.value as PolicyKind];
  });

  // Thresholds.
  const medium = field('Medium from', h('input', { type: 'number', name: 'medium', step: '0.01', min: '0.05', max: '0.9' }), 'Empty: the default');
  const high = field('High from', h('input', { type: 'number', name: 'high', step: '0.01', min: '0.1', max: '0.99' }), 'Empty: the default');
  const thBtn = h('button', { type: 'submit', class: 'secondary' }, 'Save thresholds');
  const thForm = h('form', { class: 'row', 'aria-label': 'Band thresholds' }, medium.wrap, high.wrap, thBtn);

  // CSV.
  const fileInput = h('input', { type: 'file', accept: '.csv,text/csv', name: 'csv', class: 'offscreen', 'aria-label': 'CSV file to import' });
  const importBtn = h('button', { type: 'button', class: 'secondary' }, 'Import CSV…');
  const exportBtn = h('button', { type: 'button', class: 'secondary' }, 'Export CSV');

  const el = h(
    'section',
    { class: 'page policy' },
    h('div', { class: 'page-head' }, h('h1', { tabindex: -1 }, 'Policy'), h('div', { class: 'actions' }, importBtn, exportBtn, fileInput)),
    h('p', { class: 'hint intro' }, 'Your own lists decide before the model: an allowed value makes a lookup ', h('strong', {}, 'low'), ', a denied one ', h('strong', {}, 'high'), ' (deny wins when both match). Changes apply to lookups within seconds.'),
    status.el,
    notice,
    h('section', { class: 'card', 'aria-labelledby': 'pol-add' }, h('h2', { id: 'pol-add' }, 'Add an entry'), addForm),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'pol-list' },
      h('div', { class: 'card-head' }, h('h2', { id: 'pol-list' }, 'Entries'), h('div', { class: 'row' }, field('Search', search).wrap, field('Kind', kindFilter).wrap)),
      summary,
      listWrap,
      pager,
    ),
    h('section', { class: 'card', 'aria-labelledby': 'pol-th' }, h('h2', { id: 'pol-th' }, 'Band thresholds'), thForm),
  );

  async function load(): Promise<void> {
    status.loading('Loading your policy…');
    try {
      view = await ctx.api.policy({ search: search.value.trim(), kind: kindFilter.value, limit: PAGE_SIZE, offset });
      render(view);
      status.done();
    } catch (e) {
      status.error(`Could not load the policy: ${(e as Error).message}`, () => void load());
    }
  }

  function render(v: PolicyView): void {
    summary.textContent = `${formatInt(v.total)} of at most ${formatInt(v.limits.max_entries)} entries${v.matching !== v.total ? `; ${formatInt(v.matching)} match the search` : ''}.`;
    if (document.activeElement !== medium.control) medium.control.value = v.medium === null ? '' : String(v.medium);
    if (document.activeElement !== high.control) high.control.value = v.high === null ? '' : String(v.high);
    medium.control.placeholder = String(v.limits.defaults.medium);
    high.control.placeholder = String(v.limits.defaults.high);
    if (v.entries.length === 0) {
      listWrap.replaceChildren(h('p', { class: 'empty' }, v.total === 0 ? 'No entries yet: every lookup is scored by the model alone.' : 'No entry matches the search.'));
    } else {
      listWrap.replaceChildren(policyTable(v.entries, (e) => void remove(e)));
    }
    const to = offset + v.entries.length;
    pageInfo.textContent = v.matching ? `${formatInt(offset + 1)}–${formatInt(to)} of ${formatInt(v.matching)}` : '';
    prevBtn.disabled = offset === 0;
    nextBtn.disabled = to >= v.matching;
    pager.hidden = offset === 0 && to >= v.matching;
  }

  /** An API refusal as a message; a 422 about an entry is put under the value field. */
  function explain(e: unknown): string {
    if (e instanceof ApiError && e.status === 413) return `${e.message}`;
    return (e as Error).message;
  }

  addForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    setFieldError(addValue, null);
    const entry = { kind: addKind.control.value as PolicyKind, value: addValue.control.value, action: addAction.control.value as 'allow' | 'deny' };
    addBtn.disabled = true;
    try {
      await ctx.api.addPolicyEntries([entry]);
      addValue.control.value = '';
      status.done();
      await load();
      addValue.control.focus();
    } catch (e) {
      if (e instanceof ApiError && e.field?.startsWith('entries')) setFieldError(addValue, e.message);
      else status.error(`Could not add the entry: ${explain(e)}`);
    } finally {
      addBtn.disabled = false;
    }
  });

  thForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    setFieldError(medium, null);
    setFieldError(high, null);
    const num = (s: string) => (s.trim() === '' ? null : Number(s));
    try {
      await ctx.api.setThresholds({ medium: num(medium.control.value), high: num(high.control.value) });
      await load();
    } catch (e) {
      if (e instanceof ApiError && e.field === 'medium') setFieldError(medium, e.message);
      else if (e instanceof ApiError && e.field === 'high') setFieldError(high, e.message);
      else status.error(`Could not save the thresholds: ${explain(e)}`);
    }
  });

  async function remove(e: PolicyEntry): Promise<void> {
    const ok = await confirmDialog({ title: 'Remove this entry?', body: [h('p', {}, `${e.action} ${KIND_LABEL[e.kind]}: `, h('code', {}, e.value))], confirm: 'Remove', danger: true });
    if (!ok) return;
    try {
      await ctx.api.removePolicyEntries([{ kind: e.kind, value: e.value }]);
      await load();
    } catch (err) {
      status.error(`Could not remove the entry: ${explain(err)}`);
    }
  }

  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  search.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      offset = 0;
      void load();
    }, 250);
  });
  kindFilter.addEventListener('change', () => {
    offset = 0;
    void load();
  });
  prevBtn.addEventListener('click', () => {
    offset = Math.max(0, offset - PAGE_SIZE);
    void load();
  });
  nextBtn.addEventListener('click', () => {
    offset += PAGE_SIZE;
    void load();
  });

  importBtn.addEventListener('click', () => fileInput.click());
  fileInput.addEventListener('change', async () => {
    const file = fileInput.files?.[0];
    fileInput.value = '';
    if (!file) return;
    let entries: PolicyEntry[];
    try {
      entries = parsePolicyCsv(await file.text()) as PolicyEntry[];
    } catch (e) {
      status.error(e instanceof PolicyError ? `${file.name}: ${e.message}` : `Could not read ${file.name}: ${(e as Error).message}`);
      return;
    }
    status.loading(`Importing ${countOf(entries.length, 'entry', 'entries')}…`);
    try {
      const r = await ctx.api.addPolicyEntries(entries);
      offset = 0;
      await load();
      notice.textContent = `Imported ${file.name}: ${countOf(r.added, 'new entry', 'new entries')}; the list has ${formatInt(r.entries)}.`;
    } catch (e) {
      status.error(`Could not import ${file.name}: ${e instanceof ApiError && e.field ? `${e.field}: ` : ''}${explain(e)}`);
    }
  });

  exportBtn.addEventListener('click', async () => {
    try {
      const all = await ctx.api.policy();
      downloadCsvFile('ivtd-policy.csv', policyToCsv(all.entries));
    } catch (e) {
      status.error(`Could not export the policy: ${explain(e)}`);
    }
  });

  void load();
  return { el, dispose: () => clearTimeout(searchTimer) };
}
