#!/usr/bin/env bash
# Builds upstream Trident's own reverse-connect proxy from its Go sources
# (tests/upstream-rcp/: upstream's files unchanged, plus our small listener
# main in ours/) with Debian's Go only, offline, in a Debian trixie chroot.
# Prints, as its only line on stdout, the directory that holds
#   bin/rcp-agent    upstream's agent (tools/cmd/rcp-agent)
#   bin/rcp-listen   ours: upstream's client.ListenAndAccept, as netlaunch uses it
#   certs/           the server.{crt,key} and client.{crt,key} the binaries embed
# which the rcp tests read from UPSTREAM_RCP_DIR:
#   UPSTREAM_RCP_DIR="$(bash scripts/build-upstream-rcp.sh)"
#
# Why a chroot: the Go module proxy is not reachable here, Debian's mirror
# is. Trixie has Go 1.24 and packages every library the sources import;
# the host (bookworm) has neither.
#
# Cached under UPSTREAM_RCP_CACHE (default /var/cache/trident-vm/upstream-rcp):
# the chroot keyed by its suite, mirror and packages; the build keyed by
# this script, the sources and the chroot's key. A second run only hashes.
# Needs root (mmdebstrap in root mode, chroot, mount in a private namespace).

set -Eeuo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$REPO/tests/upstream-rcp"
CACHE="${UPSTREAM_RCP_CACHE:-/var/cache/trident-vm/upstream-rcp}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE="trixie"
# What the sources import (go.mod), their dependency golang.org/x/sys
# (logrus's terminal check), and openssl for the certificates.
PACKAGES="golang-go,golang-github-sirupsen-logrus-dev,golang-github-alecthomas-kong-dev,golang-gopkg-yaml.v3-dev,golang-golang-x-sys-dev,openssl"
# Module -> the packages of it that the build imports (default: the module's
# own path). Go's vendor directory holds only imported packages.
declare -A PACKAGES_OF=([golang.org/x/sys]=golang.org/x/sys/unix)

# Each line with the seconds since the start (tests/README.md quotes them).
log() { printf 'build-upstream-rcp [%ss]: %s\n' "$SECONDS" "$*" >&2; }

for tool in mmdebstrap unshare chroot sha256sum flock; do
    command -v "$tool" >/dev/null || { log "$tool is needed (apt-get install mmdebstrap util-linux coreutils)"; exit 1; }
done

mkdir -p "$CACHE"
# One build at a time (two test runs on one machine share the cache).
exec 9>"$CACHE/.lock"
flock 9

CHROOT_KEY="$(printf '%s\n' v1 "$SUITE" "$MIRROR" "$PACKAGES" | sha256sum | cut -c1-16)"
ROOT="$CACHE/chroot-$SUITE-$CHROOT_KEY"
BUILD_KEY="$(
    {
        sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1
        echo "$CHROOT_KEY"
        (cd "$SRC" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    } | sha256sum | cut -c1-16
)"
OUT="$CACHE/build-$BUILD_KEY"

# The certificates are valid for 365 days (upstream's -days 365): a build
# older than 300 days is made again.
if [ -x "$OUT/bin/rcp-agent" ] && [ -x "$OUT/bin/rcp-listen" ] &&
    [ -n "$(find "$OUT/certs/server.crt" -mtime -300 2>/dev/null)" ]; then
    log "from cache: $OUT"
    echo "$OUT"
    exit 0
fi

if [ ! -d "$ROOT" ]; then
    log "creating the $SUITE chroot $ROOT ($PACKAGES)"
    rm -rf "$ROOT.partial"
    mmdebstrap --quiet --variant=apt --include="$PACKAGES" \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        "$SUITE" "$ROOT.partial" "$MIRROR" >&2
    mv "$ROOT.partial" "$ROOT"
fi

# The build tree, inside the chroot: the sources and a vendor directory.
WORK="$ROOT/build"
rm -rf "$WORK" "$OUT.partial" "$OUT"
mkdir -p "$WORK/src" "$OUT.partial/bin" "$OUT.partial/certs"
cp -a "$SRC/." "$WORK/src/"

# Offline with a go.mod: -mod=vendor. Go then reads only vendor/ and
# vendor/modules.txt, never the module cache, a proxy or the dependencies'
# own go.mod files (whose requirements, e.g. logrus's testify, are not
# packaged here and would be needed by -mod=mod with replace directives).
# vendor/ is copied from Debian's /usr/share/gocode/src, and modules.txt
# written from go.mod's require lines, so the two always agree.
GOCODE="$ROOT/usr/share/gocode/src"
MODULES_TXT="$WORK/src/vendor/modules.txt"
mkdir -p "$WORK/src/vendor"
: >"$MODULES_TXT"
while read -r module version; do
    [ -d "$GOCODE/$module" ] || { log "$module: not in $GOCODE (which Debian package?)"; exit 1; }
    go_line="$(awk '$1 == "go" { print "; go " $2; exit }' "$GOCODE/$module/go.mod" 2>/dev/null || true)"
    printf '# %s %s\n## explicit%s\n' "$module" "$version" "$go_line" >>"$MODULES_TXT"
    for package in ${PACKAGES_OF[$module]:-$module}; do
        mkdir -p "$WORK/src/vendor/$package"
        # A package is its directory's files, not its subdirectories.
        find "$GOCODE/$package/" -maxdepth 1 -type f -exec cp -t "$WORK/src/vendor/$package/" {} +
        echo "$package" >>"$MODULES_TXT"
    done
done < <(awk '
    $1 == "require" && $2 == "(" { block = 1; next }
    block && $1 == ")" { block = 0; next }
    block && NF >= 2 { print $1, $2 }
    $1 == "require" && $2 != "(" { print $2, $3 }
' "$SRC/go.mod")

# Runs a shell command in the chroot, in the sources, with /proc (the go
# command finds its GOROOT through /proc/self/exe) mounted in a private
# mount namespace that disappears with it.
in_chroot() {
    unshare --mount --fork -- /bin/sh -c '
        mount -t proc proc "$1/proc" && exec chroot "$1" /usr/bin/env -i \
            PATH=/usr/lib/go-1.24/bin:/usr/bin:/bin HOME=/build \
            GOCACHE=/var/cache/go-build GOPATH=/build/gopath GOFLAGS=-mod=vendor \
            GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local CGO_ENABLED=0 \
            /bin/sh -ec "cd /build/src && $2"' sh "$ROOT" "$1" >&2
}

log "go version: $(in_chroot 'go version' 2>&1)"
# The certificates tlscerts embeds (server.crt/key, client.crt/key):
# upstream's go:generate (pkg/rcp/tlscerts/generate.go) runs exactly these
# four openssl commands. openssl makes a self-signed certificate CA:TRUE;
# Go trusts such a certificate as a pinned peer (a pool certificate is a
# chain of length 1) and so does our side in upstream mode (rcp/README.md,
# "Upstream Trident's protocol"), so the tests use the certificates a
# real netlaunch embeds.
log "certificates: upstream's openssl commands (generate.go)"
in_chroot '
    cd pkg/rcp/tlscerts
    openssl genrsa -out server.key 2048 2>/dev/null
    openssl req -new -x509 -sha256 -key server.key -out server.crt -days 365 -subj /CN=localhost \
        -addext subjectAltName=DNS:reverseconnectproxy
    openssl genrsa -out client.key 2048 2>/dev/null
    openssl req -new -x509 -sha256 -key client.key -out client.crt -days 365 -subj /CN=localhost'
log "go build ./cmd/rcp-agent ./ours/rcp-listen"
in_chroot 'go build -trimpath -o /build/bin/ ./cmd/rcp-agent ./ours/rcp-listen'

cp "$WORK/bin/rcp-agent" "$WORK/bin/rcp-listen" "$OUT.partial/bin/"
cp "$WORK/src/pkg/rcp/tlscerts/"{server,client}.{crt,key} "$OUT.partial/certs/"
# Our agent and listener refuse a key that group or others can read.
chmod 600 "$OUT.partial/certs/"*.key
rm -rf "$WORK"
mv "$OUT.partial" "$OUT"
log "built: $OUT"
echo "$OUT"
