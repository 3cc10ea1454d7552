// Country codes, one source for every part that names a country: ISO 3166-1's officially
// assigned codes (249, from the iso-3166 package, with their alpha-3 forms) plus XK / XKX
// (Kosovo: user-assigned, but the code MaxMind, other geo databases and OpenRTB exchanges
// report). A fixed list rather than Intl: ICU also accepts EU, UN, QO and other non-country
// regions. Project locations are checked against it; OpenRTB's alpha-3 codes map through it.
import { iso31661Alpha2ToAlpha3, iso31661Alpha3ToAlpha2 } from 'iso-3166';

/** Every alpha-2 code, uppercase (XK included). */
export const COUNTRY_CODES: ReadonlySet<string> = new Set([...Object.keys(iso31661Alpha2ToAlpha3), 'XK']);

/** A country code (ISO 3166-1 alpha-3, OpenRTB's; alpha-2 taken too), any case → alpha-2 uppercase, or null. */
export function countryAlpha2(c: string): string | null {
  const u = c.toUpperCase();
  if (u.length === 2) return COUNTRY_CODES.has(u) ? u : null;
  if (u.length !== 3) return null;
  return u === 'XKX' ? 'XK' : (iso31661Alpha3ToAlpha2[u] ?? null);
}
