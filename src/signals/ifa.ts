// Device advertising IDs (IFA): the form rules every lookup applies, and the known-bad
// list (placeholders, SDK defaults, documentation examples) read from a text file, one
// lowercase UUID per line, `#` starts a comment.

import { isUuid } from '../base/uuid.ts';

export const ZERO_IFA = '00000000-0000-0000-0000-000000000000';
const IFA_MACRO = /[{}[\]$%]|^__|__$/;
/** Errors listed in one thrown message before the rest are summarised. */
const MAX_REPORTED_ERRORS = 20;

export class IfaList {
  private constructor(private readonly ifas: ReadonlySet<string>) {}

  /**
   * Parses the list; every malformed line is reported as `file:line: why` in one Error.
   * The all-zero IFA is refused: it means limited ad tracking, and listing it would
   * mark every opted-out user as fraud.
   */
  static parse(text: string, fileName: string): IfaList {
    const ifas = new Set<string>();
    const errors: string[] = [];
    const lines = text.split('\n');
    for (let n = 0; n < lines.length; n++) {
      const line = lines[n]!;
      const hash = line.indexOf('#');
      const entry = (hash >= 0 ? line.slice(0, hash) : line).trim().toLowerCase();
      if (entry === '') continue;
      const where = `${fileName}:${n + 1}`;
      if (!isUuid(entry)) {
        errors.push(`${where}: "${entry.slice(0, 60)}" is not an IFA (a UUID of 8-4-4-4-12 hex digits)`);
      } else if (entry === ZERO_IFA) {
        errors.push(`${where}: the all-zero IFA means limited ad tracking, not fraud; remove it`);
      } else {
        ifas.add(entry);
      }
    }
    if (errors.length > 0) {
      const more = errors.length - MAX_REPORTED_ERRORS;
      const shown = errors.slice(0, MAX_REPORTED_ERRORS).join('\n');
      throw new Error(`invalid IFA list ${fileName}:\n${shown}${more > 0 ? `\n(and ${more} more)` : ''}`);
    }
    return new IfaList(ifas);
  }

  /** Case-insensitive; only a 36-character miss pays for lowercasing (iOS IDFAs are uppercase). */
  has(ifa: string): boolean {
    if (ifa.length !== 36) return false;
    return this.ifas.has(ifa) || this.ifas.has(ifa.toLowerCase());
  }

  get size(): number {
    return this.ifas.size;
  }
}

/**
 * '' when the IFA is a well-formed UUID (IDFA, AAID, RIDA, TIFA, AFAI... all are), else a
 * reason: 'empty', 'macro' (unexpanded template), 'length', 'not_uuid', 'repeated'
 * (one hex digit repeated, other than the all-zero LAT value, see isZeroIfa).
 */
export function ifaMalformed(ifa: string): string {
  if (ifa.length === 0) return 'empty';
  if (IFA_MACRO.test(ifa)) return 'macro';
  if (ifa.length !== 36) return 'length';
  if (!isUuid(ifa)) return 'not_uuid';
  if (ifa !== ZERO_IFA) {
    const first = ifa.charCodeAt(0) | 0x20;
    let same = true;
    for (let i = 1; i < 36 && same; i++) {
      const c = ifa.charCodeAt(i);
      if (c !== 0x2d && (c | 0x20) !== first) same = false;
    }
    if (same) return 'repeated';
  }
  return '';
}

/** All-zero IFA: the device has limited ad tracking (or ATT denied), not a malformed ID. */
export function isZeroIfa(ifa: string): boolean {
  return ifa === ZERO_IFA;
}

/**
 * Device-ID types (IAB guidelines for IFA on OTT; OpenRTB `device.ifa_type`) and the UA
 * operating systems (ua-analysis.ts codes) of the platforms that issue them. Android
 * includes what runs Android apps (ChromeOS); Apple's IDFA includes an iPad in desktop
 * mode (macOS) and Apple TV (tvOS); Fire OS devices also parse as Android.
 */
export const IFA_TYPE_PLATFORMS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['rida', new Set(['roku'])],
  ['afai', new Set(['fireos', 'android'])],
  ['idfa', new Set(['ios', 'tvos', 'macos'])],
  ['aaid', new Set(['android', 'chromeos'])],
  ['gaid', new Set(['android', 'chromeos'])],
  ['tifa', new Set(['tizen'])],
  ['lgudid', new Set(['webos'])],
  ['vida', new Set(['linux', 'android'])],
  ['msai', new Set(['xbox', 'windows'])],
  ['psnai', new Set(['playstation'])],
]);

/** Operating systems the UA analysis names precisely enough to contradict a device-ID type. */
const KNOWN_PLATFORMS: ReadonlySet<string> = new Set([
  'roku', 'fireos', 'android', 'ios', 'tvos', 'macos', 'chromeos', 'tizen', 'webos', 'linux', 'xbox', 'windows', 'playstation',
]);

/**
 * True when a declared device-ID type belongs to another platform than the device's OS
 * (`rida` on a Tizen TV, `idfa` on Android…). Unknown types (`dpid`, an exchange's own),
 * non-device types (`ppid`, `sspid`, `sessionid`) and devices whose OS is unknown never conflict.
 */
export function ifaTypeConflict(ifaType: string, os: string): boolean {
  if (ifaType === '') return false;
  const platforms = IFA_TYPE_PLATFORMS.get(ifaType);
  return platforms !== undefined && KNOWN_PLATFORMS.has(os) && !platforms.has(os);
}
