#!/usr/bin/env bash
# Builds a Trident container image as an OCI image archive without a
# container engine: a Debian root filesystem from mmdebstrap (cached by its
# inputs), our binaries on top, packed and configured with umoci.
#
#   scripts/build-container-image.sh daemon|combined OUT.tar   # OCI archive (tar of an OCI layout, tag "latest")
#   scripts/build-container-image.sh daemon|combined --rootfs DIR   # only the root filesystem (for tests)
#
# The same images as packaging/container/Containerfile.{daemon,combined}
# (entry points, volumes), for machines with no container engine. Load the
# archive with e.g. `skopeo copy oci-archive:OUT.tar containers-storage:trident`
# or `podman load -i OUT.tar`.
#
# Env: BIN_DIR (default target/release) holds tridentd and trident;
#      TRIDENT_CONTAINER_CACHE (default /var/cache/trident-container) keeps
#      base root filesystems, one tar per input hash;
#      DEBIAN_SUITE (default: this machine's, so glibc matches the binaries),
#      DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Needs root (mmdebstrap in root mode, device-free extraction), mmdebstrap, umoci.

set -Eeuo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLAVOR="${1:-}"
shift || true
case "$FLAVOR" in daemon | combined) ;; *)
    echo "usage: $0 daemon|combined OUT.tar | --rootfs DIR" >&2
    exit 2
    ;;
esac
ROOTFS_ONLY=""
OUT=""
if [ "${1:-}" = "--rootfs" ]; then
    ROOTFS_ONLY="${2:?--rootfs needs a directory}"
else
    OUT="${1:?output archive path needed}"
fi

BIN_DIR="${BIN_DIR:-$REPO/target/release}"
CACHE="${TRIDENT_CONTAINER_CACHE:-/var/cache/trident-container}"
# shellcheck disable=SC1091
SUITE="${DEBIAN_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES="ca-certificates"
VARIANT="minbase"

for tool in mmdebstrap umoci; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is needed (apt-get install $tool)" >&2; exit 1; }
done
for bin in tridentd trident; do
    [ -x "$BIN_DIR/$bin" ] || { echo "$0: $BIN_DIR/$bin missing (cargo build --release)" >&2; exit 1; }
done

# The base root filesystem depends only on these inputs: same inputs, same
# cached tar; change one and a new one is built.
KEY="$(printf '%s\n' "v1" "$SUITE" "$MIRROR" "$VARIANT" "$PACKAGES" | sha256sum | cut -c1-16)"
BASE="$CACHE/rootfs-$SUITE-$KEY.tar"
if [ ! -f "$BASE" ]; then
    mkdir -p "$CACHE"
    echo "building base root filesystem $BASE (mmdebstrap $SUITE, $VARIANT, $PACKAGES)"
    mmdebstrap --quiet --format=tar --variant="$VARIANT" --include="$PACKAGES" \
        --dpkgopt='path-exclude=/usr/share/{doc,man,locale}/*' \
        "$SUITE" "$BASE.partial" "$MIRROR"
    mv "$BASE.partial" "$BASE"
else
    echo "base root filesystem from cache: $BASE"
fi

# Our layer on the base: binaries, entry point, directories.
populate() { # $1 = root filesystem directory
    local root="$1"
    tar -C "$root" -xf "$BASE"
    install -m 0755 "$BIN_DIR/tridentd" "$root/usr/bin/tridentd"
    install -d -m 0755 "$root/run/trident"
    install -d -m 0700 "$root/var/lib/trident"
    if [ "$FLAVOR" = combined ]; then
        install -m 0755 "$BIN_DIR/trident" "$root/usr/bin/trident"
        install -m 0755 "$REPO/packaging/container/trident-container-entry" \
            "$root/usr/bin/trident-container-entry"
    fi
}

if [ -n "$ROOTFS_ONLY" ]; then
    mkdir -p "$ROOTFS_ONLY"
    populate "$ROOTFS_ONLY"
    echo "root filesystem ($FLAVOR) in $ROOTFS_ONLY"
    exit 0
fi

WORK="$(mktemp -d -t trident-image.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
IMAGE="$WORK/oci:latest"
umoci init --layout "$WORK/oci"
umoci new --image "$IMAGE"
umoci unpack --image "$IMAGE" "$WORK/bundle"
populate "$WORK/bundle/rootfs"
umoci repack --image "$IMAGE" "$WORK/bundle"
if [ "$FLAVOR" = daemon ]; then
    umoci config --image "$IMAGE" --config.entrypoint /usr/bin/tridentd \
        --config.cmd=--inactivity-timeout --config.cmd=0 \
        --config.volume /run/trident --config.volume /var/lib/trident
else
    umoci config --image "$IMAGE" --config.entrypoint /usr/bin/trident-container-entry \
        --config.volume /var/lib/trident
fi
umoci gc --layout "$WORK/oci"
tar -C "$WORK/oci" -cf "$OUT" .
echo "OCI image archive ($FLAVOR): $OUT"
