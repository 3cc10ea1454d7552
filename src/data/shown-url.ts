// URLs as the refresher shows them: in messages, logs, `ivtd data status` and
// refresh/state.json (which any user of the host may read). A URL's user and password are
// never shown; a MaxMind URL's query values are hidden too, since a licence key may travel
// in any of them on a mirror.

/** MaxMind's own query parameters that never hold a secret: kept so the URL stays useful. */
const PLAIN_PARAMS = new Set(['edition_id', 'suffix']);

/**
 * `url` without its `user:password@`, and with `hideQuery` every query value (but
 * MaxMind's edition_id and suffix) as REDACTED. A URL with nothing to hide comes back
 * exactly as given, so it can still be compared with the one fetched.
 */
export function shownUrl(url: string, opts: { hideQuery?: boolean } = {}): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    // Not a URL (a bad redirect): drop whatever stands before an @ in its authority.
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1');
  }
  let changed = false;
  if (u.username !== '' || u.password !== '') {
    u.username = '';
    u.password = '';
    changed = true;
  }
  if (opts.hideQuery && u.search !== '') {
    const query = u.search
      .slice(1)
      .split('&')
      .map((p) => {
        const eq = p.indexOf('=');
        if (p === '' || (eq > 0 && PLAIN_PARAMS.has(p.slice(0, eq)))) return p;
        return eq < 0 ? 'REDACTED' : `${p.slice(0, eq)}=REDACTED`;
      })
      .join('&');
    if (query !== u.search.slice(1)) {
      u.search = query;
      changed = true;
    }
  }
  return changed ? u.href : url;
}
