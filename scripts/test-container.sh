#!/usr/bin/env bash
# Tests the combined container image without a container engine: builds its
# root filesystem (scripts/build-container-image.sh combined --rootfs; the
# Debian base is cached by its inputs), then runs the entry point the way a
# container would, in new mount and pid namespaces chrooted into it:
#   unshare --mount --pid --fork -> mount /proc, /dev (tmpfs + the few
#   nodes needed) -> chroot ROOTFS /usr/bin/trident-container-entry ARGS
# and checks each command's exit code (upstream's table). The disk StreamDisk
# writes is a disk-image file inside the root filesystem; nothing of the
# machine is written.
#
# Env: BIN_DIR (default target/debug): tridentd, trident, mkcosi.
# Runs as root (scripts/test.sh calls it).

set -Eeuo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BIN_DIR="${BIN_DIR:-$REPO/target/debug}"
WORK="$(mktemp -d -t trident-container-test.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
ROOT="$WORK/rootfs"
FAILURES=0

"$REPO/scripts/build-container-image.sh" combined --rootfs "$ROOT"

# Fixtures inside the image's root filesystem (paths as the container sees them).
mkdir -p "$ROOT/srv"
HASH="$("$BIN_DIR/mkcosi" --out "$ROOT/srv/image.cosi" --size 16MiB --esp-size 2MiB --seed 5 |
    sed -n 's/.*"metadata_sha384":"\([0-9a-f]*\)".*/\1/p')"
truncate -s 32M "$ROOT/srv/disk.img"
cat >"$ROOT/srv/config.yaml" <<YAML
image:
  url: file:///srv/image.cosi
  sha384: $HASH
storage:
  disks:
  - id: os
    device: /srv/disk.img
    partitions:
    - { id: esp, type: esp, size: 4M }
    - { id: root-a, type: root, size: 12M }
    - { id: root-b, type: root, size: 12M }
  abUpdate:
    volumePairs:
    - { id: root, volumeAId: root-a, volumeBId: root-b }
  filesystems:
  - { deviceId: esp, mountPoint: { path: /boot/efi, options: umask=0077 } }
  - { deviceId: root, mountPoint: / }
YAML
printf 'storage:\n  bogus: 1\n' >"$ROOT/srv/invalid.yaml"

# Runs the entry point in the image: $1 = expected exit code, $2 =
# TRIDENTD_ARGS, rest = arguments for `trident`.
in_image() {
    local expected="$1" daemon_args="$2" rc
    shift 2
    set +e
    unshare --mount --pid --fork -- /bin/sh -c '
        root="$1"; daemon_args="$2"; shift 2
        mount -t proc proc "$root/proc" &&
        mount -t tmpfs -o mode=0755 tmpfs "$root/dev" &&
        for node in null zero random urandom; do
            touch "$root/dev/$node" && mount --bind "/dev/$node" "$root/dev/$node" || exit 1
        done &&
        exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TRIDENTD_ARGS="$daemon_args" \
            NO_COLOR=1 chroot "$root" /usr/bin/trident-container-entry "$@"
    ' in-image "$ROOT" "$daemon_args" "$@" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    set -e
    if [ "$rc" = "$expected" ]; then
        printf 'ok   exit %s: trident %s\n' "$rc" "$*"
    else
        printf 'FAIL exit %s (expected %s): trident %s\n' "$rc" "$expected" "$*"
        sed 's/^/     | /' "$WORK/out" "$WORK/err" | tail -n 30
        FAILURES=$((FAILURES + 1))
    fi
}

in_image 0 "" version
grep -q "tridentd" "$WORK/out" || { echo "FAIL version printed no daemon version"; FAILURES=$((FAILURES + 1)); }
in_image 0 "" validate /srv/config.yaml
in_image 2 "" validate /srv/invalid.yaml
in_image 2 "" --no-such-flag
in_image 0 "--disk /srv/disk.img" stream-disk file:///srv/image.cosi --hash "$HASH" --progress plain
if [ "$(dd if="$ROOT/srv/disk.img" bs=1 skip=512 count=8 2>/dev/null)" != "EFI PART" ]; then
    echo "FAIL stream-disk left no GPT on /srv/disk.img"
    FAILURES=$((FAILURES + 1))
fi
in_image 2 "--disk /srv/disk.img" stream-image file:///srv/missing.cosi --progress plain
in_image 1 "--no-such-daemon-flag" version

# The pure daemon image: tridentd is the entry point and the socket
# directory a volume (a bind mount of a host temp dir on /run/trident);
# the host's CLI reaches it through the volume, on both socket paths.
DROOT="$WORK/daemon-rootfs"
VOLUME="$WORK/run-trident"
mkdir -p "$VOLUME"
"$REPO/scripts/build-container-image.sh" daemon --rootfs "$DROOT"
unshare --mount --pid --fork --kill-child=SIGTERM -- /bin/sh -c '
    root="$1"; volume="$2"
    mount -t proc proc "$root/proc" &&
    mount --bind "$volume" "$root/run/trident" &&
    mount -t tmpfs -o mode=0755 tmpfs "$root/dev" &&
    for node in null zero random urandom; do
        touch "$root/dev/$node" && mount --bind "/dev/$node" "$root/dev/$node" || exit 1
    done &&
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot "$root" /usr/bin/tridentd --inactivity-timeout 0
' daemon-image "$DROOT" "$VOLUME" 2>"$WORK/daemon.err" &
DAEMON_NS=$!
for socket in listen.sock trident.sock; do
    answered=""
    for _ in $(seq 1 300); do
        if "$BIN_DIR/trident" --socket "$VOLUME/$socket" version >/dev/null 2>&1; then
            answered=1
            break
        fi
        sleep 0.1
    done
    if [ -n "$answered" ]; then
        echo "ok   daemon image answers on the volume: /run/trident/$socket"
    else
        echo "FAIL daemon image does not answer on /run/trident/$socket"
        sed 's/^/     | /' "$WORK/daemon.err" | tail -n 20
        FAILURES=$((FAILURES + 1))
    fi
done
# unshare ignores SIGTERM while it waits; stop the namespace's PID 1
# (tridentd, the container's entry point) as a container engine would.
for pid in $(cat "/proc/$DAEMON_NS/task/$DAEMON_NS/children" 2>/dev/null); do
    kill -TERM "$pid" 2>/dev/null || true
done
if wait "$DAEMON_NS"; then
    echo "ok   daemon image stops cleanly on SIGTERM"
else
    echo "FAIL daemon image exit status $? on SIGTERM"
    FAILURES=$((FAILURES + 1))
fi

if [ "$FAILURES" -gt 0 ]; then
    echo "container image test: $FAILURES failure(s)"
    exit 1
fi
echo "container image test: all passed"
