#!/usr/bin/env bash
# Demo: build release binaries, start a private tridentd on a temp socket and
# state dir (nothing on this machine is touched), talk to it with the
# `trident` CLI, stop it. Run as root: `bash scripts/demo.sh`.

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

step() { printf '\n==> %s\n' "$*"; }

step "building release binaries (tridentd, trident)"
cargo build --release --quiet -p tridentd -p trident-cli
TRIDENTD="$REPO/target/release/tridentd"
TRIDENT="$REPO/target/release/trident"

WORK="$(mktemp -d -t trident-demo.XXXXXX)"
SOCKET="$WORK/trident.sock"
STATE="$WORK/state"
mkdir -p "$STATE"
DAEMON_PID=""

cleanup() {
    if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -TERM "$DAEMON_PID" 2>/dev/null || true
        wait "$DAEMON_PID" 2>/dev/null || true
    fi
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

# The servicing demo (install / update / commit on disk images) goes here.

step "stopping tridentd (SIGTERM)"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" && echo "tridentd exited cleanly (0)"
DAEMON_PID=""
step "daemon log"
cat "$WORK/tridentd.log"
