#!/usr/bin/env bash
# VM demo: the real test OS under UEFI firmware, for a person to watch.
# Run as root: `bash scripts/vm-demo.sh [--keep DIR]`.
#
# What it shows today (the first step of the VM scenario, issue 11):
#   1. release binaries -> trident.raw (systemd system extension)
#   2. test OS v1 (Debian bookworm + systemd-boot; tridentd only from the
#      extension) as ESP + root images, packed into a COSI with mkcosi
#   3. a private tridentd on this machine StreamDisks the COSI onto a
#      disk-image file, with live progress from the real `trident` CLI
#   4. QEMU + OVMF boots that disk; the serial console says which version
#      runs; `trident version` / `get status` talk to the guest's tridentd
# Install, A/B update, commit and rollback inside the VM need the engine's
# UEFI boot-control backend, which does not exist yet.
#
# TRIDENT_BIN_DIR=DIR uses tridentd, trident and mkcosi from DIR instead of
# building release binaries (e.g. target/debug).
# --keep DIR keeps the COSI (DIR/*.cosi), the disk and the serial log in DIR.
# Needs: qemu-system-x86 ovmf mmdebstrap mtools dosfstools squashfs-tools socat.
# Nothing on this machine is touched except /var/cache/trident-vm (the cached
# Debian tree) and files under the work directory.

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
KEEP=""
while [ $# -gt 0 ]; do
    case "$1" in
    --keep) KEEP="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

step() { printf '\n==> %s\n' "$*"; }
for tool in qemu-system-x86_64 mmdebstrap mcopy mkfs.vfat mksquashfs socat; do
    command -v "$tool" >/dev/null || { echo "missing $tool (see --help for packages)" >&2; exit 1; }
done

if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP"
    WORK="$(realpath "$KEEP")"
else
    WORK="$(mktemp -d -t trident-vm-demo.XXXXXX)"
fi
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    [ -n "$KEEP" ] || rm -rf "$WORK"
}
trap cleanup EXIT

if [ -n "${TRIDENT_BIN_DIR:-}" ]; then
    BIN="$(realpath "$TRIDENT_BIN_DIR")"
    step "using the binaries in $BIN (TRIDENT_BIN_DIR)"
else
    step "building release binaries (tridentd, trident, mkcosi)"
    cargo build --release --quiet -p tridentd -p trident-cli -p trident-cosi \
        --bin tridentd --bin trident --bin mkcosi
    BIN="$REPO/target/release"
fi
TRIDENT="$BIN/trident"

step "packaging/sysext/build.sh: trident.raw (tridentd, trident, units)"
bash packaging/sysext/build.sh --bin-dir "$BIN" --out "$WORK/trident.raw"

step "tests/vm/build-image.sh: test OS v1 with the extension (Debian tree cached in /var/cache/trident-vm)"
bash tests/vm/build-image.sh --sysext "$WORK/trident.raw" v1 "$WORK/v1"
# shellcheck disable=SC1091
. "$WORK/v1/image.env"

step "mkcosi --filesystem: pack ESP + root into $WORK/v1.cosi"
"$BIN/mkcosi" --out "$WORK/v1.cosi" --os-release "$WORK/v1/os-release" \
    --filesystem "image=$ESP_IMAGE,mount=/boot/efi,fs=vfat,uuid=$ESP_FS_UUID,type=esp" \
    --filesystem "image=$ROOT_IMAGE,mount=/,fs=ext4,uuid=$ROOT_FS_UUID,type=root" \
    --boot-entry "$BOOT_ENTRY" --boot-entry-kernel "$KERNEL_RELEASE" --boot-entry-cmdline "$CMDLINE" \
    >"$WORK/v1.cosi.json"
HASH="$(sed -n 's/.*"metadata_sha384":"\([0-9a-f]*\)".*/\1/p' "$WORK/v1.cosi.json")"
DISK_SIZE="$(sed -n 's/.*"disk_size":\([0-9]*\).*/\1/p' "$WORK/v1.cosi.json")"
ls -l "$WORK/v1.cosi"

step "a private tridentd StreamDisks v1 onto $WORK/disk.img (live progress)"
truncate -s "$((DISK_SIZE + (256 << 20)))" "$WORK/disk.img"
SOCKET="$WORK/host-tridentd.sock"
mkdir -p "$WORK/host-state"
"$BIN/tridentd" --socket "$SOCKET" --state-dir "$WORK/host-state" --inactivity-timeout 0 \
    --disk "$WORK/disk.img" 2>"$WORK/host-tridentd.log" &
PIDS+=($!)
for _ in $(seq 1 200); do [ -S "$SOCKET" ] && break; sleep 0.05; done
"$TRIDENT" --socket "$SOCKET" stream-disk --hash "$HASH" "file://$WORK/v1.cosi"

step "booting the disk: QEMU + OVMF (TCG, 1 GiB); serial console in $WORK/serial.log"
cp /usr/share/OVMF/OVMF_VARS_4M.fd "$WORK/OVMF_VARS.fd"
rm -f "$WORK/serial.log"
PORT=$((20000 + RANDOM % 20000))
qemu-system-x86_64 -machine q35 -accel tcg -m 1024 -smp 2 -no-user-config \
    -display none -vga none -monitor none -serial "file:$WORK/serial.log" \
    -drive if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd \
    -drive "if=pflash,format=raw,unit=1,file=$WORK/OVMF_VARS.fd" \
    -netdev "user,id=net0,hostfwd=tcp:127.0.0.1:$PORT-:7000" -device virtio-net-pci,netdev=net0 \
    -drive "if=none,id=disk0,format=raw,file=$WORK/disk.img" -device virtio-blk-pci,drive=disk0,bootindex=0 \
    >"$WORK/qemu.log" 2>&1 &
PIDS+=($!)
STARTED=$SECONDS
until grep -aqs TRIDENT-TEST-OS-READY "$WORK/serial.log"; do
    sleep 1
    if [ $((SECONDS - STARTED)) -gt 600 ]; then
        echo "no ready marker after 600 s; serial tail:" >&2
        tail -n 30 "$WORK/serial.log" >&2
        exit 1
    fi
done
echo "booted in $((SECONDS - STARTED)) s:"
grep -a TRIDENT-TEST-OS-READY "$WORK/serial.log" | sed 's/^/    /'

step "the guest's tridentd (from the extension), through a forwarded socket"
GUEST="$WORK/guest-tridentd.sock"
socat "UNIX-LISTEN:$GUEST,fork" "TCP:127.0.0.1:$PORT" &
PIDS+=($!)
for _ in $(seq 1 60); do "$TRIDENT" --socket "$GUEST" version >/dev/null 2>&1 && break; sleep 2; done
"$TRIDENT" --socket "$GUEST" version
"$TRIDENT" --socket "$GUEST" get status

step "done"
[ -z "$KEEP" ] || echo "kept in $WORK: v1.cosi, disk.img, serial.log, qemu.log"
