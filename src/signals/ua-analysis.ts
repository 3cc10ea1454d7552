// User-agent analysis: parse (ua-parser-js 1.x, MIT), flag malformed UAs, declared
// bots/tools (isbot) and browser automation. Split in two so results can be shared:
// `examine` gives the traits that depend only on the string (what the shared UA cache in
// ua-cache.ts keeps), `judge` adds what depends on the clock (the "impossible version"
// ceilings move every four weeks), evaluated per lookup. The UA against the request's
// device type, app and IFA is device-consistency.ts.
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
import { DAY_MS } from '../base/time.ts';

export type UaDevice =
  | 'desktop'
  | 'mobile'
  | 'tablet'
  | 'smarttv'
  | 'console'
  | 'wearable'
  | 'embedded'
  | 'unknown';

/**
 * The UA as analyze() gives it (the explain tool, tests): the hot path's verdict, derived
 * from UaVerdict rather than copied, plus the versions and engine read for display.
 */
export interface UaInfo extends Pick<UaVerdict, 'malformed' | 'malformedReason' | 'declaredBot' | 'automation' | 'automationReason' | 'appClient' | 'os' | 'browser' | 'device' | 'webview'> {
  osVersion: string;
  browserVersion: string;
  /** Rendering engine, lowercase ('blink', 'webkit', 'gecko', ...) or 'unknown'. */
  engine: string;
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

// Tokens of real devices and apps that isbot's generic rules also match: Google TV devices
// (ASUS's Cube too) and Google's Android apps ("google"); TV and set-top platforms whose product tokens look
// like a bot's `name/1.0;` (HbbTV Opera builds' `ce-html/1.0`, Philips' `NETTV/1.0`,
// Freesat boxes); the OMI build tag of Hisense VIDAA's browser (`OMI/4.21.4.112.Catcher4.69`:
// "catch"); the whole-string UAs of Fire TV apps (`Amazon;AFTMM;<hex>;;tpapi;<version>`,
// `smarttv_AFTKA_Build_<n>_Chromium_<version>`: no spaces) and of Roku's OS
// (`RokuOS/<version>|Roku <model>|STB|…`, `RokuOS/<version>, <app>/<version>, Roku`).
// Such a UA is a declared bot only if isbot still says so without those tokens (a UA that
// is nothing but such a token is not one).
const BOT_FALSE_FRIENDS =
  /google ?tv|google_cube|com\.google\.android\.[\w.]+|\bce-html\/[\d.]+|\bNETTV\/[\d.]+|\bfreesat\/[\d.]+|\bOMI\/[\w.]+|^Amazon;AFT[A-Z0-9]{1,10};[0-9a-f]{16,40};;tpapi(?:;[\d.]+)?$|^smarttv_AFT[A-Z0-9]{1,10}_Build_\d+_Chromium_[\d.]+$|^RokuOS\/[\d.]+(?:\|[^|]*)+$|^RokuOS\/[\d.]+,|, Roku$/i;
const BOT_FALSE_FRIENDS_ALL = new RegExp(BOT_FALSE_FRIENDS.source, 'gi');

/** isbot, with the tokens of real devices and apps it mistakes for bots judged out (BOT_FALSE_FRIENDS). */
function declaredBotUa(ua: string): boolean {
  if (!isbot(ua)) return false;
  if (!BOT_FALSE_FRIENDS.test(ua)) return true;
  const rest = ua.replace(BOT_FALSE_FRIENDS_ALL, ' ');
  return rest.trim() !== '' && isbot(rest);
}

const APP_CLIENT = /^(?:okhttp\/|Dalvik\/|stagefright\/|AppleCoreMedia\/)|\bCFNetwork\/|\bExoPlayerLib\//i;

// Whole-string placeholders (compared lowercased and trimmed).
const PLACEHOLDERS: ReadonlySet<string> = new Set([
  '-', 'n/a', 'na', 'nil', 'none', 'null', 'undefined', 'unknown', 'empty', 'default', 'string',
  'test', 'ua', 'user-agent', 'user_agent', 'useragent', 'mozilla', 'mozilla/4.0', 'mozilla/5.0',
  'mozilla/4.0 (compatible)', 'mozilla/5.0 (compatible)', 'mozilla/5.0 (compatible;)',
  'mozilla/4.0 (compatible;)',
  // Test fixtures and bare device names that integrations send in place of the UA.
  'test-user-agent', 'test_user_agent', 'testuseragent', 'test user agent', 'test-ua', 'test_ua', 'testua',
  'ipad', 'iphone', 'ipod', 'android', 'mac', 'windows', 'linux', 'desktop', 'mobile', 'tablet', 'tv', 'ctv',
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

// Internet Explorer as it shipped. MSIE tokens: Windows 1.0-5.01, 5.5, 6.0-10.0 (IE 11 sends
// "rv:11.0"; IE-based shells add "MSIE 11.0" beside Trident/7.0); Mac 4.5, 5.0, 5.1x and 5.2x
// (IE for Mac ended at 5.2.3, on PowerPC). Trident/N is IE N+4 (4.0 = IE 8 ... 7.0 = IE 11,
// 8.0 in Windows 10 previews; 3.1 = IE Mobile 7: majors 3 to 8); compatibility view and
// IE-based shells send a lower MSIE beside the real Trident, never a higher one. Other
// browsers that borrow the token (Amiga's AWeb says "MSIE 7.01") name no Windows: left alone.
const MSIE_VERSIONS: ReadonlySet<string> = new Set([
  '1.0', '1.5', '2.0', '3.0', '3.01', '3.02', '4.0', '4.01', '4.5', '5.0', '5.01', '5.05', '5.12', '5.13', '5.14',
  '5.15', '5.16', '5.17', '5.2', '5.21', '5.22', '5.23', '5.5', '6.0', '7.0', '8.0', '9.0', '10.0', '11.0',
]);
const MSIE_MAC_ONLY = /^(?:4\.5|5\.1\d|5\.2\d?)$/;
const MSIE = /\bMSIE (\d+\.\d+)/;
// Majors only: the UA cache shares one examination between UAs whose slash versions differ
// after the major (ua-cache.ts).
const TRIDENT = /\bTrident\/(\d+)\./;
const MAC = /Macintosh|Mac_P|Mac OS X/;

/** The UA names an Internet Explorer (version, engine, platform) that never shipped. */
function ieNeverShipped(ua: string): boolean {
  const tridentToken = TRIDENT.exec(ua)?.[1];
  const trident = tridentToken === undefined ? NaN : parseInt(tridentToken, 10);
  if (trident < 3 || trident > 8) return true;
  const msie = MSIE.exec(ua)?.[1];
  if (msie === undefined) return false;
  const windows = ua.includes('Windows');
  if (!MSIE_VERSIONS.has(msie)) return windows;
  const major = parseInt(msie, 10);
  if (major > trident + 4) return true;
  if (major === 11 && Number.isNaN(trident)) return true;
  if (MAC.test(ua)) return major >= 6 || msie === '5.01' || msie === '5.5';
  return windows && MSIE_MAC_ONLY.test(msie);
}

// The device tokens a UA can carry, collected in one pass (DEVICE_TOKENS, global): each
// alternative is a capturing group whose index is its kind. Case-sensitive ("AFT" must not
// match "After", "Mobile" not "mobile" in app names).
const TOKEN_MOBILE = 1;
/** A TV, stick or set-top platform that never named a phone: a TV even when it says Mobile (Android TV WebViews do). */
const TOKEN_TV = 2;
/** A platform that had TVs and phones or watches (Tizen, webOS, AQUOS...): a TV only without Mobile. */
const TOKEN_TV_UNLESS_MOBILE = 4;
const TOKEN_CONSOLE = 8;
/** A desktop OS or windowing system, or a Mac (Office for Mac, CFNetwork on x86): for UAs ua-parser places nowhere. */
const TOKEN_DESKTOP = 16;
const DEVICE_TOKENS = new RegExp(
  [
    /(\bMobile\b)/.source,
    // Android TV builds are released as <letter>TT<n> (PTT1, RTT0, STTC...); TV and box
    // vendors also cut them to two letters (Build/QT, Build/RT); "wv-atv" is an Android TV WebView.
    // Set-top and TV browser tokens: Vestel's `SmartTvA/` and `VSTVB`, TiVo OS, Whale TV,
    // Hisense's `HiSmartTV`, Sony's `InettvBrowser`, Panasonic's recorders (`DIGAPlus`), a
    // cable box's `_STB_` / ` STB`, Fire TV's models with digits (AFTSO001), its apps'
    // `smarttv_AFT…` and its Vega OS (`Kepler/`).
    /(\b(?:Roku|Web0S|webOS\.TV|NetCast|SMART-TV|SMART ?TV|Smart ?TV|SmartTV|SmartTvA|Opera TV|HbbTV|hbbtv|AFT[A-Z]{1,6}\d{0,4}|BRAVIA|Android ?TV|Google ?TV|Apple ?TV|AppleTV|tvOS|CrKey|Chromecast|VIDAA|NETTV|SmartCast|SHIELD|Fire ?TV|stbapp|wv-atv|VSTVB\w*|TiVo(?:OS)?|WhaleTV|HiSmartTV|InettvBrowser|DIGAPlus|Kepler\/[\d.]+)\b|[_ ]STB(?:_|\b)|_TV_|^smarttv_AFT|Build\/[A-Z]TT[A-Z\d]|Build\/[PQRSTU][TI][;)])/.source,
    /(\b(?:Tizen|[Ww]eb[O0]S|DTV|AQUOS|VIERA|Viera)\b|; ?TV[;)])/.source,
    // Consoles, including Android handhelds that ua-parser calls phones.
    /(Play[Ss]tation|PLAYSTATION|Xbox|XBOX|Nintendo|Switch Lite|Retroid|\bRG\d{3}|RGCUBE|Razer Edge|AYANEO|Steam ?Deck)/.source,
    /(\b(?:Macintosh|Mac OS(?: X|\/)|MacBook\w*|iMac\d*|Macmini|MacPro|X11|Windows NT|Win64|WOW64|Windows (?:9[58]|ME|XP|2000)|FreeBSD|OpenBSD|NetBSD|SunOS|HP-UX)\b|\(Desktop;|Darwin\/[\d.]+ \((?:x86_64|i386)\))/.source,
  ].join('|'),
  'g',
);

/** The TOKEN_* bits of the device tokens `ua` carries (one scan). */
function deviceTokens(ua: string): number {
  DEVICE_TOKENS.lastIndex = 0;
  let bits = 0;
  let m: RegExpExecArray | null;
  while ((m = DEVICE_TOKENS.exec(ua)) !== null) {
    bits |= m[1] !== undefined ? TOKEN_MOBILE : m[2] !== undefined ? TOKEN_TV : m[3] !== undefined ? TOKEN_TV_UNLESS_MOBILE : m[4] !== undefined ? TOKEN_CONSOLE : TOKEN_DESKTOP;
  }
  return bits;
}

// An Android UA from a PC: Chromebook/Pixelbook, a ChromeOS build, an x86_64 CPU.
const ANDROID_PC = /Chromebook|Pixelbook|Build\/R\d{2,3}-\d|; x86_64;/;
// The model an Android UA names ("Android 14; <model> Build/..." or "...; <model>)").
const ANDROID_MODEL = /Android [\d.]+;(?: [a-z]{2}[-_][a-zA-Z]{2};)? ([^;)]+?)(?: Build\/|[;)])/;
// TV and box model names: a screen size in inches before the series letters and number
// (32LH1..., -55U1..., H32F8..., 43GUS6...), a UHD series (..65UF...); LED, TV, 4K, UHD;
// stick, box, STB, OTT, IPTV, DVB, stream; the SoCs and families of no-name Android boxes
// (Amlogic S905, Rockchip RK33xx, Allwinner H313/H616/H618; MXQ, X96, T95, H96, A95X,
// M8S...). Android TVs' WebViews often say Mobile, so the model decides.
const TV_MODEL =
  /(?:^|[-_ ]|\b[A-Z])(?:24|28|32|39|40|42|43|48|49|50|55|58|65|70|75|85|98)[A-Z]{1,4}\d|[A-Z](?:43|50|55|58|65|75)U[A-Z]|LED|TV|\b4K\b|UHD|(?:[Ss]tick|STICK|[Bb]ox|BOX)\b|\b(?:STB|OTT|IPTV|DVB|[Ss]tream|STREAM)|Amlogic|Allwinner|\b(?:S905|RK33\d\d|H31[36]|H61[68])|\b(?:MXQ|X96|T95|H96|A95X|M8S|MECOOL|Tanix|UGOOS|Formuler|Zidoo)/;
// ua-parser names a vendor for a phone from a maker's name alone for these: Huawei's TVs and
// screens carry the same "Build/HUAWEI..." as its phones, so for them the model code decides.
const VENDOR_NOT_PHONE: ReadonlySet<string> = new Set(['Generic', 'Huawei']);
// A phone named by its maker's model naming or by a phone-only app or browser (for WebViews,
// which say Mobile on every Android device): Samsung Galaxy phones SM-A/E/F/G/J/M/N/S/W + 3
// digits (SM-T/P/X are tablets); Pixel N; Xiaomi's Redmi, POCO, Mi N and model numbers
// (M2xxxKxxG, yymmxxxxG); OPPO CPH + 4 digits, realme RMX + 4, OnePlus KB/IN/HD/GM/LE/NE + 4;
// vivo V + 4 digits, iQOO I + 4; Huawei/Honor "ABC-LX1"/"ABC-AN00"; Motorola moto, XT + 4;
// Transsion's TECNO, Infinix, itel; Nokia; LG LM-X123; Sony Xperia XQ-AB12; ASUS_; Blackview
// BV + 4. Apps and browsers made for phones: Facebook (FB_IAB/FB4A/FBAN), Instagram, Threads
// (Barcelona), X (TwitterAndroid), Baidu (baiduboxapp), WeChat (MicroMessenger), QQ's browser,
// KakaoTalk, the phone makers' own browsers, Opera for Android (OPR/ without the OMI/ of
// Opera's TV SDK). Japanese carriers' model codes: docomo <maker>-<nn><year letter> (SO-51A,
// F-05J), SoftBank and Y!mobile <nnn><maker> (901SH, A204SO), au <maker>[VG]<nn> (SOV41,
// SCG01); carriers sell phones and tablets under them, their TV boxes are named otherwise.
const PHONE_NAMED =
  /\b[A-Z]{1,2}-(?:0[1-9]|[45]\d)[A-Z]\b|\b(?:A[0-4]|[1-9])0\d(?:SH|SO|KC|ZT|HW|OP|XM|SC|FC|LE|ZS)\b|\b(?:SO|SC|SH|KY|LG|HW|ZT|OP|XI|FC)[VG]\d{2}\b|\bOPR\/(?!.*\bOMI\/)|\bSM-[AEFGJMNSW]\d{3}|\bPixel \d|\b(?:Redmi|POCO|Xiaomi|M[Ii] \d)|\bM2\d{3}[A-Z]\d|\b2[0-4]\d{5,6}[A-Z]{1,3}\b|\b(?:CPH|RMX|KB|IN|HD|GM|LE|NE)\d{4}\b|\b[VI]2\d{3}[A-Z]{0,2}\b|\b[A-Z]{3,4}-(?:AL|AN|LX|TL|NX|BD|DL|L|N)\d|\b(?:moto|motorola)\b|\bXT\d{4}|\b(?:TECNO|Infinix|itel|Nokia)\b|\bLM-[A-Z]\d{3}|\bXQ-[A-Z]{2}\d{2}|\bASUS_|\bBV\d{4}|FB_IAB|FB4A|FBAN|Instagram|Barcelona|TwitterAndroid|baiduboxapp|MicroMessenger|MQQBrowser|KAKAOTALK|VivoBrowser|HeyTapBrowser|MiuiBrowser|SamsungBrowser/;
// Browsers made for phones that send their own platform token (UC Browser's "UCWEB/2.0
// (MIDP-2.0; U; Adr 5.0; ...)", Opera Mini's J2ME and proxy forms): a phone's when they say
// Mobile, whatever OS ua-parser reads ("Linux", none).
const PHONE_BROWSER = /^UCWEB\/|\bOpera Mini\/|\bOpera Mobi\b/;
// Yandex's apps and browser for large screens mark their build `/apad` ("YaApp_Android/24.12/apad",
// "YaSearchBrowser/24.12/apad") and say Mobile like the phone build: tablets, TVs, boxes,
// consoles and foldables run it, so its Mobile names no phone (the model still may).
const LARGE_SCREEN_BUILD = /\bYa\w+\/[\d.]+\/apad\b/;
const OS_FAMILIES: Readonly<Record<string, string>> = {
  Windows: 'windows',
  'Mac OS': 'macos',
  iOS: 'ios',
  Android: 'android',
  'Android-x86': 'android',
  android: 'android', // ua-parser's name for "(Linux; U; Android 14; ...)" in apps' own UAs
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
// ua-parser browser names whose version follows Chrome's numbering (Opera runs ~14 below,
// legacy EdgeHTML Edge 12-18).
const CHROME_NUMBERED: ReadonlySet<string> = new Set([
  'Chrome', 'Chromium', 'Chrome WebView', 'Chrome Headless', 'Edge', 'Opera',
]);

const DEVICE_TYPES: ReadonlySet<string> = new Set([
  'mobile', 'tablet', 'smarttv', 'console', 'wearable', 'embedded',
]);

const MAX_VERSION_LENGTH = 32;

/** Every `os` code the analysis can produce (the shared cache stores the index). */
export const OS_CODES: readonly string[] = [...new Set(['unknown', 'other', 'roku', 'tvos', 'fireos', ...Object.values(OS_FAMILIES)])];
/** Every `browser` code the analysis can produce. */
export const BROWSER_CODES: readonly string[] = [...new Set(['unknown', 'other', 'webview', 'bot', 'app', ...Object.values(BROWSER_FAMILIES)])];
/** Every device class, in a fixed order. */
export const DEVICE_CODES: readonly UaDevice[] = ['unknown', 'desktop', 'mobile', 'tablet', 'smarttv', 'console', 'wearable', 'embedded'];

/**
 * What the analysis learns from the string alone: the same for every lookup with this UA,
 * so it can be cached and shared. Versions are kept as majors (NaN when absent).
 */
export interface UaTraits {
  /** The first malformed rule that fires before the version check, or ''. */
  preReason: MalformedReason | '';
  /** The last rule (a Mozilla/ string nothing could be read from) fires. */
  unparseable: boolean;
  /** The UA names a Windows NT or an Internet Explorer (ieNeverShipped) that never shipped. */
  neverShipped: boolean;
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
  /** Browser family code (reporting dimension), e.g. 'chrome', 'webview', 'bot', 'unknown'. */
  browser: string;
  device: UaDevice;
  /** Android WebView (`; wv)`) or an iOS in-app WKWebView (Mobile/ without Safari/). */
  webview: boolean;
  browserMajor: number;
  /** Blink engine major (it is the Chrome version whatever brand sits on top), else NaN. */
  blinkMajor: number;
  osMajor: number;
  /** The browser's version follows Chrome's numbering (Chrome, Edge, Opera, WebView...). */
  chromeNumbered: boolean;
}

/** Traits plus the verdict at the lookup's time: what the hot path reads. */
export interface UaVerdict extends UaTraits {
  /** The string is not something a real client sends (reason in `malformedReason`). */
  malformed: boolean;
  /** '' or one of MALFORMED_REASONS. */
  malformedReason: MalformedReason | '';
}

export function emptyVerdict(): UaVerdict {
  return {
    preReason: '', unparseable: false, neverShipped: false, declaredBot: false, automation: false,
    automationReason: '', appClient: false, os: 'unknown', browser: 'unknown', device: 'unknown',
    webview: false, browserMajor: NaN, blinkMajor: NaN, osMajor: NaN, chromeNumbered: false,
    malformed: false, malformedReason: '',
  };
}

/** Highest plausible major versions as of a day, with margin for betas and nightlies. */
export interface VersionCeilings {
  chrome: number;
  firefox: number;
  apple: number;
  android: number;
}

export function versionCeilings(now: number): VersionCeilings {
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

/**
 * The earliest time the ceilings may be computed for (ms since the epoch; 0: none): when this
 * build was made, or the newest embedded data, whichever is later. A clock running behind
 * would otherwise lower the ceilings below versions that already shipped, and call current
 * browsers impossible. Set once per thread at start (src/prebid/worker.ts, src/server/clock.ts).
 */
let versionFloorMs = 0;

export function setVersionFloor(ms: number): void {
  versionFloorMs = Number.isFinite(ms) && ms > 0 ? ms : 0;
}

/** Ceilings memoised per UTC day (one per thread): computed from the lookup's own clock, never below the floor. */
export class VersionClock {
  private day = NaN;
  private value: VersionCeilings = versionCeilings(0);
  at(lookupNow: number): VersionCeilings {
    const now = lookupNow < versionFloorMs ? versionFloorMs : lookupNow;
    const day = Math.floor(now / DAY_MS);
    if (day !== this.day) {
      this.day = day;
      this.value = versionCeilings(now);
    }
    return this.value;
  }
}

function impossibleVersion(t: UaTraits, c: VersionCeilings): boolean {
  if (t.neverShipped) return true;
  const major = t.browserMajor;
  if (t.browser === 'firefox' && major > c.firefox) return true;
  if (t.browser === 'safari' && major > c.apple) return true;
  if (t.chromeNumbered && major > c.chrome) return true;
  if (t.blinkMajor > c.chrome) return true;
  if (t.os === 'ios' && t.osMajor > c.apple) return true;
  if (t.os === 'android' && t.osMajor > c.android) return true;
  return false;
}

/**
 * The clock-dependent part: fills malformed/malformedReason of `v` from its traits and the
 * ceilings of the lookup's day. The rules keep their order: the string rules, then the
 * impossible version, then "unparseable".
 */
export function judge(v: UaVerdict, c: VersionCeilings): UaVerdict {
  v.malformedReason = v.preReason !== '' ? v.preReason : impossibleVersion(v, c) ? 'impossible_version' : v.unparseable ? 'unparseable' : '';
  v.malformed = v.malformedReason !== '';
  return v;
}

function majorOf(version: string | undefined): number {
  if (!version) return NaN;
  const n = parseInt(version, 10);
  return Number.isNaN(n) ? NaN : Math.min(n, 65534);
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

/** Verdicts for strings never parsed: empty and over UA_MAX_LENGTH. */
export function unparsedVerdict(ua: string, out: UaVerdict): UaVerdict | null {
  if (ua.length !== 0 && ua.length <= UA_MAX_LENGTH) return null;
  Object.assign(out, emptyVerdict());
  out.preReason = ua.length === 0 ? 'empty' : 'too_long';
  out.malformedReason = out.preReason;
  out.malformed = true;
  return out;
}

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

// The string rules that run before the version check; first match wins, cheapest and most
// certain first.
function preReasonOf(ua: string): MalformedReason | '' {
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
  return '';
}

export interface UaAnalyzerOptions {
  /** A fixed clock for the version ceilings (tests); default Date.now() at each analysis. */
  now?: number;
}

export class UaAnalyzer {
  private readonly parser = new UAParser();
  private readonly clock: () => number;
  private readonly ceilings = new VersionClock();
  /** Parse details of the last inspect() beyond the traits (versions, engine). */
  private browserVersion = '';
  private osVersion = '';
  private engine = 'unknown';

  constructor(opts: UaAnalyzerOptions = {}) {
    const fixed = opts.now;
    this.clock = fixed === undefined ? Date.now : () => fixed;
  }

  /** Ceilings for a lookup at `now`. */
  ceilingsAt(now: number): VersionCeilings {
    return this.ceilings.at(now);
  }

  /**
   * The clock-independent traits of `ua` (1 to UA_MAX_LENGTH characters) into `out`: one
   * ua-parser pass, isbot and the automation patterns. The costly part of a UA; the shared
   * cache runs it once per distinct (version-normalised) UA.
   */
  examine(ua: string, out: UaTraits): UaTraits {
    const p = this.parser.setUA(ua);
    const browser = p.getBrowser();
    const os = p.getOS();
    const engine = p.getEngine();
    const device = p.getDevice();

    const appClient = APP_CLIENT.test(ua);
    // isbot's generic rules also hit some real devices and apps (BOT_FALSE_FRIENDS): such
    // a UA is judged again without those tokens.
    // A placeholder (`test-user-agent`, a bare `iPad`) is malformed, not a crawler: isbot
    // calls strings without a browser in them bots.
    const declaredBot = !appClient && !PLACEHOLDERS.has(ua.trim().toLowerCase()) && declaredBotUa(ua);

    let automationReason = '';
    for (const [re, reason] of AUTOMATION_PATTERNS) {
      if (re.test(ua)) {
        automationReason = reason;
        break;
      }
    }

    const osName = osFamily(os.name, device.vendor, device.model, device.type);
    let osVersion = clipVersion(os.version);
    if (osName === 'roku' && osVersion === '') {
      const m = /Roku\/DVP-(\d+(?:\.\d+)*)/.exec(ua);
      if (m?.[1]) osVersion = m[1];
    }
    const osMajor = majorOf(osVersion);
    let deviceType: UaDevice = device.type && DEVICE_TYPES.has(device.type) ? (device.type as UaDevice) : 'unknown';
    if (deviceType === 'unknown' && DESKTOP_OS.has(osName)) deviceType = 'desktop';
    // The device the UA names decides (docs/scoring.md, "Device consistency"), from one
    // scan of its device tokens: a console; a TV, stick or box platform (a TV even when it
    // says Mobile: Android TV WebViews do); a desktop OS for UAs ua-parser places nowhere
    // (old or rare desktops, Mac apps); a platform that also had phones only without Mobile;
    // else for Android the model (screen-size series, box names), then `Mobile`: Android
    // phones' browsers and WebViews always say it, so a complete Android browser UA without
    // it (it ends in Safari/) names a tablet, TV or box. ua-parser alone calls some sticks
    // and TVs phones ("Android 10; Chromecast", VIDAA) and some phones tablets.
    const webview =
      /; wv\)/.test(ua) ||
      browser.name === 'Chrome WebView' ||
      (osName === 'ios' && ua.includes('Mobile/') && !ua.includes('Safari/'));
    const tokens = deviceTokens(ua);
    if (tokens & TOKEN_CONSOLE) deviceType = 'console';
    else if (tokens & TOKEN_TV) deviceType = 'smarttv';
    else if (tokens & TOKEN_MOBILE && PHONE_BROWSER.test(ua)) deviceType = 'mobile';
    else if (deviceType === 'unknown' && tokens & TOKEN_DESKTOP && !(tokens & TOKEN_MOBILE)) deviceType = 'desktop';
    else if (deviceType !== 'console' && deviceType !== 'smarttv') {
      const mobileToken = (tokens & TOKEN_MOBILE) !== 0;
      if (!mobileToken && tokens & TOKEN_TV_UNLESS_MOBILE) deviceType = 'smarttv';
      // Android apps on a Chromebook or another x86 PC: a ChromeOS build (R<milestone>-...),
      // the machine's name, an x86_64 CPU (phones and TV boxes are ARM).
      else if (osName === 'android' && ANDROID_PC.test(ua)) deviceType = 'desktop';
      else if (osName === 'android' && deviceType !== 'desktop') {
        const model = ANDROID_MODEL.exec(ua)?.[1] ?? '';
        if (TV_MODEL.test(model)) deviceType = 'smarttv';
        else if (deviceType === 'mobile' || deviceType === 'tablet' || deviceType === 'unknown') {
          // Every Android WebView says Mobile, phone or TV box alike: a WebView names a phone
          // only when its model follows a phone maker's naming or a phone-only app or browser
          // wraps it, or it runs Android 6 or older (measured: unnamed boxes' WebViews run 7
          // and later, docs/scoring.md); an unnamed box's WebView stays unknown. A browser
          // that says Mobile is a phone's (TV boxes' browsers drop it or name the platform),
          // unless it is Yandex's large-screen build, whose Mobile is a WebView's.
          // Cheapest evidence first: the phone-naming regex runs only when Mobile is not enough.
          if (mobileToken) {
            const vendorNamesPhone = device.type === 'mobile' && device.vendor !== undefined && !VENDOR_NOT_PHONE.has(device.vendor);
            const mobileNamesPhone = webview ? osMajor <= 6 : !LARGE_SCREEN_BUILD.test(ua);
            deviceType = mobileNamesPhone || vendorNamesPhone || PHONE_NAMED.test(ua) ? 'mobile' : 'unknown';
          } else if (ua.includes('AppleWebKit/') && ua.includes('Safari/')) deviceType = 'tablet';
        }
      }
    }

    let browserFamily = browser.name ? (BROWSER_FAMILIES[browser.name] ?? 'other') : 'unknown';
    if (webview && (browserFamily === 'webkit' || browserFamily === 'unknown')) browserFamily = 'webview';
    if (declaredBot && automationReason === '') browserFamily = 'bot';
    else if (appClient && browserFamily === 'unknown') browserFamily = 'app';

    const windowsNt = osName === 'windows' ? WINDOWS_NT.exec(ua) : null;

    out.preReason = preReasonOf(ua);
    out.unparseable = ua.startsWith('Mozilla/') && !declaredBot && !browser.name && !os.name && !engine.name && !device.type;
    out.neverShipped = (windowsNt?.[1] !== undefined && !WINDOWS_NT_VERSIONS.has(windowsNt[1])) || ieNeverShipped(ua);
    out.declaredBot = declaredBot;
    out.automation = automationReason !== '';
    out.automationReason = automationReason;
    out.appClient = appClient;
    out.os = osName;
    out.browser = browserFamily;
    out.device = deviceType;
    out.webview = webview;
    out.browserMajor = majorOf(browser.version);
    out.blinkMajor = engine.name === 'Blink' ? majorOf(engine.version) : NaN;
    out.osMajor = osMajor;
    out.chromeNumbered = browser.name !== undefined && CHROME_NUMBERED.has(browser.name);
    this.browserVersion = clipVersion(browser.version);
    this.osVersion = osVersion;
    this.engine = engine.name ? engine.name.toLowerCase() : 'unknown';
    return out;
  }

  /**
   * The whole analysis of one UA judged at `now` (default: this analyzer's clock), with
   * full version strings and the engine: the admin side and tests. Uncached; the lookup
   * path goes through UaCache.
   */
  analyze(ua: string, now: number = this.clock()): UaInfo {
    if (ua.length === 0) return EMPTY_INFO;
    if (ua.length > UA_MAX_LENGTH) return TOO_LONG_INFO;
    const v = judge(this.examine(ua, emptyVerdict()) as UaVerdict, this.ceilings.at(now));
    return frozenInfo({
      malformed: v.malformed,
      malformedReason: v.malformedReason,
      declaredBot: v.declaredBot,
      automation: v.automation,
      automationReason: v.automationReason,
      appClient: v.appClient,
      os: v.os,
      osVersion: this.osVersion,
      browser: v.browser,
      browserVersion: this.browserVersion,
      device: v.device,
      engine: this.engine,
      webview: v.webview,
    });
  }
}
