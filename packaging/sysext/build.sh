#!/usr/bin/env bash
# Builds trident.raw, a systemd system extension (squashfs) that adds Trident
# to a host's /usr without installing a package:
#   usr/bin/tridentd, usr/bin/trident, usr/bin/trident-rcp (the reverse-connect agent)
#   usr/lib/systemd/system/*.{service,socket}         (packaging/systemd)
#   usr/lib/sysusers.d/trident.conf                    (the socket's group)
#   usr/lib/extension-release.d/extension-release.trident
#
#   packaging/sysext/build.sh [--bin-dir DIR] [--out FILE] [--os-id ID [--version-id V]]
#
# --bin-dir  where tridentd, trident and trident-rcp are (default: target/release)
# --out      output image (default: target/sysext/trident.raw)
# --os-id    ID= of the hosts it may merge on (default: _any, any OS);
#            with a real ID, --version-id (or SYSEXT_LEVEL) must match too.
#
# The image is reproducible for the same inputs (fixed times, root owner).
# Needs mksquashfs (squashfs-tools).

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN_DIR="$REPO/target/release"
OUT="$REPO/target/sysext/trident.raw"
OS_ID="_any"
VERSION_ID=""
while [ $# -gt 0 ]; do
    case "$1" in
    --bin-dir) BIN_DIR="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --os-id) OS_ID="$2"; shift 2 ;;
    --version-id) VERSION_ID="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
BINS=(tridentd trident trident-rcp)
for bin in "${BINS[@]}"; do
    [ -x "$BIN_DIR/$bin" ] || {
        echo "$BIN_DIR/$bin missing: cargo build --release -p tridentd -p trident-cli -p trident-rcp" >&2
        exit 1
    }
done

TREE="$(mktemp -d -t trident-sysext.XXXXXX)"
trap 'rm -rf "$TREE"' EXIT
for bin in "${BINS[@]}"; do
    install -D -m 0755 "$BIN_DIR/$bin" "$TREE/usr/bin/$bin"
    # Debug info is most of a dev build's size; the extension does not need it.
    strip --strip-debug "$TREE/usr/bin/$bin"
done
# Every unit Trident ships (packaging/systemd/*), so new ones come along.
install -D -m 0644 -t "$TREE/usr/lib/systemd/system" \
    "$REPO"/packaging/systemd/*.service "$REPO"/packaging/systemd/*.socket
install -D -m 0644 /dev/stdin "$TREE/usr/lib/sysusers.d/trident.conf" <<'SYSUSERS'
# Members of "trident" may connect to /run/trident/listen.sock (tridentd.socket).
g trident -
SYSUSERS
{
    echo "ID=$OS_ID"
    [ -z "$VERSION_ID" ] || echo "VERSION_ID=$VERSION_ID"
    # x86-64 binaries: refuse to merge on other architectures.
    echo "ARCHITECTURE=x86-64"
    # systemd >= 255 reloads the manager after merging, so the units are
    # known at once (older systemd ignores this; see docs/deployment.md,
    # "System extension").
    echo "EXTENSION_RELOAD_MANAGER=1"
} | install -D -m 0644 /dev/stdin "$TREE/usr/lib/extension-release.d/extension-release.trident"

mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
mksquashfs "$TREE" "$OUT" -quiet -no-progress -all-root -noappend \
    -mkfs-time 0 -all-time 0 -comp gzip >/dev/null
echo "$OUT ($(du -h "$OUT" | cut -f1)): ID=$OS_ID${VERSION_ID:+ VERSION_ID=$VERSION_ID}"
