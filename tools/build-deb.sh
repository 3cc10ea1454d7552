#!/usr/bin/env bash
# Packs a built ivtd into dist/ivtd_<version>_amd64.deb (docs/packaging.md):
#   /usr/bin/ivtd                      the single executable
#   /lib/systemd/system/ivtd.service   the hardened unit (`ivtd systemd-unit`, User=ivtd)
#   /etc/ivtd/ivtd.json                the default configuration (a conffile)
# postinst makes the system user ivtd and /var/lib/ivtd, so after
#   apt install ./dist/ivtd_*.deb && systemctl enable --now ivtd
# ivtd serves. Run by `./build.sh --deb`; alone: tools/build-deb.sh [BINARY] [OUT_DIR].
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${1:-dist/ivtd}"
OUT_DIR="${2:-dist}"
[[ -x "$BIN" ]] || { echo "build-deb: $BIN is not an executable (run ./build.sh first)" >&2; exit 1; }
command -v dpkg-deb >/dev/null || { echo "build-deb: needs dpkg-deb (Debian's dpkg)" >&2; exit 1; }

VERSION="$(node -p 'require("./package.json").version')"
ARCH=amd64
# Whoever builds the package for their hosts names themselves here.
MAINTAINER="${IVTD_DEB_MAINTAINER:-ivtd packagers <packagers@ivtd.example.com>}"
# Reproducible dates: the last commit's, else now.
EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
DEB="$OUT_DIR/ivtd_${VERSION}_${ARCH}.deb"
ROOT="$(mktemp -d "${TMPDIR:-/tmp}/ivtd-deb.XXXXXX")"
trap 'rm -rf "$ROOT"' EXIT
umask 022

install -D -m 0755 "$BIN" "$ROOT/usr/bin/ivtd"
install -D -m 0644 ops/debian/ivtd.json "$ROOT/etc/ivtd/ivtd.json"
install -D -m 0644 ops/debian/copyright "$ROOT/usr/share/doc/ivtd/copyright"
install -D -m 0644 ops/debian/lintian-overrides "$ROOT/usr/share/lintian/overrides/ivtd"

# The unit, from the same code as `ivtd systemd-unit` (run from the checkout: the binary
# given may be a stand-in), with a header that says where it came from.
mkdir -p "$ROOT/lib/systemd/system"
node --import tsx src/cli/main.ts systemd-unit --user ivtd --binary /usr/bin/ivtd --config /etc/ivtd/ivtd.json |
  awk -v v="$VERSION" 'NR == 1 { print "# ivtd.service from the ivtd " v " Debian package. Start it with: systemctl enable --now ivtd"; print "# Settings: /etc/ivtd/ivtd.json (JSON, the camelCase option names); data: /var/lib/ivtd."; next } /^#   / { next } { print }' \
  >"$ROOT/lib/systemd/system/ivtd.service"
chmod 0644 "$ROOT/lib/systemd/system/ivtd.service"
grep -q '^User=ivtd$' "$ROOT/lib/systemd/system/ivtd.service" || { echo "build-deb: the unit does not run as ivtd" >&2; exit 1; }

STAMP="$(date -u -R -d "@$EPOCH")"
printf 'ivtd (%s) unstable; urgency=medium\n\n  * Built from the ivtd repository by build.sh --deb.\n\n -- %s  %s\n' "$VERSION" "$MAINTAINER" "$STAMP" |
  gzip -9n >"$ROOT/usr/share/doc/ivtd/changelog.gz"

# A short manual page: what the command is and where the rest is.
mkdir -p "$ROOT/usr/share/man/man1"
cat <<MAN | gzip -9n >"$ROOT/usr/share/man/man1/ivtd.1.gz"
.TH IVTD 1 "$(date -u -d "@$EPOCH" +%Y-%m-%d)" "ivtd $VERSION" "User Commands"
.SH NAME
ivtd \- ad-verification (invalid traffic) service in one executable
.SH SYNOPSIS
.B ivtd
[\fIsubcommand\fR] [\fIoptions\fR]
.SH DESCRIPTION
.B ivtd serve
answers pre-bid lookups (port 9898), serves the account API and dashboard (9899), the
reporting API (9900) and Prometheus metrics (9901). Other subcommands provision customers,
users and keys, and manage the data files; \fBivtd \-\-help\fR lists them all.
.PP
The Debian package runs it as the system user \fIivtd\fR with the unit
\fIivtd.service\fR, settings from \fI/etc/ivtd/ivtd.json\fR and data in
\fI/var/lib/ivtd\fR. The first start prints the first customer's credentials to the
journal: \fBjournalctl \-u ivtd\fR.
.SH FILES
.TP
.I /etc/ivtd/ivtd.json
Settings: a JSON object of option names in camelCase (flags and IVTD_* variables win over it).
.TP
.I /var/lib/ivtd
The data directory: the store, the signing keys, data files.
.SH SEE ALSO
.BR systemctl (1),
.BR journalctl (1)
MAN

mkdir -p "$ROOT/DEBIAN"
install -m 0755 ops/debian/postinst ops/debian/prerm ops/debian/postrm "$ROOT/DEBIAN/"
echo /etc/ivtd/ivtd.json >"$ROOT/DEBIAN/conffiles"
SIZE_KB="$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)"
cat >"$ROOT/DEBIAN/control" <<CONTROL
Package: ivtd
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $SIZE_KB
Depends: adduser, libc6 (>= 2.28), libgcc-s1, libstdc++6
Section: net
Priority: optional
Description: ad-verification (invalid traffic) service in one executable
 ivtd classifies ad traffic as valid or invalid before the bid: a bidder sends
 one lookup per bid request (or the OpenRTB bid request itself) and reads a
 bot/IVT prediction, an IP reputation, a user-agent check and a supply-chain
 verdict. It also serves an account API with a dashboard, a reporting API,
 impression beacons and Prometheus metrics.
 .
 The package installs the single executable, a hardened systemd unit running
 it as the system user ivtd, and a default configuration in /etc/ivtd.
CONTROL

mkdir -p "$OUT_DIR"
find "$ROOT" -exec touch -h -d "@$EPOCH" {} +
dpkg-deb --root-owner-group -Zgzip -z6 --build "$ROOT" "$DEB" >/dev/null
ls -l "$DEB" >&2
