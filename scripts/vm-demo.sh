#!/usr/bin/env bash
# VM demo: the VM scenario of issue 11 for a person to watch, driven like an
# orchestrator with the real `trident` CLI through the reverse-connect proxy.
# Run as root: `bash scripts/vm-demo.sh [--keep DIR]`.
#
#   1. release binaries -> trident.raw (system extension: tridentd, trident,
#      trident-rcp, the units); a throw-away PKI (trident-e2e-pki)
#   2. test OS v1 and v2 (Debian bookworm + systemd-boot; Trident only from
#      the extension; /etc/trident/rcp.yaml dials 10.0.2.100:7443), each
#      packed into a COSI with mkcosi
#   3. the installer disk: a private tridentd here StreamDisks v1 onto it
#   4. `trident rcp-listen` (the orchestrator side) and a UEFI VM (QEMU +
#      OVMF) with a blank disk and the installer; the guest's trident-rcp
#      dials in and its tridentd gets a local socket
#   5. `trident install` of v1 onto the blank disk, live progress; the VM
#      reboots itself into volume A, the commit service commits
#   6. `trident update` to v2, live progress; the VM tries volume B once,
#      the commit service commits: the OS says v2, the status volume B
#   7. `trident traces` of that commit: the update staged on A and its
#      commit on B, one span tree across the reboot (both boot ids)
#   8. a failing update (the scenario's step 4): `trident update` to v1
#      with a health check on a unit that never becomes active
#      (timeoutSeconds 15), live progress; the VM tries volume A once, the
#      commit service's health check fails, tridentd points the next boot
#      back at B and reboots: the VM comes back on v2 by itself, and
#      `trident get status` and `trident get last-error` say why (with
#      the recent logs of the commit that failed on A); `trident logs
#      --list-boots` lists every boot of the host and `trident traces` the
#      failing update, its failed commit on A and the settling commit on B
#      as one trace across two reboots
#
# TRIDENT_BIN_DIR=DIR uses the binaries in DIR (tridentd, trident,
# trident-rcp, mkcosi, trident-e2e-pki; e.g. target/debug) instead of
# building release binaries.
# --keep DIR keeps the COSI images (DIR/*.cosi), the disks, the serial log,
# the listener's events and the CLI's logs (cli-*.log) in DIR.
# Needs: qemu-system-x86 ovmf mmdebstrap mtools dosfstools squashfs-tools
# socat python3. Nothing on this machine is touched except
# /var/cache/trident-vm (the cached Debian tree) and files under the work
# directory.

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
for tool in qemu-system-x86_64 mmdebstrap mcopy mkfs.vfat mksquashfs socat python3; do
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
# Bars when a person watches, one line per change otherwise (logs).
if [ -t 2 ]; then PROGRESS=tty; else PROGRESS=plain; fi
# TCG on a shared machine: boots take minutes.
BOOT_TIMEOUT=${TRIDENT_DEMO_BOOT_TIMEOUT:-1500}

if [ -n "${TRIDENT_BIN_DIR:-}" ]; then
    BIN="$(realpath "$TRIDENT_BIN_DIR")"
    step "using the binaries in $BIN (TRIDENT_BIN_DIR)"
else
    step "building release binaries (tridentd, trident, trident-rcp, mkcosi, trident-e2e-pki)"
    cargo build --release --quiet -p tridentd -p trident-cli -p trident-rcp -p trident-cosi \
        -p trident-e2e --features trident-cosi/mkcosi --bin tridentd --bin trident \
        --bin trident-rcp --bin mkcosi --bin trident-e2e-pki
    BIN="$REPO/target/release"
fi
TRIDENT="$BIN/trident"

# --- 1-2: the images -------------------------------------------------------

step "packaging/sysext/build.sh: trident.raw (tridentd, trident, trident-rcp, units)"
bash packaging/sysext/build.sh --bin-dir "$BIN" --out "$WORK/trident.raw"

step "a throw-away PKI: CA, orchestrator.test, host trident-test (trident-e2e-pki)"
rm -rf "$WORK/pki"
mkdir -p "$WORK/pki"
"$BIN/trident-e2e-pki" "$WORK/pki" trident-test
ls "$WORK/pki"

build_version() { # VERSION: test OS image, then its COSI
    local v="$1"
    step "tests/vm/build-image.sh: test OS $v with the extension and the PKI (Debian tree cached in /var/cache/trident-vm)"
    bash tests/vm/build-image.sh --sysext "$WORK/trident.raw" --rcp "$WORK/pki" "$v" "$WORK/$v"
    (
        # shellcheck disable=SC1091
        . "$WORK/$v/image.env"
        "$BIN/mkcosi" --out "$WORK/$v.cosi" --os-release "$WORK/$v/os-release" \
            --filesystem "image=$ESP_IMAGE,mount=/boot/efi,fs=vfat,uuid=$ESP_FS_UUID,type=esp" \
            --filesystem "image=$ROOT_IMAGE,mount=/,fs=ext4,uuid=$ROOT_FS_UUID,type=root" \
            --boot-entry "$BOOT_ENTRY" --boot-entry-kernel "$KERNEL_RELEASE" \
            --boot-entry-cmdline "$CMDLINE" >"$WORK/$v.cosi.json"
    )
    echo "mkcosi --filesystem: $(ls -s --block-size=M "$WORK/$v.cosi")"
}
json_field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p" "$1" | head -n 1; }
count() { grep -ac "$1" "$2" 2>/dev/null || true; } # lines of FILE with PATTERN (0 if none)
build_version v1
build_version v2

# --- 3: the installer disk -------------------------------------------------

step "a private tridentd here StreamDisks v1 onto the installer disk (live progress)"
truncate -s "$(($(json_field "$WORK/v1.cosi.json" disk_size) + (64 << 20)))" "$WORK/installer.img"
HOST_SOCKET="$WORK/host-tridentd.sock"
mkdir -p "$WORK/host-state"
"$BIN/tridentd" --socket "$HOST_SOCKET" --state-dir "$WORK/host-state" --inactivity-timeout 0 \
    --disk "$WORK/installer.img" 2>"$WORK/host-tridentd.log" &
PIDS+=($!)
for _ in $(seq 1 200); do [ -S "$HOST_SOCKET" ] && break; sleep 0.05; done
"$TRIDENT" --socket "$HOST_SOCKET" stream-disk --progress "$PROGRESS" \
    --hash "$(json_field "$WORK/v1.cosi.json" metadata_sha384)" "file://$WORK/v1.cosi"

# --- 4: the orchestrator and the VM ----------------------------------------

step "trident rcp-listen: the orchestrator side (events in $WORK/rcp-events.jsonl)"
EVENTS="$WORK/rcp-events.jsonl"
: >"$EVENTS"
"$TRIDENT" rcp-listen --listen 127.0.0.1:0 --ca "$WORK/pki/ca.pem" \
    --cert "$WORK/pki/orchestrator.pem" --key "$WORK/pki/orchestrator.key" \
    --sockets-dir "$WORK/hosts" >"$EVENTS" 2>"$WORK/rcp-listen.log" &
PIDS+=($!)
for _ in $(seq 1 200); do grep -qs '"listening"' "$EVENTS" && break; sleep 0.05; done
RCP_PORT="$(json_field "$EVENTS" addr | sed 's/.*://')"
[ -n "$RCP_PORT" ] || { echo "rcp-listen did not start:" >&2; cat "$WORK/rcp-listen.log" >&2; exit 1; }
head -n 1 "$EVENTS"
GUEST="$WORK/hosts/trident-test.sock"

step "the image server (python3 http.server; the guest fetches http://10.0.2.2:PORT/v1.cosi)"
HTTP_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
python3 -m http.server --bind 127.0.0.1 --directory "$WORK" "$HTTP_PORT" >"$WORK/http.log" 2>&1 &
PIDS+=($!)
echo "serving $WORK on 127.0.0.1:$HTTP_PORT"

step "a UEFI VM: QEMU + OVMF (TCG, 1 GiB), a blank 2 GiB disk and the installer; serial console in $WORK/serial.log"
truncate -s 2G "$WORK/target.img"
cp /usr/share/OVMF/OVMF_VARS_4M.fd "$WORK/OVMF_VARS.fd"
rm -f "$WORK/serial.log"
# The guest's agent dials 10.0.2.100:7443 (an address of QEMU's user
# network); QEMU hands each such connection to a socat piped to the listener.
qemu-system-x86_64 -machine q35 -accel tcg -m 1024 -smp 2 -no-user-config \
    -display none -vga none -monitor none -serial "file:$WORK/serial.log" \
    -drive if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd \
    -drive "if=pflash,format=raw,unit=1,file=$WORK/OVMF_VARS.fd" \
    -netdev "user,id=net0,guestfwd=tcp:10.0.2.100:7443-cmd:socat - TCP:127.0.0.1:$RCP_PORT" \
    -device virtio-net-pci,netdev=net0 \
    -drive "if=none,id=disk0,format=raw,file=$WORK/target.img" -device virtio-blk-pci,drive=disk0,bootindex=0 \
    -drive "if=none,id=disk1,format=raw,file=$WORK/installer.img" -device virtio-blk-pci,drive=disk1,bootindex=1 \
    >"$WORK/qemu.log" 2>&1 &
QEMU_PID=$!
PIDS+=("$QEMU_PID")
BOOT_STARTED=$SECONDS

wait_marker() { # N: waits for the N-th ready marker and prints it
    local n="$1"
    until [ "$(count TRIDENT-TEST-OS-READY "$WORK/serial.log")" -ge "$n" ] 2>/dev/null; do
        kill -0 "$QEMU_PID" 2>/dev/null || { echo "QEMU exited; see $WORK/qemu.log" >&2; exit 1; }
        if [ $((SECONDS - BOOT_STARTED)) -gt "$BOOT_TIMEOUT" ]; then
            echo "no ready marker after $BOOT_TIMEOUT s; serial tail:" >&2
            tail -n 30 "$WORK/serial.log" >&2
            exit 1
        fi
        sleep 1
    done
    echo "boot $n: up after $((SECONDS - BOOT_STARTED)) s; the test OS says:"
    grep -a TRIDENT-TEST-OS-READY "$WORK/serial.log" | sed -n "${n}p" |
        sed 's/.*\(TRIDENT-TEST-OS-READY\)/    \1/'
}

wait_boot() { # N: waits for the N-th ready marker and the N-th connection of the host
    local n="$1"
    wait_marker "$n"
    until [ "$(count '"event":"connected"' "$EVENTS")" -ge "$n" ] 2>/dev/null; do
        if [ $((SECONDS - BOOT_STARTED)) -gt "$BOOT_TIMEOUT" ]; then
            echo "the guest's trident-rcp did not connect; events:" >&2
            cat "$EVENTS" >&2
            exit 1
        fi
        sleep 1
    done
    echo "the orchestrator sees it:"
    grep '"event":"connected"' "$EVENTS" | sed -n "${n}p" | sed 's/^/    /'
    # The socket appears with the event; give the CLI a moment to find it.
    for _ in $(seq 1 100); do [ -S "$GUEST" ] && break; sleep 0.1; done
}

wait_committed() { # VOLUME: polls the status until the commit service committed
    local status="" state seen=""
    for _ in $(seq 1 120); do
        # Bounded: right after a reboot the socket may still lead to the
        # tunnel of the boot before, until the new boot dials in.
        status="$(timeout 60 "$TRIDENT" --socket "$GUEST" get status 2>/dev/null || true)"
        state="$(sed -n 's/^servicingState: //p' <<<"$status")"
        if [ -n "$state" ] && [ "$state" != "$seen" ] && [ "$state" != provisioned ]; then
            echo "    servicing state: $state"
            seen="$state"
        fi
        if [ "$state" = provisioned ]; then
            grep -E '^(servicingState|abActiveVolume)' <<<"$status" | sed 's/^/    /'
            last_error_summary <<<"$status"
            grep -q "^abActiveVolume: $1" <<<"$status" && return 0
            echo "expected active volume $1" >&2
            exit 1
        fi
        sleep 5
    done
    echo "not provisioned after 10 minutes; last status:" >&2
    echo "$status" >&2
    exit 1
}

last_error_summary() { # the Host Status's lastError on stdin: category, subkind, message
    sed -n '/^lastError:/,/^[a-zA-Z]/p' |
        grep -E '^lastError|^ +(category|subkind|message):' | sed 's/^/    /'
}

# Runs `trident install|update CONFIG` through the tunnel with live progress
# until the daemon started the reboot. The CLI then waits for its own host
# to go down (it assumes it runs on the host, as upstream's does); here the
# host is the VM, so the demo stops it once the reboot has started.
service_and_reboot() {
    # One log per run: an older one would say "rebooting" already.
    local log="$WORK/cli-$(basename "$2" .yaml).log" cli rc
    rm -f "$log"
    "$TRIDENT" --socket "$GUEST" "$1" --progress "$PROGRESS" "$2" 2> >(tee "$log" >&2) &
    cli=$!
    until grep -qs 'the host is rebooting' "$log"; do
        if ! kill -0 "$cli" 2>/dev/null; then
            rc=0
            wait "$cli" || rc=$?
            [ "$rc" -eq 0 ] || { echo "trident $1 failed (exit $rc)" >&2; exit 1; }
            echo "trident $1 ended without a reboot" >&2
            exit 1
        fi
        sleep 1
    done
    kill -TERM "$cli" 2>/dev/null || true
    wait "$cli" 2>/dev/null || true
    BOOT_STARTED=$SECONDS
}

host_config() { # VERSION [UNIT TIMEOUT]: the Host Configuration installing/updating to it
    cat <<YAML
image:
  url: http://10.0.2.2:$HTTP_PORT/$1.cosi
  sha384: $(json_field "$WORK/$1.cosi.json" metadata_sha384)
storage:
  disks:
  - id: os
    device: /dev/vda
    partitions:
    - { id: esp, type: esp, size: 160M }
    - { id: root-a, type: root, size: 700M }
    - { id: root-b, type: root, size: 700M }
  abUpdate:
    volumePairs:
    - { id: root, volumeAId: root-a, volumeBId: root-b }
  filesystems:
  - { deviceId: esp, mountPoint: { path: /boot/efi, options: umask=0077 } }
  - { deviceId: root, mountPoint: / }
YAML
    # With UNIT: the commit after the reboot first waits up to TIMEOUT
    # seconds for UNIT to be active (a systemdServices health check).
    [ $# -lt 3 ] || cat <<YAML
health:
  checks:
  - name: units-up
    systemdServices: [$2]
    timeoutSeconds: $3
YAML
}

wait_boot 1
step "the installer's tridentd (from the extension), through $GUEST"
"$TRIDENT" --socket "$GUEST" version
"$TRIDENT" --socket "$GUEST" get status | grep -E 'servicingState' | sed 's/^/    /'

# --- 5: install ------------------------------------------------------------

host_config v1 >"$WORK/install-v1.yaml"
step "trident install: v1 onto /dev/vda (ESP, root-a, root-b as an A/B pair); the VM reboots itself"
service_and_reboot install "$WORK/install-v1.yaml"
step "the installed OS boots from the first disk (volume A) and dials in again"
wait_boot 2
step "the commit service commits on boot"
wait_committed volume-a

# --- 6: A/B update ---------------------------------------------------------

host_config v2 >"$WORK/update-v2.yaml"
step "trident update: v2 into volume B; the VM tries volume B once (LoaderEntryOneShot)"
service_and_reboot update "$WORK/update-v2.yaml"
step "the VM boots volume B and dials in again"
wait_boot 3
step "the commit service commits volume B"
wait_committed volume-b
step "/etc/os-release switched (each boot's ready line)"
grep -a TRIDENT-TEST-OS-READY "$WORK/serial.log" |
    sed 's/.*TRIDENT-TEST-OS-READY \(version=[^ ]*\).*\(entry=[^ ]*\).*/    \1 \2/'

# --- 7: the commit's span tree ---------------------------------------------

step "trident traces: the update to v2 (staged on A) and its commit (on B), one trace across the reboot"
"$TRIDENT" --socket "$GUEST" traces

# --- 8: a failing update comes back by itself ------------------------------

# A unit the test OS does not have: `systemctl is-active` says inactive forever.
NEVER_ACTIVE=trident-never-active.service
host_config v1 "$NEVER_ACTIVE" 15 >"$WORK/update-v1-failing.yaml"
step "trident update: v1 into volume A, with a health check on $NEVER_ACTIVE (the test OS has no such unit)"
sed -n '/^health:/,$p' "$WORK/update-v1-failing.yaml" | sed 's/^/    /'
service_and_reboot update "$WORK/update-v1-failing.yaml"
step "the VM tries volume A once: v1 boots from trident-volume-a.conf"
wait_marker 4
BOOT_STARTED=$SECONDS
step "the commit service's health check fails; tridentd points the next boot back at volume B and reboots by itself"
wait_marker 5
echo "the failed commit on the trial boot's console (serial.log):"
# The commit service writes to the console; its lines of boot 4 that tell
# what failed and what tridentd did about it.
awk '/TRIDENT-TEST-OS-READY/ { n++ } n == 4' "$WORK/serial.log" | tr -d '\r' |
    grep -aE 'trident\[[0-9]+\]: .*(phase Run health checks|datastore handed|commit failed|reboot starts|operation failed in|error: |while: )' |
    sed 's/^.*trident\[[0-9]*\]: /    /'
step "back on volume B: the commit service settles; trident get status"
wait_committed volume-b
grep '"event":"connected"' "$EVENTS" | tail -n 1 | sed 's/^/    connected: /'
step "trident get last-error: the structured error of the failed commit"
"$TRIDENT" --socket "$GUEST" get last-error
step "trident logs --list-boots: every boot of the host, as volume B's journal knows them"
"$TRIDENT" --socket "$GUEST" logs --list-boots
step "trident traces: the failing update, its failed commit on A and the commit that settled it on B, one trace"
"$TRIDENT" --socket "$GUEST" traces
step "/etc/os-release on the last three boots: v2 on B, the trial of v1 on A, v2 on B again"
grep -a TRIDENT-TEST-OS-READY "$WORK/serial.log" | tail -n 3 |
    sed 's/.*TRIDENT-TEST-OS-READY \(version=[^ ]*\).*\(root-partuuid=[^ ]*\).*\(entry=[^ ]*\).*/    \1 \3 \2/'

step "done"
[ -z "$KEEP" ] || echo "kept in $WORK: v1.cosi, v2.cosi, installer.img, target.img, serial.log, qemu.log, rcp-events.jsonl, cli-*.log"
