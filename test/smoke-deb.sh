#!/usr/bin/env bash
# Smoke test of the Debian package as root on a Debian host (CI runs it after ./build.sh --deb):
# lintian finds no error, dpkg -i installs it (postinst: user ivtd, /var/lib/ivtd), the
# installed /usr/bin/ivtd answers --version and serves a lookup as the ivtd user from the
# packaged config and data dir (systemd's way: STATE_DIRECTORY), then dpkg --purge removes
# it all. Ports are free ones given as flags (flags win over /etc/ivtd/ivtd.json).
#   bash test/smoke-deb.sh dist/ivtd_<version>_amd64.deb
set -euo pipefail

DEB="${1:?usage: smoke-deb.sh <path to ivtd_*.deb>}"
[[ -f "$DEB" ]] || { echo "smoke-deb: no file $DEB" >&2; exit 1; }
[[ $(id -u) == 0 ]] || { echo "smoke-deb: needs root (dpkg -i)" >&2; exit 1; }
say() { printf 'smoke-deb: %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

LOG="$(mktemp "${TMPDIR:-/tmp}/ivtd-smoke-deb.XXXXXX")"
CACHE="$(mktemp -d "${TMPDIR:-/tmp}/ivtd-smoke-deb-cache.XXXXXX")"
PID=""
cleanup() {
  local rc=$?
  [[ -n "$PID" ]] && kill -KILL "$PID" 2>/dev/null || true
  if [[ $rc -ne 0 ]]; then echo "--- server output" >&2; tail -n 40 "$LOG" >&2 || true; fi
  dpkg --purge ivtd >/dev/null 2>&1 || true
  rm -rf "$LOG" "$CACHE"
  exit $rc
}
trap cleanup EXIT

if command -v lintian >/dev/null; then
  LINT="$(lintian --tag-display-limit 0 "$DEB" 2>/dev/null || true)"
  if grep -q '^E:' <<<"$LINT"; then fail "lintian errors: $(grep '^E:' <<<"$LINT")"; fi
  say "lintian: no error ($(grep -c '^W:' <<<"$LINT" || true) warnings)"
else
  [[ -z "${CI:-}" ]] || fail "lintian is not installed"
fi

dpkg -i "$DEB" >/dev/null || fail "dpkg -i failed"
[[ -x /usr/bin/ivtd ]] || fail "no /usr/bin/ivtd"
getent passwd ivtd >/dev/null || fail "postinst did not make the user ivtd"
[[ "$(stat -c '%U %a' /var/lib/ivtd)" == "ivtd 700" ]] || fail "/var/lib/ivtd is $(stat -c '%U %a' /var/lib/ivtd)"
[[ -f /lib/systemd/system/ivtd.service ]] || fail "no unit"
VERSION_OUT="$(/usr/bin/ivtd --version)" || fail "ivtd --version"
grep -q '^ivtd [0-9]' <<<"$VERSION_OUT" || fail "--version: $VERSION_OUT"
say "installed: $(head -1 <<<"$VERSION_OUT")"

free_port() { local p; for _ in $(seq 1 100); do p=$((20000 + RANDOM % 40000)); if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi; done; fail "no free port"; }
P1=$(free_port); P2=$(free_port); P3=$(free_port); P4=$(free_port)
chown ivtd:ivtd "$CACHE"
# As the unit runs it: the user ivtd, the packaged config, $STATE_DIRECTORY and $CACHE_DIRECTORY.
setpriv --reuid=ivtd --regid=ivtd --init-groups env -i STATE_DIRECTORY=/var/lib/ivtd CACHE_DIRECTORY="$CACHE" \
  /usr/bin/ivtd serve --config /etc/ivtd/ivtd.json --prebid-port "$P1" --api-port "$P2" --reporting-port "$P3" --metrics-port "$P4" >"$LOG" 2>&1 &
PID=$!
for _ in $(seq 1 200); do
  kill -0 "$PID" 2>/dev/null || fail "the server exited"
  grep -q '"msg":"ivtd ready"' "$LOG" && break
  sleep 0.1
done
grep -q '"msg":"ivtd ready"' "$LOG" || fail "not ready within 20 s"
cred() { awk -v k="$1" '$1 == k { print $2; exit }' "$LOG"; }
PARTNER=$(cred partner_id); KEY=$(cred prebid_key)
[[ -n "$PARTNER" && -n "$KEY" ]] || fail "no first-customer credentials printed"
UA='Mozilla%2F5.0%20(Windows%20NT%2010.0%3B%20Win64%3B%20x64)%20AppleWebKit%2F537.36%20(KHTML%2C%20like%20Gecko)%20Chrome%2F124.0.0.0%20Safari%2F537.36'
BODY="$(curl -sS --max-time 5 -w '\n%{http_code}' "http://127.0.0.1:$P1/api/v1/ivt/lookup?p=$PARTNER&k=$KEY&pub=pub-deb&node=deb-1&ip=81.2.69.142&ua=$UA&uid=u-1&sid=exchange1.example&adt=1&dvt=2")"
[[ "${BODY##*$'\n'}" == 200 && "$BODY" == *'"botRisk"'* ]] || fail "lookup: $BODY"
say "served a lookup from /usr/bin/ivtd as user ivtd"
[[ -f /var/lib/ivtd/ivtd.duckdb ]] || fail "no store in /var/lib/ivtd: $(ls /var/lib/ivtd)"
OPENAPI="$(curl -sS --max-time 5 "http://127.0.0.1:$P2/openapi.json")"
[[ "$OPENAPI" == *'"openapi": "3.1.0"'* ]] || fail "/openapi.json: ${OPENAPI:0:200}"
kill -TERM "$PID"; wait "$PID" || fail "exit code $? after SIGTERM"; PID=""

dpkg -r ivtd >/dev/null || fail "dpkg -r"
[[ ! -e /usr/bin/ivtd ]] || fail "/usr/bin/ivtd left after dpkg -r"
[[ -f /etc/ivtd/ivtd.json ]] || fail "dpkg -r removed the conffile (only purge should)"
dpkg --purge ivtd >/dev/null || fail "dpkg --purge"
[[ ! -e /etc/ivtd/ivtd.json && ! -e /var/lib/ivtd ]] || fail "purge left /etc/ivtd or /var/lib/ivtd"
say "removed and purged"
