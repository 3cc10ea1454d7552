// Projects: ad tags with the scan settings the customer's own scanning tool reads from the
// API (ivtd stores them; nothing in ivtd scans, or calls the alert pixel). A list with edit and delete,
// and one form for create and edit; a 422 from the API is shown next to the field it names.
import type { Project, ProjectInput } from '../api.ts';
import { ApiError } from '../session.ts';
import { confirmDialog, field, h, setFieldError, statusBox } from '../dom.ts';
import { formatInt, formatUtc } from '../format.ts';
import type { Page, PageContext } from '../page.ts';

const PAGE_SIZE = 20;

type FieldName = keyof ProjectInput;

export function projectsPage(ctx: PageContext): Page {
  let offset = 0;
  let total = 0;
  let editing: Project | null = null;

  const listStatus = statusBox();
  const listWrap = h('div', { class: 'table-wrap' });
  const pageInfo = h('p', { class: 'page-info', 'aria-live': 'polite' });
  const prevBtn = h('button', { type: 'button', class: 'secondary', onclick: () => go(offset - PAGE_SIZE) }, '← Previous');
  const nextBtn = h('button', { type: 'button', class: 'secondary', onclick: () => go(offset + PAGE_SIZE) }, 'Next →');
  const pager = h('div', { class: 'pager', hidden: true }, prevBtn, pageInfo, nextBtn);
  const newBtn = h('button', { type: 'button', onclick: () => openForm(null) }, 'New project');
  const notice = h('p', { class: 'notice', role: 'status', 'aria-live': 'polite', hidden: true });

  // ---- the form (create and edit)
  const f = {
    name: field('Name (required)', h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' })),
    demand_id: field('Demand ID (required)', h('input', { name: 'demand_id', required: true, autocomplete: 'off', spellcheck: 'false' })),
    tag: field('Tag (required)', h('textarea', { name: 'tag', required: true, rows: 4, spellcheck: 'false' }), 'An https:// URL of the ad tag, or the tag\'s HTML.'),
    scan_now: field('Scan now', h('select', { name: 'scan_now' }, h('option', { value: '0' }, 'No: on its schedule'), h('option', { value: '1' }, 'Yes: as soon as your tool reads it')), 'Stored for your scanning tool; ivtd does not scan.'),
    times_per_day: field('Scans per day (required)', h('input', { name: 'times_per_day', type: 'number', min: 1, max: 96, step: 1, required: true, inputmode: 'numeric' }), 'Stored for your scanning tool: how often it should scan the tag.'),
    alert_pixel: field('Alert pixel', h('input', { name: 'alert_pixel', type: 'url', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://' }), 'Optional. Stored for your scanning tool to call when it finds a problem; ivtd calls nothing.'),
    locations: field('Locations', h('input', { name: 'locations', autocomplete: 'off', spellcheck: 'false', placeholder: 'US, GB' }), 'Optional. Two-letter ISO country codes your tool should scan from, comma-separated; empty means anywhere.'),
    creative_id: field('Creative ID', h('input', { name: 'creative_id', autocomplete: 'off', spellcheck: 'false' }), 'Optional.'),
  } satisfies Record<FieldName, unknown>;
  const formTitle = h('h2', { id: 'project-form-h', tabindex: -1 }, 'New project');
  const formError = h('p', { class: 'error-box', role: 'alert', hidden: true });
  const saveBtn = h('button', { type: 'submit' }, 'Create project');
  const cancelBtn = h('button', { type: 'button', class: 'secondary', onclick: () => closeForm() }, 'Cancel');
  const form = h(
    'form',
    { class: 'card project-form', 'aria-labelledby': 'project-form-h', novalidate: true, hidden: true },
    formTitle,
    formError,
    h('div', { class: 'form-grid' }, ...Object.values(f).map((x) => x.wrap)),
    h('div', { class: 'actions' }, cancelBtn, saveBtn),
  );
  f.tag.wrap.classList.add('wide');
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void save();
  });

  const el = h(
    'section',
    { class: 'page projects' },
    h('div', { class: 'page-head' }, h('h1', { tabindex: -1 }, 'Projects'), newBtn),
    h('p', { class: 'hint intro' }, 'ivtd stores each project’s tag and scan settings for your own scanning tool, which reads them from the account API. ivtd does not scan tags, and calls no alert pixel.'),
    notice,
    form,
    h('section', { class: 'card', 'aria-label': 'Project list' }, listStatus.el, listWrap, pager),
  );

  function say(text: string): void {
    notice.textContent = text;
    notice.hidden = false;
  }

  function go(next: number): void {
    if (next < 0 || (next >= total && next !== 0)) return;
    offset = next;
    void load();
  }

  async function load(): Promise<void> {
    listStatus.loading('Loading projects…');
    prevBtn.disabled = nextBtn.disabled = true;
    try {
      const r = await ctx.api.listProjects(PAGE_SIZE, offset);
      total = r.total;
      if (r.projects.length === 0 && offset > 0) {
        offset = Math.max(0, offset - PAGE_SIZE); // the last item of a page was deleted
        return load();
      }
      render(r.projects);
      listStatus.done();
    } catch (e) {
      listWrap.replaceChildren();
      pageInfo.textContent = '';
      listStatus.error(`Could not load the projects: ${(e as Error).message}`, () => void load());
    }
  }

  function render(projects: Project[]): void {
    if (projects.length === 0) {
      listWrap.replaceChildren(h('p', { class: 'empty' }, 'No projects yet. A project keeps an ad tag and its scan settings for your own scanning tool to read (GET /v1/project/list); ivtd itself does not scan.'));
    } else {
      listWrap.replaceChildren(
        h(
          'table',
          { class: 'projects-table' },
          h('thead', {}, h('tr', {}, ...['Name', 'Demand ID', 'Scans/day', 'Scan now', 'Locations', 'Updated'].map((c) => h('th', { scope: 'col', class: c === 'Scans/day' ? 'num' : null }, c)), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))),
          h(
            'tbody',
            {},
            ...projects.map((p) =>
              h(
                'tr',
                { 'data-project-id': p.project_id },
                h('th', { scope: 'row' }, p.name),
                h('td', { 'data-label': 'Demand ID' }, p.demand_id),
                h('td', { class: 'num', 'data-label': 'Scans/day' }, formatInt(p.times_per_day)),
                h('td', { 'data-label': 'Scan now' }, p.scan_now ? 'Yes' : 'No'),
                h('td', { 'data-label': 'Locations' }, p.locations.length ? p.locations.join(', ') : h('span', { class: 'muted' }, 'anywhere')),
                h('td', { class: 'nowrap', 'data-label': 'Updated' }, formatUtc(p.updated_at)),
                h(
                  'td',
                  { class: 'row-actions' },
                  h('button', { type: 'button', class: 'secondary small', 'aria-label': `Edit ${p.name}`, onclick: () => openForm(p) }, 'Edit'),
                  h('button', { type: 'button', class: 'danger small', 'aria-label': `Delete ${p.name}`, onclick: () => void remove(p) }, 'Delete'),
                ),
              ),
            ),
          ),
        ),
      );
    }
    const to = offset + projects.length;
    pageInfo.textContent = total ? `Projects ${formatInt(offset + 1)}–${formatInt(to)} of ${formatInt(total)}` : '';
    prevBtn.disabled = offset === 0;
    nextBtn.disabled = to >= total;
    pager.hidden = offset === 0 && to >= total; // one page: nothing to page through
  }

  function clearErrors(): void {
    formError.hidden = true;
    for (const x of Object.values(f)) setFieldError(x, null);
  }

  function openForm(p: Project | null): void {
    editing = p;
    clearErrors();
    notice.hidden = true;
    formTitle.textContent = p ? `Edit “${p.name}”` : 'New project';
    saveBtn.textContent = p ? 'Save changes' : 'Create project';
    f.name.control.value = p?.name ?? '';
    f.demand_id.control.value = p?.demand_id ?? '';
    f.tag.control.value = p?.tag ?? '';
    f.scan_now.control.value = String(p?.scan_now ?? 0);
    f.times_per_day.control.value = String(p?.times_per_day ?? 1);
    f.alert_pixel.control.value = p?.alert_pixel ?? '';
    f.locations.control.value = p?.locations.join(', ') ?? '';
    f.creative_id.control.value = p?.creative_id ?? '';
    form.hidden = false;
    newBtn.disabled = true;
    f.name.control.focus();
  }

  function closeForm(): void {
    form.hidden = true;
    newBtn.disabled = false;
    editing = null;
    newBtn.focus();
  }

  function payload(): ProjectInput {
    const opt = (s: string) => (s.trim() === '' ? null : s.trim());
    const n = f.times_per_day.control.value.trim();
    return {
      name: f.name.control.value.trim(),
      demand_id: f.demand_id.control.value.trim(),
      tag: f.tag.control.value.trim(),
      scan_now: f.scan_now.control.value === '1' ? 1 : 0,
      // A non-number goes to the API as typed so its message names the field.
      times_per_day: (/^\d+$/.test(n) ? Number(n) : n) as number,
      alert_pixel: opt(f.alert_pixel.control.value),
      locations: opt(f.locations.control.value)?.toUpperCase() ?? null,
      creative_id: opt(f.creative_id.control.value),
    };
  }

  /** Every required field left empty, each marked at once (the API names only the first fault). */
  function missingRequired(): boolean {
    const missing = (['name', 'demand_id', 'tag', 'times_per_day'] as const).filter((k) => f[k].control.value.trim() === '');
    for (const k of missing) setFieldError(f[k], 'Required: fill this in.');
    if (missing.length > 0) f[missing[0]!].control.focus();
    return missing.length > 0;
  }

  async function save(): Promise<void> {
    clearErrors();
    if (missingRequired()) return;
    saveBtn.disabled = true;
    const was = saveBtn.textContent;
    saveBtn.textContent = 'Saving…';
    try {
      const body = payload();
      const saved = editing ? await ctx.api.updateProject(editing.project_id, body) : await ctx.api.createProject(body);
      const verb = editing ? 'Saved' : 'Created';
      closeForm();
      say(`${verb} project “${saved.name}”.`);
      if (verb === 'Created') offset = 0; // newest first: it is on the first page
      await load();
    } catch (e) {
      showSaveError(e as Error);
    } finally {
      saveBtn.disabled = false;
      saveBtn.textContent = was;
    }
  }

  function showSaveError(e: Error): void {
    const target = e instanceof ApiError && e.field && e.field in f ? f[e.field as FieldName] : undefined;
    if (target) {
      setFieldError(target, e.message);
      target.control.focus();
      return;
    }
    formError.textContent = e instanceof ApiError && e.status === 404 ? 'This project no longer exists (it was deleted elsewhere).' : `Could not save: ${e.message}`;
    formError.hidden = false;
    formTitle.focus();
  }

  async function remove(p: Project): Promise<void> {
    const ok = await confirmDialog({
      title: 'Delete project?',
      body: [h('p', {}, `“${p.name}” and its schedule will be deleted. This cannot be undone.`)],
      confirm: 'Delete project',
      danger: true,
    });
    if (!ok) return;
    listStatus.loading(`Deleting “${p.name}”…`);
    try {
      await ctx.api.deleteProject(p.project_id);
      if (editing?.project_id === p.project_id) closeForm();
      say(`Deleted project “${p.name}”.`);
      await load();
    } catch (e) {
      listStatus.error(`Could not delete “${p.name}”: ${(e as Error).message}`);
    }
  }

  void load();
  return { el };
}
