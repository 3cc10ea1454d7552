#!/usr/bin/env bash
# Smoke test of the single executable, the way an operator meets it: the binary copied
# ALONE into an empty folder and run with an empty environment. It must provision a
# customer, serve lookups, count them in reports, serve the dashboard and /metrics,
# reload on SIGHUP, stop with exit 0 on SIGTERM, and lose nothing across a restart.
#   bash test/smoke-binary.sh dist/ivtd
# Prints the binary size, start-to-healthy time and RSS (targets: < 2 s, < 300 MB).
set -euo pipefail

BIN_SRC="${1:?usage: smoke-binary.sh <path to ivtd binary>}"
[[ -x "$BIN_SRC" ]] || { echo "smoke: $BIN_SRC is not an executable file" >&2; exit 1; }
for tool in curl awk grep; do
  command -v "$tool" >/dev/null || { echo "smoke: needs $tool" >&2; exit 1; }
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/ivtd-smoke.XXXXXX")"
LOG="$WORK/server.log"
PID=""
START_TIMEOUT=10 # s until /health-check answers 200
STOP_TIMEOUT=20  # s from SIGTERM to exit

say() { printf 'smoke: %s\n' "$*" >&2; }

cleanup() {
  local rc=$?
  if [[ -n "$PID" ]] && kill -0 "$PID" 2>/dev/null; then
    kill -KILL "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 && -f "$LOG" ]]; then
    echo "--- last 40 lines of the server's output ($LOG)" >&2
    tail -n 40 "$LOG" >&2 || true
  fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  say "FAIL: $*"
  exit 1
}

ms_now() { date +%s%3N; }

# A port nothing listens on (checked by connecting); distinct from the ones already taken.
TAKEN=" "
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 40000))
    [[ "$TAKEN" == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      TAKEN="$TAKEN$p "
      echo "$p"
      return 0
    fi
  done
  fail "no free port found"
}

# GET url [curl options…] → sets STATUS and BODY (bounded by --max-time).
http() {
  local url="$1"
  shift
  BODY="$(curl -sS --max-time 5 -o - -w '\n%{http_code}' "$@" "$url" 2>/dev/null)" || BODY=$'\n000'
  STATUS="${BODY##*$'\n'}"
  BODY="${BODY%$'\n'*}"
}

cp "$BIN_SRC" "$WORK/ivtd"
cd "$WORK"
[[ "$(ls -A)" == "ivtd" ]] || fail "the run folder is not empty apart from the binary"
SIZE=$(stat -c %s ivtd)

P1=$(free_port)
P2=$(free_port)
P3=$(free_port)
P4=$(free_port)
BASE1="http://127.0.0.1:$P1"
BASE2="http://127.0.0.1:$P2"
BASE3="http://127.0.0.1:$P3"
BASE4="http://127.0.0.1:$P4"
SERVE=(./ivtd serve --data-dir ./state --prebid-port "$P1" --api-port "$P2" --reporting-port "$P3" --metrics-port "$P4" --flush-interval 1)

# --- version, from the binary alone
VERSION_OUT="$(env -i ./ivtd --version)" || fail "ivtd --version exited non-zero"
grep -q '^ivtd [0-9]' <<<"$VERSION_OUT" || fail "--version: no 'ivtd <version>' line: $VERSION_OUT"
grep -Eq '^  built +[0-9]{4}-[0-9]{2}-[0-9]{2}T' <<<"$VERSION_OUT" || fail "--version: no build date: $VERSION_OUT"
grep -Eq '^  asn table +built [0-9]{4}-' <<<"$VERSION_OUT" || fail "--version: the embedded ASN table has no date: $VERSION_OUT"
grep -Eq '^  bot lists +crawlers [0-9]+ services, monitoring [0-9]+ services; .*licence CC0-1\.0$' <<<"$VERSION_OUT" || fail "--version: the embedded crawler and monitor lists have no source, date or licence: $VERSION_OUT"
say "version: $(head -1 <<<"$VERSION_OUT"), $(sed -n 2p <<<"$VERSION_OUT" | awk '{print $2}')"

# start: launches the server in the background (stdout+stderr to LOG, appended); sets PID and HEALTHY_MS.
start() {
  local t0 deadline ready_before
  ready_before=$(grep -c '"msg":"ivtd ready"' "$LOG" 2>/dev/null || true)
  t0=$(ms_now)
  env -i "${SERVE[@]}" >>"$LOG" 2>&1 &
  PID=$!
  deadline=$((t0 + START_TIMEOUT * 1000))
  while :; do
    kill -0 "$PID" 2>/dev/null || fail "the server exited during startup"
    http "$BASE1/health-check"
    [[ "$STATUS" == 200 ]] && break
    (($(ms_now) < deadline)) || fail "/health-check not 200 within ${START_TIMEOUT} s (last status $STATUS)"
    sleep 0.05
  done
  HEALTHY_MS=$(($(ms_now) - t0))
  # Health covers lookups; the account and reporting listeners (and the first-start
  # credentials) follow a few milliseconds later, announced by the "ivtd ready" line.
  until (($(grep -c '"msg":"ivtd ready"' "$LOG") > ${ready_before:-0})); do
    kill -0 "$PID" 2>/dev/null || fail "the server exited during startup"
    (($(ms_now) < deadline)) || fail "no 'ivtd ready' log line within ${START_TIMEOUT} s"
    sleep 0.05
  done
}

# stop: SIGTERM, then the exit code must be 0 within STOP_TIMEOUT.
stop() {
  local t0 rc
  t0=$(ms_now)
  kill -TERM "$PID"
  while kill -0 "$PID" 2>/dev/null; do
    (($(ms_now) - t0 < STOP_TIMEOUT * 1000)) || fail "still running ${STOP_TIMEOUT} s after SIGTERM"
    sleep 0.1
  done
  rc=0
  wait "$PID" || rc=$?
  PID=""
  ((rc == 0)) || fail "exit code $rc after SIGTERM (want 0)"
  say "SIGTERM: exited 0 after $(($(ms_now) - t0)) ms"
}

# --- first start: provisions a customer and prints its credentials once
start
FIRST_HEALTHY_MS=$HEALTHY_MS
RSS_KB=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status")
say "healthy after ${HEALTHY_MS} ms, RSS $((RSS_KB / 1024)) MB, binary $((SIZE / 1024 / 1024)) MB"

cred() { awk -v k="$1" '$1 == k { print $2; exit }' "$LOG"; }
CUSTOMER=$(cred customer_id)
PARTNER=$(cred partner_id)
PREBID_KEY=$(cred prebid_key)
REPORTING_KEY=$(cred reporting_key)
[[ -n "$CUSTOMER" && -n "$PARTNER" && -n "$PREBID_KEY" && -n "$REPORTING_KEY" ]] ||
  fail "the first start did not print the first customer's credentials"
grep -q '^{.*"msg":"ivtd ready"' "$LOG" || fail "no JSON 'ivtd ready' log line on stdout"
# The embedded FFI addon loads, and the process limited malloc's arenas itself (clean env).
grep -q '"arenas":2,"setBy":"ivtd".*"msg":"malloc arenas limited' "$LOG" || fail "no 'malloc arenas limited' log line set by ivtd: $(grep -m1 'malloc arenas' "$LOG")"

# The CLI inside the binary reaches the running server over its control socket.
LIST="$(env -i ./ivtd customer list --json --data-dir ./state)" || fail "ivtd customer list failed against the running server"
grep -q "\"$CUSTOMER\"" <<<"$LIST" || fail "customer list does not show the announced customer: $LIST"

UA='Mozilla%2F5.0%20(Windows%20NT%2010.0%3B%20Win64%3B%20x64)%20AppleWebKit%2F537.36%20(KHTML%2C%20like%20Gecko)%20Chrome%2F124.0.0.0%20Safari%2F537.36'
LOOKUPS=0
lookup() {
  http "$BASE1/api/v1/ivt/lookup?schain=1.0,1!exchange1.example,1234,1&p=$PARTNER&k=$PREBID_KEY&pub=pub-smoke&node=smoke-1&ip=81.2.69.142&ua=$UA&uid=u-1&sid=exchange1.example&adt=1&dvt=2"
  [[ "$STATUS" == 200 ]] || fail "lookup: status $STATUS, body $BODY"
  [[ "$BODY" == *'"botRisk"'* && "$BODY" == *'"schain"'* ]] || fail "lookup: not a lookup response: $BODY"
  LOOKUPS=$((LOOKUPS + 1))
}
for _ in 1 2 3; do lookup; done
say "lookups: 200 with a JSON prediction"

# report_total: total_transactions over yesterday..today (UTC) from the reporting API.
report_total() {
  http "$BASE3/v1/report?start_date=$(date -u -d yesterday +%F)&end_date=$(date -u +%F)" -u "$CUSTOMER:$REPORTING_KEY"
  [[ "$STATUS" == 200 ]] || fail "report: status $STATUS, body $BODY"
  TOTAL=$(grep -o '"total_transactions":[0-9]*' <<<"$BODY" | head -1 | cut -d: -f2 || true)
  [[ -n "$TOTAL" ]] || fail "report: no total_transactions in $BODY"
}
# wait_report N: the report must reach N (counts leave the lookup thread each second, flush each second).
wait_report() {
  local deadline=$(($(ms_now) + 10000))
  while :; do
    report_total
    ((TOTAL == $1)) && return 0
    ((TOTAL < $1)) || fail "report counts $TOTAL transactions, more than the $1 made"
    (($(ms_now) < deadline)) || fail "report shows $TOTAL transactions 10 s after $1 lookups"
    sleep 0.5
  done
}
wait_report "$LOOKUPS"
say "report: $TOTAL transactions counted"

http "$BASE3/v1/report?start_date=$(date -u +%F)&end_date=$(date -u +%F)" -u "$CUSTOMER:wrong"
[[ "$STATUS" == 401 ]] || fail "report with a wrong key: status $STATUS (want 401)"

http "$BASE2/"
[[ "$STATUS" == 200 && "$BODY" == *'<html'* ]] || fail "dashboard: GET / on the account API port gave $STATUS"
say "dashboard: GET / serves HTML"

http "$BASE4/metrics"
[[ "$STATUS" == 200 ]] || fail "/metrics: status $STATUS"
for series in 'ivtd_lookup_requests_total{status="200"}' 'ivtd_lookup_duration_seconds_bucket' 'process_resident_memory_bytes' 'ivtd_data_age_seconds' 'ivtd_reporting_flushes_total'; do
  grep -qF "$series" <<<"$BODY" || fail "/metrics lacks $series"
done
for base in "$BASE1" "$BASE2" "$BASE3"; do
  http "$base/metrics"
  [[ "$STATUS" == 404 ]] || fail "/metrics must be on --metrics-port only, not on $base (status $STATUS)"
done
say "metrics: on the metrics port only"

# --- SIGHUP: data reloads while lookups keep working
kill -HUP "$PID"
deadline=$(($(ms_now) + 10000))
until grep -q '"msg":"data file reloaded"' "$LOG"; do
  (($(ms_now) < deadline)) || fail "no 'data file reloaded' log line 10 s after SIGHUP"
  sleep 0.1
done
grep -q '"msg":"SIGHUP: reloading config and data files"' "$LOG" || fail "no log line about SIGHUP"
kill -0 "$PID" 2>/dev/null || fail "the server died on SIGHUP"
http "$BASE1/health-check"
[[ "$STATUS" == 200 ]] || fail "health after SIGHUP: $STATUS"
lookup
say "SIGHUP: data reloaded, still healthy, lookups 200"

# --- SIGTERM right after two more lookups: their counts must be drained and flushed.
lookup
lookup
stop

# --- restart on the same state dir: nothing lost, credentials not printed again
LINES_BEFORE=$(wc -l <"$LOG")
start
say "restart: healthy after ${HEALTHY_MS} ms"
if awk -v n="$LINES_BEFORE" 'NR > n && /First start/ { found = 1 } END { exit !found }' "$LOG"; then
  fail "the restart printed first-customer credentials again"
fi
wait_report "$LOOKUPS"
say "restart: the report still shows all $TOTAL transactions"
stop

echo "smoke: OK: binary $((SIZE / 1024 / 1024)) MB ($SIZE bytes); healthy after ${FIRST_HEALTHY_MS} ms (first start), ${HEALTHY_MS} ms (restart); RSS after startup $((RSS_KB / 1024)) MB (targets: healthy < 2000 ms, RSS < 300 MB)"
((FIRST_HEALTHY_MS < 2000 && HEALTHY_MS < 2000)) || echo "smoke: WARNING: start-to-healthy over the 2 s target" >&2
((RSS_KB < 300 * 1024)) || echo "smoke: WARNING: RSS over the 300 MB target" >&2
