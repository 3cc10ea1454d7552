// App bundle IDs against the store of the OS the UA names. Each store gives its apps IDs of
// one form (IAB Tech Lab's store-assigned app identification guidelines): Google Play and
// other Android stores a reverse-DNS package name; Apple a bundle ID or a numeric App Store
// ID; Amazon an ASIN (`B0…`, ten characters) or a package name; Roku a numeric channel ID;
// Samsung `G` and eleven digits (older: thirteen digits, or a Tizen package ID); LG a
// numeric ID or a reverse-DNS ID. An ID of another store's form (a Roku number on Android,
// an ASIN on an iPhone, a package name on a Roku), or one of no store's form at all, is
// malformed for that device: weak evidence on its own (broken integrations send such IDs
// too), a reason of its own in the score (`app_bundle_malformed`).

/** The form of an ID. */
export type BundleForm = 'rdns' | 'numeric' | 'asin' | 'samsung' | 'other';

const RDNS = /^[A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)+$/;
const NUMERIC = /^(?:id)?\d{1,13}$/;
const ASIN = /^B0[0-9A-Z]{8}$/;
const SAMSUNG = /^G\d{11}$/;
/** Amazon's own devices (Fire TV, Fire tablets, Silk): their Android takes ASINs too. */
const AMAZON_DEVICE = /\bAFT[A-Z]|\bKF[A-Z]{2,5}\b|Kindle|\bSilk\//;

export function bundleForm(app: string): BundleForm {
  if (RDNS.test(app)) return 'rdns';
  if (NUMERIC.test(app)) return 'numeric';
  if (ASIN.test(app)) return 'asin';
  if (SAMSUNG.test(app)) return 'samsung';
  return 'other';
}

/**
 * '' when `app` fits a store of the OS the UA names (`os`, ua-analysis.ts's family code),
 * else why not: `<form>_on_<os>` (another store's form) or `unknown_form_on_<os>`. An OS with
 * no store of its own (desktops, unknown) asks nothing.
 */
export function bundleProblem(app: string, os: string, ua: string): string {
  if (app === '') return '';
  const form = bundleForm(app);
  let ok: readonly BundleForm[];
  switch (os) {
    case 'android':
    case 'harmonyos':
      // The UA is scanned for an Amazon device only when the ID is an ASIN.
      ok = form === 'asin' && AMAZON_DEVICE.test(ua) ? ['rdns', 'asin'] : ['rdns'];
      break;
    case 'fireos':
      ok = ['rdns', 'asin'];
      break;
    case 'ios':
    case 'tvos':
      ok = ['rdns', 'numeric'];
      break;
    case 'roku':
      ok = ['numeric'];
      break;
    case 'tizen':
      ok = ['samsung', 'numeric', 'rdns'];
      break;
    case 'webos':
      ok = ['numeric', 'rdns'];
      break;
    default:
      return '';
  }
  if (ok.includes(form)) return '';
  return form === 'other' ? `unknown_form_on_${os}` : `${form}_on_${os}`;
}
