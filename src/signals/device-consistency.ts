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
// - tablets (1, 5) may send desktop UAs (iPadOS Safari says Macintosh, Android tablets
//   default to desktop mode, Surface is Windows), so desktop is allowed there;
// - phones (4) in "request desktop site" mode say Macintosh (iPhone) or X11 Linux
//   (Android), so only Windows/ChromeOS desktops are refused; an Android browser or
//   WebView without `Mobile` (device 'tablet', see ua-analysis.ts) names a tablet, TV or
//   box, never a phone;
// - CTV-like dvt (3, 6, 7): a phone (`Mobile` with a model, iPhone), a wearable and a plain
//   Windows/macOS/ChromeOS desktop are refused; tablets and X11 Linux pass (Android boxes
//   without a TV token look like tablets, some TVs send generic X11 Linux);
// - DOOH (8) players run anything.
function deviceMismatch(dvt: number, info: UaDeviceFacts): boolean {
  const d = info.device;
  switch (dvt) {
    case 2:
      return d === 'mobile' || d === 'tablet' || d === 'smarttv' || d === 'console' || d === 'wearable';
    case 1:
    case 5:
      return d === 'smarttv' || d === 'console';
    case 4:
      return d === 'smarttv' || d === 'console' || (d === 'desktop' && (info.os === 'windows' || info.os === 'chromeos')) ||
        (d === 'tablet' && info.os === 'android');
    case 3:
    case 6:
    case 7:
      return (d === 'mobile' && !info.webview) || d === 'wearable' || (d === 'desktop' && (info.os === 'windows' || info.os === 'macos' || info.os === 'chromeos'));
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
