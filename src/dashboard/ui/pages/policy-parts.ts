// The policy page's parts: what each kind of entry is called and how its value is written,
// and the table of a page of entries.
import type { PolicyEntry, PolicyKind } from '../api-client.ts';
import { h } from '../dom.ts';

export const KIND_LABEL: Record<PolicyKind, string> = {
  ip: 'IP or CIDR', ua: 'User agent (exact)', ua_substring: 'User agent contains', app: 'App bundle', domain: 'Domain', publisher: 'Publisher ID', seller: 'Seller (asi:sid)',
  ssai: 'SSAI provider IP or CIDR',
};
export const KIND_HINT: Record<PolicyKind, string> = {
  ip: '192.0.2.0/24, 2001:db8::/32 or one address',
  ua: 'The whole user agent, exactly',
  ua_substring: 'At least 3 characters; letters match in either case',
  app: 'e.g. com.example.game',
  domain: 'Covers its subdomains too',
  publisher: 'The publisher ID (pub)',
  seller: 'exchange.example:1234',
  ssai: 'A server-side ad insertion provider\'s servers (allow only): their data centre is not held against stitched imps',
};

/** The table of a page of entries (at least one), each row with its Remove. */
export function policyTable(entries: PolicyEntry[], onRemove: (e: PolicyEntry) => void): HTMLTableElement {
  return h(
    'table',
    { class: 'policy-table' },
    h('thead', {}, h('tr', {}, ...['Action', 'Kind', 'Value'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Remove')))),
    h(
      'tbody',
      {},
      ...entries.map((e) =>
        h(
          'tr',
          { 'data-kind': e.kind, 'data-value': e.value },
          h('td', { 'data-label': 'Action' }, h('span', { class: `badge ${e.action}` }, e.action)),
          h('td', { 'data-label': 'Kind' }, KIND_LABEL[e.kind]),
          h('th', { scope: 'row', class: 'policy-value' }, h('code', {}, e.value)),
          h('td', { class: 'row-actions' }, h('button', { type: 'button', class: 'danger small', 'aria-label': `Remove ${e.kind} ${e.value}`, onclick: () => onRemove(e) }, 'Remove')),
        ),
      ),
    ),
  );
}
