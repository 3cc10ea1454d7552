#!/usr/bin/env bash
# Builds dist/ivtd: one Linux x86-64 executable (Node 20 SEA) carrying the bundled app,
# its native addons and its data. No network; needs only `npm install` having run (not
# `npm ci`, which refuses this lock: docs/development.md, "Installing"; CI runs the same, .ci/run).
#   ./build.sh                              # entry src/cli/main.ts -> dist/ivtd
#   IVTD_ENTRY=tools/probe.ts IVTD_OUT=dist/probe/ivtd-probe ./build.sh
#   IVTD_ROLES=lookup,other ./build.sh        # worker roles to bundle (src/runtime/asset-table.ts)
#   ./build.sh --deb                        # also dist/ivtd_<version>_amd64.deb (tools/build-deb.sh, docs/packaging.md)
# What gets embedded: src/runtime/asset-table.ts.
set -euo pipefail
cd "$(dirname "$0")"

DEB=0
for arg in "$@"; do
  case "$arg" in
    --deb) DEB=1 ;;
    *) echo "build.sh: unknown argument $arg (only --deb)" >&2; exit 2 ;;
  esac
done

if [[ -z "${IVTD_ENTRY:-}" ]]; then
  if [[ -f src/cli/main.ts ]]; then IVTD_ENTRY=src/cli/main.ts; else IVTD_ENTRY=tools/probe.ts; fi
fi
OUT="${IVTD_OUT:-dist/ivtd}"
WORK="$OUT.build"
# Node 20 SEA fuse (the sentinel string compiled into node 20's binary).
FUSE=NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2
NODE="$(node -p process.execPath)"

[[ "$(node -p process.versions.node.split\(\".\"\)[0])" == 20 ]] || { echo "build.sh: needs Node 20, found $(node --version)" >&2; exit 1; }
grep -qa "$FUSE" "$NODE" || { echo "build.sh: $NODE has no SEA fuse $FUSE" >&2; exit 1; }

if [[ "$IVTD_ENTRY" != tools/probe.ts ]]; then
  # Generated inputs the app embeds (data/generated/ is not in git, so a fresh clone has
  # none): the ASN range table, only when missing (it depends only on the pinned
  # @ip-location-db/asn), and the dashboard, always (cheap, and never stale).
  echo "generate data/generated/ (ASN table if missing, dashboard)" >&2
  node --import tsx tools/build-asn.ts --if-missing >&2
  node --import tsx tools/build-dashboard.ts >&2
fi

echo "bundle $IVTD_ENTRY + assets -> $WORK" >&2
# Worker roles (WORKER_ROLES) to include; default: the app's roles, or 'probe' for the probe entry.
node --import tsx tools/build-sea.ts --entry "$IVTD_ENTRY" --work "$WORK" --roles "${IVTD_ROLES:-}" >/dev/null

echo "sea blob" >&2
node --experimental-sea-config "$WORK/sea-config.json" >/dev/null

echo "inject into a copy of $NODE -> $OUT" >&2
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
cp "$NODE" "$OUT.tmp"
chmod u+w "$OUT.tmp"
# (postject's LIEF prints harmless "Can't find string offset" warnings for node's notes)
node_modules/.bin/postject "$OUT.tmp" NODE_SEA_BLOB "$WORK/sea-prep.blob" --sentinel-fuse "$FUSE" \
  >/dev/null 2> >(grep -v "Can't find string offset" >&2)
mv "$OUT.tmp" "$OUT"
# The work dir held the blob and copies of every asset (about 100 MB): only the bundle
# stays, which `npm run bench:profile` reads to name the modules of a profiled binary.
find "$WORK" -mindepth 1 -maxdepth 1 ! -name ivtd.cjs -exec rm -rf {} +
echo "kept $WORK/ivtd.cjs ($(du -h "$WORK/ivtd.cjs" | cut -f1), the bundle bench:profile reads); removed the rest of $WORK" >&2
ls -l "$OUT" >&2

if [[ $DEB == 1 ]]; then
  echo "debian package from $OUT" >&2
  tools/build-deb.sh "$OUT" "$(dirname "$OUT")"
fi
