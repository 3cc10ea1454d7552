// Integrations: what a bidder and a reporting pipeline need. IDs, keys (shown masked: only
// a prefix is stored in the clear; a rotated key is shown once), endpoints and curl examples.
import type { Account, AccountKey, DashboardConfig, KeyKind, RotatedKey } from '../api-client.ts';
import { confirmDialog, copyButton, field, h, statusBox } from '../dom.ts';
import { healthCurl, lookupCurl, ortbCurl, reportCurl } from '../examples.ts';
import { formatUtc, maskedKey } from '../format.ts';
import type { Page, PageContext } from '../page.ts';

/** Choices for how long the replaced key keeps working. */
const GRACE_CHOICES = [
  { seconds: 86_400, label: 'for 24 hours (time to roll the new key out)' },
  { seconds: 3_600, label: 'for 1 hour' },
  { seconds: 0, label: 'no longer: refuse it immediately' },
];

const KIND_NAME: Record<KeyKind, string> = { prebid: 'pre-bid', reporting: 'reporting' };

// A key revealed after rotation stays visible while the user moves between pages (never stored).
const revealed: Partial<Record<KeyKind, RotatedKey>> = {};

/** Drops revealed keys (on sign-out). */
export function forgetRevealedKeys(): void {
  delete revealed.prebid;
  delete revealed.reporting;
}

export function integrationsPage(ctx: PageContext): Page {
  const status = statusBox();
  const body = h('div', { class: 'integrations-body' });
  const el = h('section', { class: 'page integrations' }, h('h1', { tabindex: -1 }, 'Integrations'), status.el, body);

  async function load(reloadAccount = false): Promise<void> {
    status.loading('Loading your integration details…');
    try {
      const [account, config] = await Promise.all([ctx.account(reloadAccount), ctx.config()]);
      render(account, config);
      status.done();
    } catch (e) {
      status.error(`Could not load the integration details: ${(e as Error).message}`, () => void load(true));
    }
  }

  function render(a: Account, c: DashboardConfig): void {
    const prebidKey = revealed.prebid?.key ?? null;
    const reportingKey = revealed.reporting?.key ?? null;
    const lookup = lookupCurl(c.prebid_url, a.partner_id, prebidKey);
    const report = reportCurl(c.reporting_url, a.customer_id, reportingKey, Date.now());
    body.replaceChildren(
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'int-prebid' },
        h('h2', { id: 'int-prebid' }, 'Pre-bid lookups'),
        h('p', { class: 'hint intro' }, 'Your bidder calls the lookup endpoint once per bid request with your partner ID in ', h('code', {}, 'p'), ' and your pre-bid key in ', h('code', {}, 'k'), '.'),
        h(
          'dl',
          { class: 'facts' },
          fact('Partner ID (p)', a.partner_id, 'partner-id'),
          keyFact(a, 'prebid', 'Pre-bid key (k)'),
          fact('Lookup endpoint', `${c.prebid_url}/api/v1/ivt/lookup`, 'lookup-url'),
          fact('OpenRTB lookup endpoint (POST)', `${c.prebid_url}/api/v1/ivt/ortb`, 'ortb-url'),
          fact('Health check', `${c.prebid_url}/health-check`, 'health-url'),
        ),
        example('Example lookup', lookup, prebidKey ? null : 'Set IVTD_PREBID_KEY to your pre-bid key first (export IVTD_PREBID_KEY=…).'),
        example(
          'Example OpenRTB lookup',
          ortbCurl(c.prebid_url, a.partner_id, prebidKey),
          'The same verdict from an OpenRTB 2.4–2.6 bid request sent as the body (JSON, optionally gzip); the answer adds the request’s id, nbr (the no-bid reason, in the high band) and reasons.',
        ),
        example('Health check', healthCurl(c.prebid_url), 'Answers 200 when lookups are served, 503 when not; poll every 10 to 60 seconds.'),
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'int-reporting' },
        h('h2', { id: 'int-reporting' }, 'Reporting API'),
        h('p', { class: 'hint intro' }, 'HTTP Basic authentication: the username is your customer ID, the password your reporting key. Same data as the analytics page.'),
        h(
          'dl',
          { class: 'facts' },
          fact('Customer ID (username)', a.customer_id, 'customer-id'),
          keyFact(a, 'reporting', 'Reporting key (password)'),
          fact('Report endpoint', `${c.reporting_url}/v1/report`, 'report-url'),
        ),
        example('Example report (last 7 days by date)', report, reportingKey ? null : 'Set IVTD_REPORTING_KEY to your reporting key first.'),
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'int-account' },
        h('h2', { id: 'int-account' }, 'Account API'),
        h(
          'dl',
          { class: 'facts' },
          fact('Signed in as', `${a.username} (${a.name})`, 'username', false),
          fact('Base URL', c.api_url, 'api-url'),
        ),
        h('p', { class: 'hint' }, h('code', {}, 'POST /login'), ' (form: username, password) returns a Bearer access token and a refresh token; ', h('code', {}, 'POST /refresh_token'), ' renews them; ', h('code', {}, '/v1/project/*'), ' manages projects.'),
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'int-openapi' },
        h('h2', { id: 'int-openapi' }, 'API descriptions (OpenAPI 3.1)'),
        h('p', { class: 'hint intro' }, 'Machine-readable descriptions of the three interfaces, to generate a client or validate against. Served without credentials.'),
        h(
          'ul',
          { class: 'openapi-links' },
          ...([
            ['Pre-bid lookups', `${c.api_url}/openapi/prebid.json`, 'openapi-prebid'],
            ['Reporting API', `${c.reporting_url}/openapi.json`, 'openapi-reporting'],
            ['Account API', `${c.api_url}/openapi.json`, 'openapi-account'],
          ] as const).map(([label, url, id]) => h('li', {}, h('a', { id, href: url, target: '_blank', rel: 'noopener' }, label), ' ', h('code', {}, url), copyButton(() => url))),
        ),
      ),
    );
  }

  function fact(label: string, value: string, id: string, copy = true): HTMLDivElement {
    return h('div', { class: 'fact' }, h('dt', {}, label), h('dd', {}, h('code', { id, class: 'value' }, value), copy ? copyButton(() => value) : null));
  }

  function keyFact(a: Account, kind: KeyKind, label: string): HTMLDivElement {
    const keys = a.keys.filter((k) => k.kind === kind);
    const current = keys.find((k) => k.expires_at === null) ?? keys.at(-1);
    const retiring = keys.filter((k) => k !== current && k.expires_at !== null);
    const fresh = revealed[kind];
    const rotate = h('button', { type: 'button', class: 'secondary small', 'data-rotate': kind }, 'Rotate key…');
    rotate.addEventListener('click', () => void rotateKey(kind, rotate));
    return h(
      'div',
      { class: 'fact' },
      h('dt', {}, label),
      h(
        'dd',
        {},
        current ? h('code', { class: 'value masked', 'data-key-prefix': kind, title: 'Only the first characters are kept in the clear; the key itself is stored as a hash.' }, maskedKey(current.prefix)) : h('span', { class: 'muted' }, 'no active key'),
        rotate,
        current ? h('span', { class: 'hint' }, `created ${formatUtc(current.created_at)}`) : null,
        ...retiring.map((k: AccountKey) => h('span', { class: 'hint retiring' }, `${maskedKey(k.prefix)} keeps working until ${formatUtc(k.expires_at)}`)),
        fresh ? revealBox(kind, fresh) : null,
      ),
    );
  }

  function revealBox(kind: KeyKind, r: RotatedKey): HTMLDivElement {
    // Plain text (not an input) so the whole key wraps into view on a phone; one click selects it all.
    const key = h('code', { class: 'key-reveal', id: `new-${kind}-key`, tabindex: 0, 'aria-label': `New ${KIND_NAME[kind]} key` }, r.key);
    const hideBtn = h('button', { type: 'button', class: 'link' }, 'I have saved it: hide');
    hideBtn.addEventListener('click', () => {
      delete revealed[kind];
      void load();
    });
    return h(
      'div',
      { class: 'reveal', role: 'alert' },
      h('strong', {}, `Your new ${KIND_NAME[kind]} key. Copy it now: ivtd keeps only a hash, so it cannot be shown again.`),
      h('div', { class: 'reveal-row' }, key, copyButton(() => r.key, 'Copy key')),
      h('span', { class: 'hint' }, previousKeyNote(r.previous_expires_at)),
      hideBtn,
    );
  }

  function previousKeyNote(expires: string | null): string {
    if (!expires) return 'There was no previous key.';
    if (Date.parse(expires) <= Date.now() + 1000) return 'The previous key no longer works.';
    return `The previous key keeps working until ${formatUtc(expires)}.`;
  }

  function example(title: string, cmd: string, note: string | null): HTMLDivElement {
    return h('div', { class: 'example' }, h('div', { class: 'example-head' }, h('h3', {}, title), copyButton(() => cmd)), h('pre', { tabindex: 0 }, h('code', {}, cmd)), note ? h('p', { class: 'hint' }, note) : null);
  }

  async function rotateKey(kind: KeyKind, btn: HTMLButtonElement): Promise<void> {
    const grace = field(
      'The current key keeps working',
      h('select', { name: 'grace' }, ...GRACE_CHOICES.map((g) => h('option', { value: g.seconds }, g.label))),
    );
    const ok = await confirmDialog({
      title: `Rotate the ${KIND_NAME[kind]} key?`,
      body: [
        h('p', {}, `A new ${KIND_NAME[kind]} key is issued and shown once. Every ${kind === 'prebid' ? 'bidder' : 'script'} using the current key must switch to the new one.`),
        grace.wrap,
      ],
      confirm: 'Rotate key',
      danger: true,
    });
    if (!ok) {
      btn.focus();
      return;
    }
    btn.disabled = true;
    status.loading(`Rotating the ${KIND_NAME[kind]} key…`);
    try {
      revealed[kind] = await ctx.api.rotateKey(kind, Number(grace.control.value));
      await load(true);
      document.getElementById(`new-${kind}-key`)?.focus();
    } catch (e) {
      btn.disabled = false;
      status.error(`Could not rotate the key: ${(e as Error).message}`);
    }
  }

  void load();
  return { el };
}
