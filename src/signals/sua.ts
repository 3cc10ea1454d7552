// The structured user agent of OpenRTB 2.6 (`device.sua`: user-agent client hints, or the
// exchange's parse of the UA) against the UA string. Client hints come from the browser
// itself, so a UA string that says another platform or browser than its own hints was
// rewritten on the way: spoofing. Conservative, like device-consistency.ts: only plain
// contradictions count, never a field one side leaves out.
import type { UaVerdict } from './ua-analysis.ts';

/** What the check reads from `device.sua`, already type-checked (src/prebid/ortb/map.ts). */
export interface SuaFacts {
  /** OS family in ua-analysis's codes ('windows', 'macos', 'ios', 'android', 'chromeos', 'linux'), '' when absent or other. */
  platform: string;
  /** `sua.mobile`: 1 or 0, -1 when absent. */
  mobile: number;
  /** A Chromium brand is listed (Chromium, Google Chrome, Microsoft Edge). */
  chromium: boolean;
  /** Major version of that brand (Chromium's first), NaN when absent. */
  chromiumMajor: number;
  /** `sua.source`: 1 and 2 are client hints the browser sent, 3 a parse of the UA, 0 or -1 unknown. */
  source: number;
}

export function emptySua(): SuaFacts {
  return { platform: '', mobile: -1, chromium: false, chromiumMajor: NaN, source: -1 };
}

/** Client-hint platform brands (Sec-CH-UA-Platform) as ua-analysis's OS codes. */
const PLATFORMS: ReadonlyMap<string, string> = new Map([
  ['windows', 'windows'],
  ['macos', 'macos'],
  ['mac os x', 'macos'],
  ['ios', 'ios'],
  ['ipados', 'ios'],
  ['android', 'android'],
  ['chrome os', 'chromeos'],
  ['chromeos', 'chromeos'],
  ['chromium os', 'chromeos'],
  ['linux', 'linux'],
]);

export function suaPlatform(brand: string): string {
  return PLATFORMS.get(brand.toLowerCase()) ?? '';
}

/** Brands in the order their version is trusted as the Blink major (Opera's own brand is not). */
export const CHROMIUM_BRANDS: readonly string[] = ['Chromium', 'Google Chrome', 'Microsoft Edge'];

// Pairs that are one device seen two ways: an iPad in desktop mode says Macintosh; Android
// in desktop mode and ChromeOS's Linux side say Linux; Fire OS is Android.
function samePlatform(sua: string, ua: string): boolean {
  if (ua === 'fireos') ua = 'android';
  if (sua === ua) return true;
  const pair = sua < ua ? `${sua}+${ua}` : `${ua}+${sua}`;
  return pair === 'ios+macos' || pair === 'android+linux' || pair === 'chromeos+linux';
}
const COMPARABLE_OS: ReadonlySet<string> = new Set(['windows', 'macos', 'ios', 'android', 'chromeos', 'linux', 'fireos']);

/** UA facts the check reads (the hot path's verdict). */
export type SuaUaFacts = Pick<UaVerdict, 'os' | 'browser' | 'device' | 'blinkMajor' | 'browserMajor'>;

/** Browsers whose own major version is the Chromium major (Opera's is not). */
const CHROMIUM_NUMBERED: ReadonlySet<string> = new Set(['chrome', 'chromium', 'edge']);

/** The UA's Chromium major: the Blink engine's when the parser gives it, else a Chromium-numbered browser's own. */
function uaChromiumMajor(ua: SuaUaFacts): number {
  if (Number.isFinite(ua.blinkMajor)) return ua.blinkMajor;
  return CHROMIUM_NUMBERED.has(ua.browser) ? ua.browserMajor : NaN;
}

/**
 * '' when the structured UA agrees with the UA string, else what contradicts it:
 * 'platform' (another OS), 'mobile' (a phone's hints on a Windows/ChromeOS desktop UA),
 * 'browser' (Chromium hints on a Firefox or desktop Safari UA), 'version' (another Chromium major).
 */
export function suaConflict(sua: SuaFacts, ua: SuaUaFacts): string {
  if (sua.platform !== '' && COMPARABLE_OS.has(ua.os) && !samePlatform(sua.platform, ua.os)) return 'platform';
  if (sua.mobile === 1 && ua.device === 'desktop' && (ua.os === 'windows' || ua.os === 'chromeos')) return 'mobile';
  // Every browser on iOS is WebKit whatever its name, so iOS is left out of the browser rules.
  if (ua.os !== 'ios') {
    const hints = sua.chromium || sua.source === 1 || sua.source === 2;
    if (hints && (ua.browser === 'firefox' || ua.browser === 'safari')) return 'browser';
    const major = uaChromiumMajor(ua);
    if (Number.isFinite(sua.chromiumMajor) && Number.isFinite(major) && sua.chromiumMajor !== major) return 'version';
  }
  return '';
}

/** What suaConflict() found, for a person (the admin explain): which hint contradicts which part of the UA string. */
export function suaConflictText(conflict: string, sua: SuaFacts, ua: SuaUaFacts): string {
  switch (conflict) {
    case 'platform':
      return `sua_mismatch: device.sua says platform ${sua.platform}, the UA string ${ua.os}`;
    case 'mobile':
      return `sua_mismatch: device.sua says mobile, the UA string a ${ua.os} desktop`;
    case 'browser':
      return `sua_mismatch: device.sua carries Chromium client hints, the UA string is ${ua.browser}`;
    case 'version':
      return `sua_mismatch: device.sua says Chromium ${sua.chromiumMajor}, the UA string ${uaChromiumMajor(ua)}`;
    default:
      return conflict === '' ? '' : `sua_mismatch: ${conflict}`;
  }
}

/** The UA facts a lookup without a UA string reads from `device.sua` alone. */
export interface SuaDevice {
  os: string;
  device: string;
  browser: string;
  blinkMajor: number;
}

const DESKTOP_PLATFORMS: ReadonlySet<string> = new Set(['windows', 'macos', 'linux', 'chromeos']);

/**
 * The device `device.sua` describes, for a bid request without `device.ua` (OpenRTB 2.6
 * prefers `sua`): its OS, `mobile` 1 a phone (on iOS and Android), `mobile` 0 a desktop on a
 * desktop platform, and a Chromium browser with its version. What it leaves out stays 'unknown'.
 */
export function suaDevice(sua: SuaFacts, out: SuaDevice): void {
  out.os = sua.platform === '' ? 'unknown' : sua.platform;
  out.device =
    sua.mobile === 1 && (sua.platform === 'ios' || sua.platform === 'android') ? 'mobile'
    : sua.mobile === 0 && DESKTOP_PLATFORMS.has(sua.platform) ? 'desktop'
    : 'unknown';
  out.browser = sua.chromium ? 'chromium' : 'unknown';
  out.blinkMajor = sua.chromiumMajor;
}
