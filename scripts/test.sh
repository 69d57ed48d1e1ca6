#!/usr/bin/env bash
# The project's whole check, as CI runs it (.ci/run execs this) and as a
# developer runs it: `bash scripts/test.sh`.
#
# Installs what the tests need (idempotent: only what is missing), then
# format, lint, build, Rust tests, proto lint/breaking, Python client tests.
# Stops at the first failing section and says which one.
#
# Runs as root on a fresh machine with CI=true and no stdin.
# Env: SKIP_INSTALL=1 skips the install section (offline re-runs).
#      SKIP_VM=1 skips the VM section (boots UEFI VMs; needs ~4 min and, on
#      the first run, network for the test OS packages).

set -Eeuo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# A one-off build (CI's fresh clone) gains nothing from incremental
# compilation: it only writes its caches (tens of GB over a run) and slows
# the cold build. A developer's own setting is kept.
if [ "${CI:-}" = true ]; then
    export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
fi
export DEBIAN_FRONTEND=noninteractive
VENV="$REPO/.venv"
# buf from npm: the linux-x64 package directly (see package.json).
BUF="$REPO/node_modules/@bufbuild/buf-linux-x64/bin/buf"
PY_REQUIREMENTS="tests/python/requirements.txt"
LOG_DIR="$(mktemp -d -t trident-test.XXXXXX)"
CURRENT_SECTION="start"
STARTED_AT=$SECONDS

# Each section's start, for the table of section times printed at the end
# (and on a failure): the README's "Test times" states the latest cold run.
SECTION_NAMES=()
SECTION_STARTS=()
section() {
    CURRENT_SECTION="$1"
    SECTION_NAMES+=("$1")
    SECTION_STARTS+=("$((SECONDS - STARTED_AT))")
    printf '\n===== %s [%ss] =====\n' "$1" "$((SECONDS - STARTED_AT))"
}

# | seconds | section |, one row per section, the last one up to now.
section_table() {
    local i end n=${#SECTION_NAMES[@]}
    printf '\n| seconds | section |\n|---:|---|\n'
    for ((i = 0; i < n; i++)); do
        if ((i + 1 < n)); then end=${SECTION_STARTS[i + 1]}; else end=$((SECONDS - STARTED_AT)); fi
        printf '| %d | %s |\n' "$((end - SECTION_STARTS[i]))" "${SECTION_NAMES[i]%% (*}"
    done
    printf '| %d | total |\n' "$((SECONDS - STARTED_AT))"
}

# The fuzz targets' background build (see the VM section), if running.
FUZZ_BUILD_PID=""
stop_background() {
    [ -z "$FUZZ_BUILD_PID" ] || kill -- "-$FUZZ_BUILD_PID" 2>/dev/null || true
}
trap stop_background EXIT

on_error() {
    local rc=$?
    printf '\n***** FAILED in section: %s (exit %s) *****\n' "$CURRENT_SECTION" "$rc" >&2
    section_table >&2
    exit "$rc"
}
trap on_error ERR

have() { command -v "$1" >/dev/null 2>&1; }

# ---------------------------------------------------------------------------
# Install (only what is missing)
# ---------------------------------------------------------------------------

APT_UPDATED=0
apt_install() {
    if [ "$APT_UPDATED" = 0 ]; then
        apt-get update -qq
        APT_UPDATED=1
    fi
    apt-get install -y -qq --no-install-recommends "$@" </dev/null
}

# command -> Debian package providing it
declare -A APT_FOR_COMMAND=(
    [systemd-socket-activate]=systemd   # socket activation e2e test
    [systemd-analyze]=systemd           # unit file verification
    [setpriv]=util-linux                # non-root e2e tests
    [tmux]=tmux                         # CLI terminal tests
    [zstd]=zstd                         # COSI fixtures
    [openssl]=openssl                   # HTTPS image source test (test CA)
    [mmdebstrap]=mmdebstrap             # container image root filesystem
    [umoci]=umoci                       # OCI image archive packing
    [unshare]=util-linux                # container image test (namespaces)
    [mount]=mount                       # tmpfs of the full-disk fault tests
    [promtool]=prometheus               # dashboard/metrics checks
    [chromium]=chromium                 # diagnose report.html opened headless (cli_report)
    [git]=git
    [npm]=npm
    [node]=nodejs
    [python3]=python3
    [ssh-keygen]=openssh-client         # VM scenario: the os.users SSH key
    # VM scenario (tests/tests/vm/vm_scenario.rs): the test OS, its sysext, QEMU.
    [qemu-system-x86_64]=qemu-system-x86
    [mmdebstrap]=mmdebstrap
    [mkfs.ext4]=e2fsprogs
    [debugfs]=e2fsprogs
    [mkfs.vfat]=dosfstools
    [mcopy]=mtools
    [objcopy]=binutils                  # VM test OS with a UKI (build-image.sh --bootloader uki)
    [veritysetup]=cryptsetup-bin        # dm-verity hash trees (mkcosi --filesystem ...,verity=yes)
    [mksquashfs]=squashfs-tools
    [strip]=binutils
    [socat]=socat                       # QEMU guestfwd to the reverse-connect listener (tests/src/vm/)
    [swtpm]=swtpm                       # the VMs' software TPM 2.0 (tests/src/vm/swtpm.rs; encryption scenarios)
    [swtpm_setup]=swtpm-tools
    # OS configuration and new storage in the new root (servicing_os_config.rs).
    [useradd]=passwd
    [mkswap]=util-linux
    [blkid]=util-linux
    [mkfs.xfs]=xfsprogs
    # tridentd's new-root step and UEFI boot control (servicing_new_root).
    [losetup]=mount
    [resize2fs]=e2fsprogs
    [dumpe2fs]=e2fsprogs
    [mtype]=mtools
    [busybox]=busybox-static            # the mini OS's /bin/sh (chrooted postConfigure)
    [sfdisk]=fdisk                      # adopted partitions: a disk laid out by another partitioner
    # oci:// image sources (oci_image_source.rs): a local registry, its users.
    [docker-registry]=docker-registry
    [htpasswd]=apache2-utils
    # Upstream's trident-proto build script (tests/upstream-api/) runs protoc.
    [protoc]=protobuf-compiler
)
# file -> Debian package providing it (packages without a command)
declare -A APT_FOR_FILE=(
    [/usr/share/OVMF/OVMF_CODE_4M.fd]=ovmf    # UEFI firmware of the VMs
    # systemd-cryptenroll into a software TPM (block_device::encryption tests).
    [/usr/lib/x86_64-linux-gnu/libtss2-tcti-swtpm.so.0]=libtss2-tcti-swtpm0
    # systemd-cryptenroll loads these at run time ("TPM2 support not installed" without them).
    [/usr/lib/x86_64-linux-gnu/libtss2-esys.so.0]=libtss2-esys-3.0.2-0
    [/usr/lib/x86_64-linux-gnu/libtss2-rc.so.0]=libtss2-rc0
    [/usr/sbin/cryptsetup]=cryptsetup-bin
)

install_system_packages() {
    local missing=() command package file
    for command in "${!APT_FOR_COMMAND[@]}"; do
        package="${APT_FOR_COMMAND[$command]}"
        if ! have "$command" && [[ " ${missing[*]} " != *" $package "* ]]; then
            missing+=("$package")
        fi
    done
    for file in "${!APT_FOR_FILE[@]}"; do
        package="${APT_FOR_FILE[$file]}"
        if [ ! -e "$file" ] && [[ " ${missing[*]} " != *" $package "* ]]; then
            missing+=("$package")
        fi
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "apt-get install: ${missing[*]}"
        apt_install "${missing[@]}"
    else
        echo "system packages: all present"
    fi
}

# Re-runs an install step only when its input file changed (hash stamp).
stamp_matches() {
    local input="$1" stamp="$2"
    [ -f "$stamp" ] && [ "$(sha256sum "$input" | cut -d' ' -f1)" = "$(cat "$stamp")" ]
}
write_stamp() { sha256sum "$1" | cut -d' ' -f1 >"$2"; }

install_python_packages() {
    if [ ! -x "$VENV/bin/python" ]; then
        if ! python3 -m venv "$VENV" 2>/dev/null; then
            rm -rf "$VENV"
            apt_install python3-venv
            python3 -m venv "$VENV"
        fi
    fi
    local stamp="$VENV/.requirements.sha256"
    if stamp_matches "$PY_REQUIREMENTS" "$stamp"; then
        echo "python packages: up to date"
    else
        "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$PY_REQUIREMENTS"
        write_stamp "$PY_REQUIREMENTS" "$stamp"
    fi
}

install_node_packages() {
    local stamp="node_modules/.package-lock.sha256"
    if stamp_matches package-lock.json "$stamp"; then
        echo "node packages: up to date"
    else
        npm ci --no-audit --no-fund --loglevel=error
        write_stamp package-lock.json "$stamp"
    fi
}

# cargo-fuzz (from crates.io) when a nightly toolchain is there: fuzzing
# needs nightly's sanitizer flags; a nightly cannot be downloaded here, so
# without one the fuzz section says it is skipped.
have_nightly() { rustup run nightly rustc --version >/dev/null 2>&1; }
install_cargo_fuzz() {
    if ! have_nightly; then
        echo "cargo-fuzz: no nightly toolchain, not installed (fuzz section will be skipped)"
    elif cargo fuzz --version >/dev/null 2>&1; then
        echo "cargo-fuzz: present"
    else
        cargo install cargo-fuzz --locked --quiet || echo "cargo-fuzz: install failed (fuzz section will be skipped)"
    fi
}

if [ "${SKIP_INSTALL:-0}" != 1 ]; then
    section "install: system packages"
    install_system_packages
    section "install: python packages (.venv)"
    install_python_packages
    section "install: node packages (npm ci)"
    install_node_packages
    section "install: cargo-fuzz"
    install_cargo_fuzz
    # Other install steps the tests need go here (one function call each).
fi

# ---------------------------------------------------------------------------
# Rust
# ---------------------------------------------------------------------------

section "cargo fmt --check"
cargo fmt --all -- --check

section "cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings

section "cargo build (binaries for the e2e tests)"
cargo build --workspace --bins --quiet

section "upstream's Host Status deserializer (tests/upstream-api/, a workspace of its own)"
# Upstream's trident_api, vendored, and our upstream-host-status over it:
# the upstream_datastores tests of trident-host run it on every row
# tridentd writes into upstream's table (skipped when the variable is
# unset). Debug: quicker cold than release (tests/README.md).
UPSTREAM_API_TARGET="$REPO/target/upstream-api"
cargo build --manifest-path tests/upstream-api/Cargo.toml --locked --quiet \
    --target-dir "$UPSTREAM_API_TARGET" -p upstream-host-status
export UPSTREAM_HOST_STATUS="$UPSTREAM_API_TARGET/debug/upstream-host-status"

section "upstream's Go reverse-connect proxy (Debian's Go in a trixie chroot; cached)"
# Built from upstream's source (tests/upstream-rcp/) for the rcp tests'
# interop with it (tests/tests/rcp/rcp_upstream_go.rs); they say SKIPPED
# without UPSTREAM_RCP_DIR. Cold (chroot download + go build): 83 s on a
# 2-core machine at load 3.5 (tests/README.md); cached: 0.1 s.
UPSTREAM_RCP_DIR="$(bash scripts/build-upstream-rcp.sh)"
export UPSTREAM_RCP_DIR

section "cargo test"
TEST_LOG="$LOG_DIR/cargo-test.log"
if have cargo-nextest; then
    # nextest runs each test in its own process and prints its own summary.
    cargo nextest run --workspace --no-fail-fast --failure-output final 2>&1 | tee "$TEST_LOG"
    cargo test --workspace --doc --quiet 2>&1 | tee -a "$TEST_LOG"
else
    cargo test --workspace --no-fail-fast 2>&1 | tee "$TEST_LOG"
    awk '/^test result:/ { p += $4; f += $6 } END { printf "cargo test summary: %d passed, %d failed\n", p, f }' "$TEST_LOG"
fi

# ---------------------------------------------------------------------------
# VM scenario: the real test OS boots in a UEFI VM (QEMU + OVMF, TCG)
# ---------------------------------------------------------------------------

# The fuzz targets' sanitizer build (nightly, ~6 min of both cores) runs
# beside the VM section at the lowest priority: a TCG guest keeps about one
# core busy, so the build takes the other one's idle time instead of
# adding its minutes to the run. The fuzz section waits for it.
FUZZ_SECONDS="${FUZZ_SECONDS:-30}"
FUZZ_BUILD_LIMIT="${FUZZ_BUILD_LIMIT:-2400}"
FUZZ_START_BEFORE="${FUZZ_START_BEFORE:-3200}"
FUZZ_BUILD_LOG="$LOG_DIR/fuzz-build.log"
fuzz_available() {
    [ "${SKIP_FUZZ:-0}" != 1 ] && have_nightly && cargo fuzz --version >/dev/null 2>&1
}
if fuzz_available; then
    section "fuzz: build every target in the background (nice 19, at most ${FUZZ_BUILD_LIMIT}s; log $FUZZ_BUILD_LOG)"
    # setsid: its own process group, ended as a whole on a failure.
    setsid bash -c "cd fuzz && exec nice -n 19 timeout $FUZZ_BUILD_LIMIT cargo +nightly fuzz build" \
        >"$FUZZ_BUILD_LOG" 2>&1 </dev/null &
    FUZZ_BUILD_PID=$!
fi

# The VM tests, longest first, so that the time guard below can only ever
# hold back short ones. A VM test not named here runs after these.
VM_TEST_ORDER=(
    vm_scenario::upstreams_advanced_sample_installs_v1_updates_to_v2_and_rolls_back_a_failing_update
    vm_raid::upstreams_raid_mirrored_sample_installs_and_boots_with_every_array_clean
    vm_encryption::upstreams_encryption_sample_installs_and_boots_with_srv_unlocked_by_the_tpm
    vm_verity::upstreams_verity_sample_boots_a_verified_read_only_root_and_a_flipped_byte_fails_its_reads
    vm_scenario::a_disk_written_by_stream_disk_boots_v1_with_tridentd_from_the_sysext
    vm_raid::upstreams_raid_sample_installs_and_boots_with_root_on_a_mirror
    vm_samples::upstreams_base_sample_installs_and_boots_with_srv_unlocked_by_the_tpm
    vm_samples::upstreams_basic_sample_installs_and_boots
    vm_samples::upstreams_simple_sample_installs_boots_and_passes_its_health_checks
)
# A VM test starts only before this many seconds of the run: the hard limit
# of a CI run is 90 minutes, and on a slow machine the section alone took
# 62 minutes (tests/README.md, "The test command's VM budget"). Past it the
# rest are listed as SKIPPED, in the log and in the section table.
VM_START_BEFORE="${VM_START_BEFORE:-4500}"
VM_SKIPPED=()

# Every VM test not named matrix_*, in VM_TEST_ORDER's order.
vm_tests_in_order() {
    local listed name
    listed="$(cargo nextest list -p trident-e2e --test vm --run-ignored only \
        -E 'not test(/::matrix_/)' --message-format oneline | awk '{print $2}')"
    for name in "${VM_TEST_ORDER[@]}"; do
        grep -qxF "$name" <<<"$listed" && echo "$name"
    done
    grep -vxF -f <(printf '%s\n' "${VM_TEST_ORDER[@]}") <<<"$listed" || true
}

if [ "${SKIP_VM:-0}" != 1 ]; then
    section "VM scenarios: list the VM tests (serial logs in target/vm-artifacts/)"
    # #[ignore]d in the plain test run above because they take minutes.
    # Every VM test not named matrix_*: each of upstream's eight samples
    # installs and boots (raid-mirrored: its install and boot alone), advanced runs
    # its install / A/B update / rollback in full, a StreamDisk'd disk
    # boots. The matrix_* tests are scripts/vm-matrix.sh's. The budget and
    # its shares: tests/README.md, "The test command's VM budget".
    # The scenarios share one build of the test OS (tests/src/test_os/cache.rs);
    # the first test to run builds it.
    # One retry: under TCG a guest rarely stalls in the firmware or the
    # boot loader between two kernels (tests/src/vm/reboot_stall.rs);
    # the harness fails such a wait within minutes and says so, and
    # nextest reports a test that passed on its retry as FLAKY.
    # The vm binary's tests are named FILE::TEST (tests/tests/vm/FILE.rs).
    if have cargo-nextest; then
        mapfile -t VM_TESTS < <(vm_tests_in_order)
        if [ ${#VM_TESTS[@]} -eq 0 ]; then
            echo "no VM test listed (cargo nextest list failed?)" >&2
            exit 1
        fi
        for name in "${VM_TESTS[@]}"; do
            if [ $((SECONDS - STARTED_AT)) -gt "$VM_START_BEFORE" ]; then
                VM_SKIPPED+=("$name")
                continue
            fi
            section "VM: $name"
            cargo nextest run -p trident-e2e --test vm --run-ignored only --no-capture \
                --retries 1 -E "test(=$name)"
        done
        if [ ${#VM_SKIPPED[@]} -gt 0 ]; then
            section "VM: SKIPPED, the run is past ${VM_START_BEFORE}s: ${VM_SKIPPED[*]}"
            for name in "${VM_SKIPPED[@]}"; do
                printf 'VM test SKIPPED (the run is past %ss): %s\n' "$VM_START_BEFORE" "$name" >&2
            done
        fi
    else
        cargo test -p trident-e2e --test vm -- --ignored --nocapture --skip matrix_
    fi
fi

section "dashboards check (Grafana JSON, promtool, metric names seen by the OTLP receiver test)"
python3 dashboards/check.py

# ---------------------------------------------------------------------------
# Protobuf contract
# ---------------------------------------------------------------------------

section "buf lint"
"$BUF" lint proto

section "buf breaking"
# 1. Against the upstream-only contract (proto/upstream-contract/, WIRE_JSON
#    from proto/buf.yaml): a client built from upstream's schema keeps
#    working. buf refuses an input nested inside the proto/ module, so the
#    baseline is checked from a temp copy.
UPSTREAM_CONTRACT="$(mktemp -d -t trident-upstream-contract.XXXXXX)"
cp -r proto/upstream-contract/. "$UPSTREAM_CONTRACT/"
echo "buf breaking against the upstream-only contract (proto/upstream-contract)"
"$BUF" breaking proto --against "$UPSTREAM_CONTRACT"
rm -rf "$UPSTREAM_CONTRACT"

# 2. Against the previous commit: nothing we released changes under anyone.
#    Commits from before the upstream-contract baseline existed used the old
#    numbering of our additions (moved to 1000+ once, before any release;
#    proto/README.md), so they are not a valid baseline and are skipped.
breaking_against() {
    local ref="$1" label="$2"
    if ! git rev-parse --verify --quiet "$ref^{commit}" >/dev/null; then
        echo "buf breaking against $label: commit not in this clone (shallow?), skipped"
    elif ! git cat-file -e "$ref:proto/upstream-contract" 2>/dev/null; then
        echo "buf breaking against $label: predates the 1000+ renumbering of our additions, skipped"
    else
        echo "buf breaking against $label ($(git rev-parse --short "$ref"))"
        "$BUF" breaking proto --against ".git#ref=$(git rev-parse "$ref"),subdir=proto"
    fi
}
if git rev-parse --git-dir >/dev/null 2>&1; then
    breaking_against "HEAD~1" "the previous commit"
else
    echo "not a git checkout: buf breaking against the previous commit skipped"
fi

# ---------------------------------------------------------------------------
# Python client tests
# ---------------------------------------------------------------------------

section "pytest tests/python"
set +e
"$VENV/bin/python" -m pytest -q tests/python
PYTEST_RC=$?
set -e
# 5 = no tests collected: that is a failure of this script's promise too.
if [ "$PYTEST_RC" -ne 0 ]; then
    CURRENT_SECTION="pytest tests/python"
    false
fi

section "container image (combined root filesystem under unshare + chroot)"
# Builds the image's root filesystem (Debian base cached by its inputs in
# /var/cache/trident-container; the first run downloads it) and runs
# version / validate / stream-disk through the entry point.
BIN_DIR="$REPO/target/debug" bash scripts/test-container.sh

# ---------------------------------------------------------------------------
# Fuzzing: a short run of every target in fuzz/ (docs/reliability.md,
# "Fuzzing", says how to run them longer). New inputs go to a temp dir, not the seed corpus.
# Last, and bounded: the sanitizer build (started in the background before
# the VM section) may take FUZZ_BUILD_LIMIT seconds; past that, or when the
# run is already past FUZZ_START_BEFORE seconds, the section says it
# skipped instead of pushing the whole check past its time budget. The
# start line (3200 s) leaves the runs (5 x 30 s) and the sections after
# them inside the 60 minutes a cold run may take (tests/README.md, "The
# test command's VM budget"). A target that finds a crash fails.
# ---------------------------------------------------------------------------

if ! fuzz_available; then
    if [ "${SKIP_FUZZ:-0}" = 1 ]; then
        section "fuzz: skipped (SKIP_FUZZ=1)"
    else
        section "fuzz: SKIPPED, no nightly toolchain or cargo-fuzz could not be installed"
    fi
elif [ $((SECONDS - STARTED_AT)) -gt "$FUZZ_START_BEFORE" ]; then
    section "fuzz: SKIPPED, the run is already past ${FUZZ_START_BEFORE}s"
else
    section "fuzz: wait for the build of every target (nightly, address sanitizer)"
    FUZZ_BUILD_RC=0
    if [ -n "$FUZZ_BUILD_PID" ]; then
        wait "$FUZZ_BUILD_PID" || FUZZ_BUILD_RC=$?
        FUZZ_BUILD_PID=""
    else
        (cd fuzz && timeout "$FUZZ_BUILD_LIMIT" cargo +nightly fuzz build) >"$FUZZ_BUILD_LOG" 2>&1 ||
            FUZZ_BUILD_RC=$?
    fi
    tail -n 5 "$FUZZ_BUILD_LOG"
    if [ "$FUZZ_BUILD_RC" = 124 ]; then
        section "fuzz: SKIPPED, the build took longer than ${FUZZ_BUILD_LIMIT}s (raise FUZZ_BUILD_LIMIT)"
    elif [ "$FUZZ_BUILD_RC" != 0 ]; then
        cat "$FUZZ_BUILD_LOG" >&2
        echo "fuzz: build failed (exit $FUZZ_BUILD_RC)" >&2
        false
    else
        for target in $(cd fuzz && cargo +nightly fuzz list); do
            section "fuzz: $target for ${FUZZ_SECONDS}s"
            mkdir -p "$LOG_DIR/fuzz/$target"
            # -malloc_limit_mb: one allocation over 256 MiB from a small input is a finding.
            (cd fuzz && cargo +nightly fuzz run "$target" "$LOG_DIR/fuzz/$target" "corpus/$target" -- \
                -max_total_time="$FUZZ_SECONDS" -malloc_limit_mb=256 -rss_limit_mb=2048 \
                -artifact_prefix="$LOG_DIR/fuzz/$target-" -print_final_stats=1 2>&1 | tail -n 25)
        done
    fi
fi

section "done"
section_table
echo "all checks passed in $((SECONDS - STARTED_AT))s"
