// A few DOM helpers. Text always goes in as text nodes (never innerHTML), and there are no
// inline style attributes: the Content-Security-Policy forbids both.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/** Creates an element: `on*` attrs become listeners, booleans toggle attributes, the rest are set as strings. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'style') throw new Error('inline styles are blocked by the CSP; use a class');
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, ...children);
  return el;
}

export function append(el: Element, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'number' ? String(c) : c);
  }
}

export function clear(el: Element): void {
  el.replaceChildren();
}

let ids = 0;
/** A unique id for label/aria wiring. */
export function uid(prefix: string): string {
  return `${prefix}-${++ids}`;
}

/** A labelled form control: <div class=field><label/>control<p hint/><p error/></div>. */
export function field<C extends HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>(
  label: string,
  control: C,
  hint?: string,
): { wrap: HTMLDivElement; error: HTMLParagraphElement; control: C } {
  control.id ||= uid('f');
  const error = h('p', { class: 'field-error', id: `${control.id}-err`, hidden: true });
  const described = [error.id];
  let hintEl: HTMLParagraphElement | null = null;
  if (hint) {
    hintEl = h('p', { class: 'hint', id: `${control.id}-hint` }, hint);
    described.unshift(hintEl.id);
  }
  control.setAttribute('aria-describedby', described.join(' '));
  const wrap = h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl, error);
  return { wrap, error, control };
}

/** Shows (or clears, with null) a message under a field and marks the control invalid. */
export function setFieldError(f: { error: HTMLElement; control: HTMLElement }, message: string | null): void {
  f.error.textContent = message ?? '';
  f.error.hidden = !message;
  if (message) f.control.setAttribute('aria-invalid', 'true');
  else f.control.removeAttribute('aria-invalid');
}

/** A status line for loading/error states, announced to screen readers. */
export function statusBox(): { el: HTMLDivElement; loading(text?: string): void; error(text: string, retry?: () => void): void; done(): void } {
  const el = h('div', { class: 'status', role: 'status', 'aria-live': 'polite', hidden: true });
  return {
    el,
    loading(text = 'Loading…') {
      el.className = 'status loading';
      el.replaceChildren(h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
      el.hidden = false;
    },
    error(text, retry) {
      el.className = 'status error';
      el.replaceChildren(h('span', {}, text));
      if (retry) el.append(h('button', { type: 'button', class: 'link', onclick: () => retry() }, 'Try again'));
      el.hidden = false;
    },
    done() {
      el.hidden = true;
      el.replaceChildren();
    },
  };
}

/** Copies text to the clipboard; falls back to a selected textarea where the async API is unavailable (plain-HTTP hosts). */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the legacy path
  }
  const ta = h('textarea', { class: 'offscreen', readonly: true, 'aria-hidden': 'true' });
  ta.value = text;
  document.body.append(ta);
  ta.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  ta.remove();
  return ok;
}

/** A "Copy" button that says "Copied" for a moment. */
export function copyButton(getText: () => string, label = 'Copy'): HTMLButtonElement {
  const b = h('button', { type: 'button', class: 'secondary small' }, label);
  b.addEventListener('click', async () => {
    const ok = await copyText(getText());
    b.textContent = ok ? 'Copied' : 'Copy failed: select and copy by hand';
    setTimeout(() => (b.textContent = label), 2000);
  });
  return b;
}

/** A modal confirmation built on <dialog> (focus trapped, Esc cancels). Resolves true on confirm. */
export function confirmDialog(opts: { title: string; body: Child[]; confirm: string; danger?: boolean }): Promise<boolean> {
  return new Promise((resolve) => {
    const titleId = uid('dlg');
    const dlg = h(
      'dialog',
      { 'aria-labelledby': titleId },
      h('h2', { id: titleId }, opts.title),
      ...opts.body,
      h(
        'form',
        { method: 'dialog', class: 'actions' },
        h('button', { value: 'cancel', class: 'secondary' }, 'Cancel'),
        h('button', { value: 'ok', class: opts.danger ? 'danger' : '' }, opts.confirm),
      ),
    );
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'ok');
    });
    document.body.append(dlg);
    dlg.showModal();
  });
}

/** Offers `text` as a CSV file download named `fileName` (the browser's own download). */
export function downloadCsvFile(fileName: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const a = h('a', { href: url, download: fileName, class: 'offscreen' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
