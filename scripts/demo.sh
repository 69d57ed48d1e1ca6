#!/usr/bin/env bash
# Demo: build release binaries, start a private tridentd on a temp socket and
# state dir (nothing on this machine is touched), talk to it with the
# `trident` CLI, stop it, and end with a short summary (operations,
# durations, results, last error) and where the full daemon log is kept.
# Run as root: `bash scripts/demo.sh`. DEMO_PROFILE=debug uses debug builds.

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

step() { printf '\n==> %s\n' "$*"; }

PROFILE="${DEMO_PROFILE:-release}"
case "$PROFILE" in
release) CARGO_PROFILE=(--release) ;;
debug) CARGO_PROFILE=() ;;
*) echo "DEMO_PROFILE must be release or debug" >&2; exit 2 ;;
esac
step "building $PROFILE binaries (tridentd, trident)"
cargo build "${CARGO_PROFILE[@]}" --quiet -p tridentd -p trident-cli
TRIDENTD="$REPO/target/$PROFILE/tridentd"
TRIDENT="$REPO/target/$PROFILE/trident"

WORK="$(mktemp -d -t trident-demo.XXXXXX)"
SOCKET="$WORK/trident.sock"
STATE="$WORK/state"
mkdir -p "$STATE"
DAEMON_PID=""
# The daemon's full log outlives the temp dir: the summary points here.
LOG_KEPT="${TMPDIR:-/tmp}/trident-demo-$(date +%Y%m%d-%H%M%S).log"
# One line per servicing command: "name|exit code|seconds".
RESULTS=()

cleanup() {
    if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -TERM "$DAEMON_PID" 2>/dev/null || true
        wait "$DAEMON_PID" 2>/dev/null || true
    fi
    [ -f "$WORK/tridentd.log" ] && cp "$WORK/tridentd.log" "$LOG_KEPT"
    rm -rf "$WORK"
}
trap cleanup EXIT

step "starting tridentd on $SOCKET (state in $STATE, log in $WORK/tridentd.log)"
"$TRIDENTD" --socket "$SOCKET" --state-dir "$STATE" --inactivity-timeout 10m \
    2>"$WORK/tridentd.log" &
DAEMON_PID=$!
for _ in $(seq 1 200); do
    [ -S "$SOCKET" ] && break
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
        echo "tridentd exited early:" >&2
        cat "$WORK/tridentd.log" >&2
        exit 1
    fi
    sleep 0.05
done
[ -S "$SOCKET" ] || { echo "tridentd did not create $SOCKET" >&2; exit 1; }

step "trident --socket $SOCKET version"
"$TRIDENT" --socket "$SOCKET" version

# --- Servicing demo (engine helper): install, A/B update, commit on a
# disk-image file. The daemon runs with the default `--reboot record`: it
# never reboots this machine; a reboot request is a line in
# STATE/reboot-requests.log and the volume to boot is kept in
# STATE/boot-record.json. We "reboot" by restarting tridentd: a pending
# reboot completes when the daemon starts (booted := nextBoot).
step "building mkcosi (COSI fixture writer)"
cargo build "${CARGO_PROFILE[@]}" --quiet -p trident-cosi --features mkcosi --bin mkcosi
MKCOSI="$REPO/target/$PROFILE/mkcosi"
cli() { "$TRIDENT" --socket "$SOCKET" "$@"; }
# A servicing command, timed; its result goes into the closing summary.
op() {
    local name="$1" started rc=0
    shift
    started="$(date +%s.%N)"
    cli "$@" || rc=$?
    RESULTS+=("$name|$rc|$(awk -v a="$(date +%s.%N)" -v b="$started" 'BEGIN { print a - b }')")
    return "$rc"
}
image_hash() { sed -n 's/.*"metadata_sha384":"\([0-9a-f]*\)".*/\1/p'; }

step "making two COSI images (v1, v2: ESP + root, 256 MiB disks) and a 600 MiB disk-image target"
V1_HASH="$("$MKCOSI" --out "$WORK/os-v1.cosi" --size 256MiB --seed 1 | image_hash)"
V2_HASH="$("$MKCOSI" --out "$WORK/os-v2.cosi" --size 256MiB --seed 2 | image_hash)"
ls -l "$WORK"/os-v*.cosi
truncate -s 600M "$WORK/disk.img"

host_config() { # $1 = image file, $2 = its metadata hash
    cat <<EOF
image:
  url: file://$1
  sha384: $2
storage:
  disks:
  - id: os
    device: $WORK/disk.img
    partitions:
    - { id: esp, type: esp, size: 8M }
    - { id: root-a, type: root, size: 280M }
    - { id: root-b, type: root, size: 280M }
  abUpdate:
    volumePairs:
    - { id: root, volumeAId: root-a, volumeBId: root-b }
  filesystems:
  - { deviceId: esp, mountPoint: { path: /boot/efi, options: umask=0077 } }
  - { deviceId: root, mountPoint: / }
scripts:
  preServicing:
  - { name: announce, runOn: [all], content: 'echo "servicing: \$TRIDENT_SERVICING_TYPE into \$TRIDENT_TARGET_VOLUME"' }
health:
  checks:
  - { name: smoke, runOn: [ab-update], content: 'echo "healthy on \$TRIDENT_TARGET_VOLUME"', timeoutSeconds: 10 }
EOF
}
host_config "$WORK/os-v1.cosi" "$V1_HASH" > "$WORK/host-config-v1.yaml"
host_config "$WORK/os-v2.cosi" "$V2_HASH" > "$WORK/host-config-v2.yaml"
echo "Host Configuration ($WORK/host-config-v1.yaml):"
sed 's/^/    /' "$WORK/host-config-v1.yaml"

restart_daemon() { # the simulated reboot
    kill -TERM "$DAEMON_PID"
    wait "$DAEMON_PID" || true
    "$TRIDENTD" --socket "$SOCKET" --state-dir "$STATE" --inactivity-timeout 10m \
        2>>"$WORK/tridentd.log" &
    DAEMON_PID=$!
    for _ in $(seq 1 200); do
        cli version >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "tridentd did not come back" >&2
    exit 1
}

step "trident validate host-config-v1.yaml"
cli validate "$WORK/host-config-v1.yaml"

step "trident install host-config-v1.yaml (live progress)"
op "install v1" install "$WORK/host-config-v1.yaml"
step "trident get status (after install)"
cli get status | grep -E '^(servicingState|abActiveVolume):'
echo "boot record: $(tr -d ' \n' < "$STATE/boot-record.json")"

step "\"reboot\" into volume A (restart tridentd), then trident commit"
restart_daemon
op "commit A" commit
cli get status | grep -E '^(servicingState|abActiveVolume):'

step "trident update host-config-v2.yaml: writes root-b, root-a untouched"
op "update v2" update "$WORK/host-config-v2.yaml"
cli get status | grep -E '^(servicingState|abActiveVolume):'
echo "boot record: $(tr -d ' \n' < "$STATE/boot-record.json")"
echo "reboot requests so far:"
sed 's/^/    /' "$STATE/reboot-requests.log"

step "\"reboot\" into volume B (restart tridentd), then trident commit (runs the health check)"
restart_daemon
op "commit B" commit

step "trident get status"
cli get status
step "trident get last-error"
cli get last-error
step "trident traces (span tree of the last operation, from the telemetry bus)"
cli traces
step "trident logs -n 8 (the bus's last log records; --cursor-file resumes)"
cli logs -n 8

LAST_ERROR="$(cli get last-error 2>&1 | head -n 1)"
if [ "$LAST_ERROR" = null ]; then LAST_ERROR=""; fi
step "stopping tridentd (SIGTERM)"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" && echo "tridentd exited cleanly (0)"
DAEMON_PID=""

summary() {
    step "summary"
    printf '    %-12s %-8s %s\n' command result duration
    local line name rc secs
    for line in "${RESULTS[@]}"; do
        IFS='|' read -r name rc secs <<<"$line"
        printf '    %-12s %-8s %.1fs\n' "$name" "$([ "$rc" = 0 ] && echo ok || echo "exit $rc")" "$secs"
    done
    echo "    operations in the daemon's log (op id, rpc, result):"
    grep -E 'trident::operation: servicing operation (completed|failed)' "$WORK/tridentd.log" |
        sed -E 's/^.* op=([0-9a-f]+) trident::operation: servicing operation ([a-z]+).*rpc="?([A-Za-z]+).*$/      \1  \3  \2/' || true
    echo "    last error: ${LAST_ERROR:-none}"
    echo "    full daemon log: $LOG_KEPT ($(wc -l <"$WORK/tridentd.log") lines)"
}
summary
