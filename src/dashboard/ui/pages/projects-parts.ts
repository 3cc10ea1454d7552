// The projects page's parts: the form's fields (create and edit share them), the project
// list's table, and the API body the fields make.
import type { Project, ProjectInput } from '../api-client.ts';
import { field, h } from '../dom.ts';
import { formatInt, formatUtc } from '../format.ts';

export type FieldName = keyof ProjectInput;

/** The form's fields, in the order they are shown. */
export function projectFields() {
  return {
    name: field('Name (required)', h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' })),
    demand_id: field('Demand ID (required)', h('input', { name: 'demand_id', required: true, autocomplete: 'off', spellcheck: 'false' })),
    tag: field('Tag (required)', h('textarea', { name: 'tag', required: true, rows: 4, spellcheck: 'false' }), 'An https:// URL of the ad tag, or the tag\'s HTML.'),
    scan_now: field('Scan now', h('select', { name: 'scan_now' }, h('option', { value: '0' }, 'No: on its schedule'), h('option', { value: '1' }, 'Yes: as soon as your tool reads it')), 'Stored for your scanning tool; ivtd does not scan.'),
    times_per_day: field('Scans per day (required)', h('input', { name: 'times_per_day', type: 'number', min: 1, max: 96, step: 1, required: true, inputmode: 'numeric' }), 'Stored for your scanning tool: how often it should scan the tag.'),
    alert_pixel: field('Alert pixel', h('input', { name: 'alert_pixel', type: 'url', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://' }), 'Optional. Stored for your scanning tool to call when it finds a problem; ivtd calls nothing.'),
    locations: field('Locations', h('input', { name: 'locations', autocomplete: 'off', spellcheck: 'false', placeholder: 'US, GB' }), 'Optional. Two-letter ISO country codes your tool should scan from, comma-separated; empty means anywhere.'),
    creative_id: field('Creative ID', h('input', { name: 'creative_id', autocomplete: 'off', spellcheck: 'false' }), 'Optional.'),
  } satisfies Record<FieldName, unknown>;
}

export type ProjectFields = ReturnType<typeof projectFields>;

/** What the fields say, as the API's body. */
export function projectPayload(f: ProjectFields): ProjectInput {
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

/** The table of a page of projects (at least one), each row with its Edit and Delete. */
export function projectsTable(projects: Project[], onEdit: (p: Project) => void, onDelete: (p: Project) => void): HTMLTableElement {
  return h(
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
            h('button', { type: 'button', class: 'secondary small', 'aria-label': `Edit ${p.name}`, onclick: () => onEdit(p) }, 'Edit'),
            h('button', { type: 'button', class: 'danger small', 'aria-label': `Delete ${p.name}`, onclick: () => onDelete(p) }, 'Delete'),
          ),
        ),
      ),
    ),
  );
}
