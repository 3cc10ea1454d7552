// Is the user agent plausible for the request's device type (dvt), app and IFA? The UA's
// device class comes from the UA analysis (ua-analysis.ts); the rules here compare it with
// what the request declares.
import type { UaInfo } from './ua-analysis.ts';

/** The UA facts the consistency rules read (a full UaInfo or the hot path's UaVerdict). */
export type UaDeviceFacts = Pick<UaInfo, 'device' | 'os' | 'browser' | 'appClient' | 'webview'>;

/** Families that mean "a desktop web browser" for the app-vs-UA check. */
const DESKTOP_BROWSERS: ReadonlySet<string> = new Set([
  'chrome', 'chromium', 'edge', 'firefox', 'safari', 'opera', 'yandex', 'ie', 'vivaldi', 'brave',
]);

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
// - PC (2): no phone, tablet, TV, console or wearable, and no Android device that is not
//   a PC (an app's own UA, "com.google.android.youtube/... (Linux; U; Android 12; ...)",
//   names no device class but is an Android phone, tablet or box);
// - tablets (1, 5) may send desktop UAs (iPadOS Safari says Macintosh, Android tablets
//   default to desktop mode, Surface is Windows), so desktop is allowed there;
// - phones (4) in "request desktop site" mode say Macintosh (iPhone) or X11 Linux
//   (Android), so only Windows/ChromeOS desktops are refused; an Android browser or
//   WebView without `Mobile` (device 'tablet', see ua-analysis.ts) names a tablet, TV or
//   box, never a phone;
// - phones (4): a "Windows NT" UA names a PC or Windows tablet whatever else it says;
// - CTV-like dvt (3, 6, 7): a phone (an Android browser that says Mobile and names no TV
//   model or platform, an in-app WebView whose model or app names a phone, an iPhone), a
//   wearable and a plain Windows/macOS/ChromeOS desktop are refused; tablets, unnamed
//   Android WebViews (device 'unknown': a phone's or a box's) and X11 Linux pass (Android
//   boxes without a TV token look like tablets, some TVs send generic X11 Linux);
// - DOOH (8) players run anything.
function deviceMismatch(dvt: number, info: UaDeviceFacts): boolean {
  const d = info.device;
  switch (dvt) {
    case 2:
      // Android is no PC's OS unless the UA names the PC (a Chromebook: device 'desktop').
      return d === 'mobile' || d === 'tablet' || d === 'smarttv' || d === 'console' || d === 'wearable' ||
        (info.os === 'android' && d !== 'desktop');
    case 1:
    case 5:
      return d === 'smarttv' || d === 'console';
    case 4:
      // "Windows NT" names a PC or a Windows tablet whatever ua-parser calls it (Windows
      // phones said "Windows Phone", a different family).
      return d === 'smarttv' || d === 'console' || info.os === 'windows' || (d === 'desktop' && info.os === 'chromeos') ||
        (d === 'tablet' && info.os === 'android');
    case 3:
    case 6:
    case 7:
      return d === 'mobile' || d === 'wearable' || (d === 'desktop' && (info.os === 'windows' || info.os === 'macos' || info.os === 'chromeos'));
    default:
      return false;
  }
}

/**
 * Is the UA plausible for this device type, app and IFA? Unknown devices and unknown
 * dvt values are consistent (validation of dvt itself happens elsewhere).
 */
export function uaConsistency(
  info: UaDeviceFacts,
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
