// Real Chromium (Debian's package) driven by playwright-core, for the dashboard tests.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.IVTD_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) or set IVTD_CHROMIUM`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** What a page did that a test should fail on: CSP violations, script errors, requests to another origin. */
export interface PageWatch {
  problems: string[];
}

export async function openPage(ctx: BrowserContext, origin: string): Promise<{ page: Page; watch: PageWatch }> {
  const page = await ctx.newPage();
  const watch: PageWatch = { problems: [] };
  page.on('pageerror', (e) => watch.problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) watch.problems.push(`CSP: ${m.text()}`);
  });
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith('blob:') && !u.startsWith('data:')) watch.problems.push(`request to another origin: ${u}`);
  });
  return { page, watch };
}

/** Full-page screenshots at desktop and phone width: test/artifacts/dashboard-<name>-{desktop,phone}.png. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const before = page.viewportSize() ?? DESKTOP;
  for (const [label, size] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
    await page.setViewportSize(size);
    await page.waitForTimeout(150); // let the chart's ResizeObserver redraw
    await page.screenshot({ path: join(ARTIFACTS, `dashboard-${name}-${label}.png`), fullPage: true });
  }
  await page.setViewportSize(before);
}
