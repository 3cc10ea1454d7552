// The dashboard shell: sign-in, then a header with navigation and one page at a time,
// chosen by the URL hash (#/analytics, #/projects, #/policy, #/integrations).
import 'uplot/dist/uPlot.min.css';
import './app.css';
import { Api, dashboardConfig, type Account, type DashboardConfig } from './api-client.ts';
import { h } from './dom.ts';
import type { Page, PageContext } from './page.ts';
import { analyticsPage, forgetAnalyticsQuery } from './pages/analytics.ts';
import { forgetRevealedKeys, integrationsPage } from './pages/integrations.ts';
import { loginPage, type LoginMessage } from './pages/login.ts';
import { projectsPage } from './pages/projects.ts';
import { policyPage } from './pages/policy.ts';
import { Session } from './session.ts';

const ROUTES = {
  analytics: { title: 'Analytics', page: analyticsPage },
  projects: { title: 'Projects', page: projectsPage },
  policy: { title: 'Policy', page: policyPage },
  integrations: { title: 'Integrations', page: integrationsPage },
} as const;
type Route = keyof typeof ROUTES;

const root = document.getElementById('app')!;
const session = new Session();
const api = new Api(session);
let account: Promise<Account> | null = null;
let config: Promise<DashboardConfig> | null = null;
let current: Page | null = null;

const ctx: PageContext = {
  api,
  account(reload = false) {
    if (reload || !account) {
      account = api.account();
      account.catch(() => (account = null));
    }
    return account;
  },
  config() {
    config ??= dashboardConfig();
    config.catch(() => (config = null));
    return config;
  },
};

function route(): Route {
  const name = location.hash.replace(/^#\/?/, '').split('?')[0] ?? '';
  return name in ROUTES ? (name as Route) : 'analytics';
}

function showLogin(message: LoginMessage | null): void {
  current?.dispose?.();
  current = null;
  account = null;
  forgetAnalyticsQuery();
  forgetRevealedKeys();
  document.title = 'Sign in · ivtd';
  root.replaceChildren(loginPage(session, message, () => showApp()));
}

const nav = h('nav', { 'aria-label': 'Main' });
const who = h('span', { class: 'who' });
const main = h('main', { id: 'main' });
const signOut = h('button', { type: 'button', class: 'secondary small' }, 'Sign out');
signOut.addEventListener('click', async () => {
  signOut.disabled = true;
  await session.logout();
  signOut.disabled = false;
  showLogin({ text: 'You have signed out.', tone: 'info' });
});
const shell = h(
  'div',
  { class: 'shell' },
  h('a', { class: 'skip', href: '#main' }, 'Skip to content'),
  h('header', { class: 'top' }, h('a', { class: 'brand', href: '#/analytics' }, 'ivtd'), nav, h('div', { class: 'account' }, who, signOut)),
  main,
);
// The skip link must not change the route.
shell.querySelector('.skip')!.addEventListener('click', (e) => {
  e.preventDefault();
  main.querySelector<HTMLElement>('h1')?.focus();
});

function showApp(): void {
  if (!root.contains(shell)) root.replaceChildren(shell);
  render(false);
  ctx.account().then(
    (a) => (who.textContent = a.username),
    () => (who.textContent = ''),
  );
}

function render(focus: boolean): void {
  if (!session.active) return;
  const r = route();
  nav.replaceChildren(
    ...(Object.keys(ROUTES) as Route[]).map((k) => h('a', { href: `#/${k}`, 'aria-current': k === r ? 'page' : null }, ROUTES[k].title)),
  );
  current?.dispose?.();
  current = ROUTES[r].page(ctx);
  main.replaceChildren(current.el);
  document.title = `${ROUTES[r].title} · ivtd`;
  if (focus) current.el.querySelector<HTMLElement>('h1')?.focus();
}

session.onEnded = (text) => showLogin({ text, tone: 'warn' });
window.addEventListener('hashchange', () => render(true));
showLogin(null);
