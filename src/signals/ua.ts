// User-agent analysis for the pre-bid lookup: parse (ua-parser-js 1.x, MIT) behind an LRU
// cache, flag malformed UAs, declared bots/tools (isbot) and browser automation, and check
// the UA against the request's device type, app and IFA.
//
// Decisions (kept here, where the rules live):
// - `os` / `browser` are reporting dimensions: short lowercase family codes from a fixed
//   set (OS_FAMILIES, BROWSER_FAMILIES below), `'other'` for a family ua-parser knows but
//   we do not list, `'unknown'` when nothing was detected. A fixed set keeps rollup
//   cardinality bounded whatever callers send.
// - Declared bot vs malformed: HTTP libraries and CLI tools (curl, wget, python-requests,
//   Go-http-client, Java/, libwww-perl, Apache-HttpClient, axios, node-fetch, undici,
//   Postman, Scrapy...) honestly name themselves, so they are `declaredBot` (GIVT), not
//   malformed. Malformed is reserved for strings no real client sends (see MALFORMED_*).
// - App HTTP stacks (okhttp, Dalvik, CFNetwork, AppleCoreMedia, stagefright, ExoPlayer)
//   are what in-app SDKs and CTV players send: `appClient`, not bots (isbot lists
//   okhttp/ExoPlayer); uaConsistency flags them only when no `app` came with them.
// - Electron is not automation: Slack, Teams, Discord and other desktop apps are Electron.
// - The flags are independent: HeadlessChrome is both `automation` and (per isbot) `declaredBot`.

import UAParser from 'ua-parser-js';
import { isbot } from 'isbot';
import { LRUCache } from 'lru-cache';

export type UaDevice =
  | 'desktop'
  | 'mobile'
  | 'tablet'
  | 'smarttv'
  | 'console'
  | 'wearable'
  | 'embedded'
  | 'unknown';

export interface UaInfo {
  /** The string is not something a real client sends (reason in `malformedReason`). */
  malformed: boolean;
  /** '' or one of MALFORMED_REASONS. */
  malformedReason: string;
  /** Self-declared crawler, bot, HTTP library or CLI tool (isbot). */
  declaredBot: boolean;
  /** Headless browser or automation framework. */
  automation: boolean;
  /** '' or one of the AUTOMATION_REASONS values. */
  automationReason: string;
  /** In-app HTTP stack (okhttp, Dalvik, CFNetwork, ...): plausible only with an `app`. */
  appClient: boolean;
  /** OS family code (reporting dimension), e.g. 'windows', 'ios', 'roku', 'unknown'. */
  os: string;
  osVersion: string;
  /** Browser family code (reporting dimension), e.g. 'chrome', 'webview', 'bot', 'unknown'. */
  browser: string;
  browserVersion: string;
  device: UaDevice;
  /** Rendering engine, lowercase ('blink', 'webkit', 'gecko', ...) or 'unknown'. */
  engine: string;
  /** Android WebView (`; wv)`) or an iOS in-app WKWebView (Mobile/ without Safari/). */
  webview: boolean;
}

export const MALFORMED_REASONS = [
  'empty',
  'too_long',
  'control_char',
  'invalid_char',
  'placeholder',
  'too_short',
  'percent_encoded',
  'duplicated_token',
  'impossible_version',
  'unparseable',
] as const;
export type MalformedReason = (typeof MALFORMED_REASONS)[number];

export const UA_MIN_LENGTH = 10;
export const UA_MAX_LENGTH = 1024;
export const DEFAULT_UA_CACHE_SIZE = 50_000;

// Tokens that betray browser automation, first match wins. Runs on cache misses only.
const AUTOMATION_PATTERNS: ReadonlyArray<readonly [RegExp, string]> = [
  [/HeadlessChrome\//, 'headless_chrome'],
  [/HeadlessEdg\//, 'headless_edge'],
  [/PhantomJS/, 'phantomjs'],
  [/SlimerJS/, 'slimerjs'],
  [/selenium/i, 'selenium'],
  [/webdriver/i, 'webdriver'],
  [/puppeteer/i, 'puppeteer'],
  [/playwright/i, 'playwright'],
  [/Lighthouse/, 'lighthouse'],
  [/\bjsdom\//, 'jsdom'],
  [/HtmlUnit/, 'htmlunit'],
  [/Zombie\.js/, 'zombiejs'],
  [/\bCypress\//, 'cypress'],
  [/\bPTST\//, 'webpagetest'],
  [/GTmetrix/i, 'gtmetrix'],
  [/Nightmare/, 'nightmare'],
];
export const AUTOMATION_REASONS: readonly string[] = AUTOMATION_PATTERNS.map(([, r]) => r);

const APP_CLIENT = /^(?:okhttp\/|Dalvik\/|stagefright\/|AppleCoreMedia\/)|\bCFNetwork\/|\bExoPlayerLib\//i;

// Whole-string placeholders (compared lowercased and trimmed).
const PLACEHOLDERS: ReadonlySet<string> = new Set([
  '-', 'n/a', 'na', 'nil', 'none', 'null', 'undefined', 'unknown', 'empty', 'default', 'string',
  'test', 'ua', 'user-agent', 'user_agent', 'useragent', 'mozilla', 'mozilla/4.0', 'mozilla/5.0',
  'mozilla/4.0 (compatible)', 'mozilla/5.0 (compatible)', 'mozilla/5.0 (compatible;)',
  'mozilla/4.0 (compatible;)',
]);
// Unexpanded macros from ad tags and templating engines: ${ua}, {{ua}}, [UA], %%UA%%, __UA__.
const MACRO =
  /\$\{|\{\{|\}\}|%%|\[(?:ua|user_?agent|useragent|ua_string|device_ua)\]|\{(?:ua|user_?agent|useragent|ua_string|device_ua)\}|__(?:ua|user_?agent)__|\$(?:ua|user_?agent)\b|%(?:ua|user_?agent)%/i;

// Every real client sends exactly one `Mozilla/` product token; two means a UA was pasted
// into another (a concatenation bug upstream, or a careless fake).
const MOZILLA_TOKEN = /(?:^|[\s(;])Mozilla\//g;

// Windows NT tokens that exist (Windows 11 still sends "Windows NT 10.0").
const WINDOWS_NT_VERSIONS: ReadonlySet<string> = new Set([
  '4.0', '5.0', '5.01', '5.1', '5.2', '6.0', '6.1', '6.2', '6.3', '6.4', '10.0',
]);
const WINDOWS_NT = /Windows NT (\d+\.\d+)/;

// TV, stick and set-top tokens (case-sensitive: "AFT" must not match "After").
const CTV_MARKERS =
  /\b(?:Roku|Web0S|SMART-TV|SmartTV|AFT[A-Z]{1,6}|BRAVIA|Android ?TV|Apple ?TV|tvOS|CrKey|Chromecast|HbbTV|VIDAA|NETTV|SmartCast|VIERA|Viera|AQUOS|Google ?TV|SHIELD|Fire ?TV)\b/;

const OS_FAMILIES: Readonly<Record<string, string>> = {
  Windows: 'windows',
  'Mac OS': 'macos',
  iOS: 'ios',
  Android: 'android',
  'Android-x86': 'android',
  'Chromium OS': 'chromeos',
  'Chrome OS': 'chromeos',
  Linux: 'linux',
  Ubuntu: 'linux',
  Kubuntu: 'linux',
  Debian: 'linux',
  Fedora: 'linux',
  Arch: 'linux',
  Mint: 'linux',
  SUSE: 'linux',
  Gentoo: 'linux',
  CentOS: 'linux',
  RedHat: 'linux',
  'Red Hat': 'linux',
  Slackware: 'linux',
  Mandriva: 'linux',
  Manjaro: 'linux',
  Deepin: 'linux',
  'elementary OS': 'linux',
  linux: 'linux',
  Tizen: 'tizen',
  webOS: 'webos',
  Chromecast: 'chromecast',
  PlayStation: 'playstation',
  Xbox: 'xbox',
  Nintendo: 'nintendo',
  HarmonyOS: 'harmonyos',
};
const DESKTOP_OS: ReadonlySet<string> = new Set(['windows', 'macos', 'linux', 'chromeos']);

const BROWSER_FAMILIES: Readonly<Record<string, string>> = {
  Chrome: 'chrome',
  'Mobile Chrome': 'chrome',
  Chromium: 'chromium',
  'Chrome WebView': 'webview',
  'Chrome Headless': 'headless',
  Edge: 'edge',
  Firefox: 'firefox',
  'Mobile Firefox': 'firefox',
  Safari: 'safari',
  'Mobile Safari': 'safari',
  Opera: 'opera',
  'Opera Mini': 'opera',
  'Opera Mobi': 'opera',
  'Opera Touch': 'opera',
  'Opera GX': 'opera',
  'Samsung Internet': 'samsung',
  UCBrowser: 'ucbrowser',
  Yandex: 'yandex',
  IE: 'ie',
  IEMobile: 'ie',
  Silk: 'silk',
  'MIUI Browser': 'miui',
  Vivaldi: 'vivaldi',
  Brave: 'brave',
  DuckDuckGo: 'duckduckgo',
  Facebook: 'facebook',
  Instagram: 'instagram',
  Electron: 'electron',
  PhantomJS: 'phantomjs',
  WebKit: 'webkit',
};
/** Families that mean "a desktop web browser" for the app-vs-UA check. */
const DESKTOP_BROWSERS: ReadonlySet<string> = new Set([
  'chrome', 'chromium', 'edge', 'firefox', 'safari', 'opera', 'yandex', 'ie', 'vivaldi', 'brave',
]);
// ua-parser browser names whose version follows Chrome's numbering (Opera runs ~14 below,
// legacy EdgeHTML Edge 12-18).
const CHROME_NUMBERED: ReadonlySet<string> = new Set([
  'Chrome', 'Chromium', 'Chrome WebView', 'Chrome Headless', 'Edge', 'Opera',
]);

const DEVICE_TYPES: ReadonlySet<string> = new Set([
  'mobile', 'tablet', 'smarttv', 'console', 'wearable', 'embedded',
]);

const DAY_MS = 86_400_000;
const MAX_VERSION_LENGTH = 32;

/** Highest plausible major versions as of `now`, with margin for betas and nightlies. */
interface VersionCeilings {
  chrome: number;
  firefox: number;
  apple: number;
  android: number;
}

function versionCeilings(now: number): VersionCeilings {
  const year = new Date(now).getUTCFullYear();
  return {
    // Chrome 100 shipped 2022-03-29, Firefox 100 on 2022-05-03; both release every 4 weeks.
    chrome: 100 + Math.floor((now - Date.UTC(2022, 2, 29)) / (28 * DAY_MS)) + 8,
    firefox: 100 + Math.floor((now - Date.UTC(2022, 4, 3)) / (28 * DAY_MS)) + 8,
    // Safari and iOS are numbered after the following year since 2025 (Safari 26, iOS 26).
    apple: year - 1999 + 1,
    // Android 16 shipped in 2025, one major a year.
    android: year - 2009 + 2,
  };
}

function majorOf(version: string | undefined): number {
  if (!version) return NaN;
  return parseInt(version, 10);
}

function frozenInfo(partial: Partial<UaInfo>): UaInfo {
  return Object.freeze({
    malformed: false,
    malformedReason: '',
    declaredBot: false,
    automation: false,
    automationReason: '',
    appClient: false,
    os: 'unknown',
    osVersion: '',
    browser: 'unknown',
    browserVersion: '',
    device: 'unknown' as UaDevice,
    engine: 'unknown',
    webview: false,
    ...partial,
  });
}

// Shared answers for UAs that are not parsed or cached at all.
const EMPTY_INFO = frozenInfo({ malformed: true, malformedReason: 'empty' });
const TOO_LONG_INFO = frozenInfo({ malformed: true, malformedReason: 'too_long' });

function controlCharReason(ua: string): '' | 'control_char' | 'invalid_char' {
  for (let i = 0; i < ua.length; i++) {
    const c = ua.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || (c >= 0x80 && c <= 0x9f)) return 'control_char';
    // U+FFFD is what a broken percent- or UTF-8 decode leaves behind.
    if (c === 0xfffd) return 'invalid_char';
  }
  return '';
}

function countMozillaTokens(ua: string): number {
  MOZILLA_TOKEN.lastIndex = 0;
  let n = 0;
  while (MOZILLA_TOKEN.exec(ua) !== null) n++;
  return n;
}

function osFamily(name: string | undefined, vendor: string | undefined, model: string | undefined, type: string | undefined): string {
  if (vendor === 'Roku') return 'roku';
  if (model === 'Apple TV') return 'tvos';
  if (vendor === 'Amazon' && type === 'smarttv') return 'fireos';
  if (!name) return 'unknown';
  return OS_FAMILIES[name] ?? 'other';
}

function clipVersion(v: string | undefined): string {
  if (!v) return '';
  return v.length > MAX_VERSION_LENGTH ? v.slice(0, MAX_VERSION_LENGTH) : v;
}

export interface UaAnalyzerOptions {
  /** LRU entries keyed by UA string (default 50 000; each entry ≤ 1 KB of key). */
  cacheSize?: number;
  /** Clock for the version ceilings (tests); default Date.now() at construction. */
  now?: number;
}

export class UaAnalyzer {
  private readonly cache: LRUCache<string, UaInfo>;
  private readonly parser = new UAParser();
  private readonly ceilings: VersionCeilings;

  constructor(opts: UaAnalyzerOptions = {}) {
    this.cache = new LRUCache<string, UaInfo>({ max: Math.max(1, opts.cacheSize ?? DEFAULT_UA_CACHE_SIZE) });
    this.ceilings = versionCeilings(opts.now ?? Date.now());
  }

  /** Entries currently cached. */
  get cached(): number {
    return this.cache.size;
  }

  /** Hot path: a cache hit is one map lookup; the returned object is frozen and shared. */
  analyze(ua: string): UaInfo {
    if (ua.length === 0) return EMPTY_INFO;
    // Not parsed, not cached: a flood of distinct long strings must not evict real UAs.
    if (ua.length > UA_MAX_LENGTH) return TOO_LONG_INFO;
    const hit = this.cache.get(ua);
    if (hit !== undefined) return hit;
    // Copy before keeping: a slice of the request's query string would pin the whole query.
    const key = (' ' + ua).slice(1);
    const info = this.compute(key);
    this.cache.set(key, info);
    return info;
  }

  private compute(ua: string): UaInfo {
    const p = this.parser.setUA(ua);
    const browser = p.getBrowser();
    const os = p.getOS();
    const engine = p.getEngine();
    const device = p.getDevice();

    const appClient = APP_CLIENT.test(ua);
    const declaredBot = !appClient && isbot(ua);

    let automationReason = '';
    for (const [re, reason] of AUTOMATION_PATTERNS) {
      if (re.test(ua)) {
        automationReason = reason;
        break;
      }
    }
    const automation = automationReason !== '';

    const osName = osFamily(os.name, device.vendor, device.model, device.type);
    let deviceType: UaDevice = device.type && DEVICE_TYPES.has(device.type) ? (device.type as UaDevice) : 'unknown';
    if (deviceType === 'unknown' && DESKTOP_OS.has(osName)) deviceType = 'desktop';
    // ua-parser calls some sticks and TVs phones or tablets ("Android 10; Chromecast", VIDAA).
    if ((deviceType === 'mobile' || deviceType === 'tablet' || deviceType === 'unknown') && CTV_MARKERS.test(ua)) {
      deviceType = 'smarttv';
    }

    const webview =
      /; wv\)/.test(ua) ||
      browser.name === 'Chrome WebView' ||
      (osName === 'ios' && ua.includes('Mobile/') && !ua.includes('Safari/'));

    let browserFamily = browser.name ? (BROWSER_FAMILIES[browser.name] ?? 'other') : 'unknown';
    if (webview && (browserFamily === 'webkit' || browserFamily === 'unknown')) browserFamily = 'webview';
    if (declaredBot && !automation) browserFamily = 'bot';
    else if (appClient && browserFamily === 'unknown') browserFamily = 'app';

    let osVersion = clipVersion(os.version);
    if (osName === 'roku' && osVersion === '') {
      const m = /Roku\/DVP-(\d+(?:\.\d+)*)/.exec(ua);
      if (m?.[1]) osVersion = m[1];
    }

    const malformedReason = this.malformedReason(ua, browser, os, engine, device, declaredBot, browserFamily, osName);

    return frozenInfo({
      malformed: malformedReason !== '',
      malformedReason,
      declaredBot,
      automation,
      automationReason,
      appClient,
      os: osName,
      osVersion,
      browser: browserFamily,
      browserVersion: clipVersion(browser.version),
      device: deviceType,
      engine: engine.name ? engine.name.toLowerCase() : 'unknown',
      webview,
    });
  }

  // First matching rule wins; the order runs from cheapest and most certain to most inferred.
  private malformedReason(
    ua: string,
    browser: UAParser.IBrowser,
    os: UAParser.IOS,
    engine: UAParser.IEngine,
    device: UAParser.IDevice,
    declaredBot: boolean,
    browserFamily: string,
    osName: string,
  ): MalformedReason | '' {
    const ctrl = controlCharReason(ua);
    if (ctrl !== '') return ctrl;
    const trimmed = ua.trim();
    if (trimmed.length === 0) return 'empty';
    if (trimmed.length <= 32 && PLACEHOLDERS.has(trimmed.toLowerCase())) return 'placeholder';
    if (MACRO.test(ua)) return 'placeholder';
    if (trimmed.length < UA_MIN_LENGTH) return 'too_short';
    // Encoded twice by the caller: real UAs have spaces (CFNetwork's "My%20App/1 CFNetwork/..." does too).
    if (!ua.includes(' ') && /%(?:20|2F|28|3B)/i.test(ua)) return 'percent_encoded';
    if (countMozillaTokens(ua) > 1) return 'duplicated_token';
    if (this.impossibleVersion(ua, browser, os, engine, browserFamily, osName)) return 'impossible_version';
    if (
      ua.startsWith('Mozilla/') &&
      !declaredBot &&
      !browser.name &&
      !os.name &&
      !engine.name &&
      !device.type
    ) {
      return 'unparseable';
    }
    return '';
  }

  private impossibleVersion(
    ua: string,
    browser: UAParser.IBrowser,
    os: UAParser.IOS,
    engine: UAParser.IEngine,
    browserFamily: string,
    osName: string,
  ): boolean {
    const c = this.ceilings;
    const major = majorOf(browser.version);
    if (browserFamily === 'firefox' && major > c.firefox) return true;
    if (browserFamily === 'safari' && major > c.apple) return true;
    if (browser.name !== undefined && CHROME_NUMBERED.has(browser.name) && major > c.chrome) return true;
    // Blink's version is the Chrome version, whatever brand sits on top.
    if (engine.name === 'Blink' && majorOf(engine.version) > c.chrome) return true;
    const osMajor = majorOf(os.version);
    if (osName === 'ios' && osMajor > c.apple) return true;
    if (osName === 'android' && osMajor > c.android) return true;
    if (osName === 'windows') {
      const m = WINDOWS_NT.exec(ua);
      if (m?.[1] && !WINDOWS_NT_VERSIONS.has(m[1])) return true;
    }
    return false;
  }
}

// ---- consistency with the other request signals ----------------------------------------

export interface UaConsistency {
  consistent: boolean;
  /** '' when consistent, else a stable code such as 'dvt2_mobile_ua' or 'ifa_on_desktop'. */
  reason: string;
}

const CONSISTENT: UaConsistency = Object.freeze({ consistent: true, reason: '' });
const INCONSISTENT = new Map<string, UaConsistency>();
function inconsistent(reason: string): UaConsistency {
  let r = INCONSISTENT.get(reason);
  if (r === undefined) {
    r = Object.freeze({ consistent: false, reason });
    INCONSISTENT.set(reason, r);
  }
  return r;
}

// Device classes the UA may not show for each dvt (spec 2.4). Conservative on purpose:
// - tablets (1, 5) may send desktop UAs (iPadOS Safari says Macintosh, Android tablets
//   default to desktop mode, Surface is Windows), so desktop is allowed there;
// - phones (4) in "request desktop site" mode say Macintosh (iPhone) or X11 Linux
//   (Android), so only Windows/ChromeOS desktops are refused;
// - CTV-like dvt (3, 6, 7): only a plain Windows/macOS/ChromeOS desktop is refused; TV
//   UAs vary too much (generic X11 Linux on some TVs, phone-like WebViews on sticks);
// - DOOH (8) players run anything.
function deviceMismatch(dvt: number, info: UaInfo): boolean {
  const d = info.device;
  switch (dvt) {
    case 2:
      return d === 'mobile' || d === 'tablet' || d === 'smarttv' || d === 'console' || d === 'wearable';
    case 1:
    case 5:
      return d === 'smarttv' || d === 'console';
    case 4:
      return d === 'smarttv' || d === 'console' || (d === 'desktop' && (info.os === 'windows' || info.os === 'chromeos'));
    case 3:
    case 6:
    case 7:
      return d === 'desktop' && (info.os === 'windows' || info.os === 'macos' || info.os === 'chromeos');
    default:
      return false;
  }
}

/**
 * Is the UA plausible for this device type, app and IFA? Unknown devices and unknown
 * dvt values are consistent (validation of dvt itself happens elsewhere).
 */
export function uaConsistency(
  info: UaInfo,
  dvt: number,
  app: string | undefined,
  ifa: string | undefined,
): UaConsistency {
  if (deviceMismatch(dvt, info)) return inconsistent(`dvt${dvt}_${info.device}_ua`);
  if (info.appClient && !app) return inconsistent('app_client_without_app');
  if (info.device === 'desktop') {
    // Desktops have no advertising ID; a desktop web browser is not an app.
    if (ifa) return inconsistent('ifa_on_desktop');
    if (app && !info.webview && DESKTOP_BROWSERS.has(info.browser)) return inconsistent('app_on_desktop_browser');
  }
  return CONSISTENT;
}
