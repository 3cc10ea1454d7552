// Projects: ad tags with the scan settings the customer's own scanning tool reads from the
// API (ivtd stores them; nothing in ivtd scans, or calls the alert pixel). A list with edit and delete,
// and one form for create and edit; a 422 from the API is shown next to the field it names.
// The form's fields, the list's table and the API body are in projects-parts.ts.
import type { Project } from '../api-client.ts';
import { ApiError } from '../session.ts';
import { confirmDialog, h, setFieldError, statusBox } from '../dom.ts';
import { formatInt } from '../format.ts';
import type { Page, PageContext } from '../page.ts';
import { projectFields, projectPayload, projectsTable, type FieldName } from './projects-parts.ts';

const PAGE_SIZE = 20;

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
  const f = projectFields();
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
      listWrap.replaceChildren(projectsTable(projects, (p) => openForm(p), (p) => void remove(p)));
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
      const body = projectPayload(f);
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
