#!/usr/bin/env bash
# The long VM scenarios (QEMU + OVMF under TCG: minutes each), one at a
# time, each under the machine's VM lock (`flock /tmp/trident-vm.lock`),
# then a results table (scenario, result, duration, log).
#
#   bash scripts/vm-matrix.sh                 # every scenario
#   bash scripts/vm-matrix.sh grub uki        # only the ones named
#   bash scripts/vm-matrix.sh --keep DIR ...  # also copy each scenario's logs to DIR/SCENARIO/
#   bash scripts/vm-matrix.sh --list          # the scenario names
#
# One result line per scenario: `SCENARIO: pass|fail SECONDSs LOG`.
#
# Every scenario is an `#[ignore]`d test of the e2e crate run by nextest
# with `--run-ignored only`; they share the cached test-OS build (the
# Debian root filesystem in /var/cache/trident-vm, see tests/README.md), so
# only the first one pays for it. Binaries are built once, first
# (`cargo build --workspace --bins`). Logs: target/vm-artifacts/matrix/
# SCENARIO.log; serial logs stay where each test puts them
# (target/vm-artifacts/).
#
# Adding a scenario: write its test, then one function `scenario_NAME`
# (dashes in NAME become underscores) that runs it with `run_vm_test`, and
# add NAME to SCENARIOS below with a one-line description.
#
# Environment: VM_LOCK (default /tmp/trident-vm.lock), CARGO_BUILD_JOBS
# (default 2), NEXTEST_ARGS (extra nextest arguments).

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
VM_LOCK="${VM_LOCK:-/tmp/trident-vm.lock}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
export NEXTEST_ARGS="${NEXTEST_ARGS:-}"
LOG_DIR="$REPO/target/vm-artifacts/matrix"

# name | what it shows
SCENARIOS=(
    "grub|an installer VM installs v1, A/B updates to v2, a failing update rolls back; the host's timeline across reboots (shim + GRUB: BootNext trial, BootOrder at commit)"
    "uki|the grub scenario on a UKI image: systemd-boot starts each volume's copy of the image's Unified Kernel Image"
    "type1|the grub scenario on systemd-boot Type 1 entries (kernel + initrd), the trial a LoaderEntryOneShot"
    "stream-disk-boot|a disk written by StreamDisk boots v1, whose tridentd (from the sysext) answers through the reverse-connect proxy"
    "runtime-update|on a provisioned guest, a runtime update merges a system extension without a reboot (live progress), a second removes it"
    "raid-mirrored|two blank disks: upstream's raid-mirrored sample (as our fixture, root split into an A/B pair of mirrors) installs, boots with / on RAID1, A/B updates on the arrays and commits"
    "rebuild-raid|raid-mirrored, then the second disk replaced by a blank one: a degraded boot, trident rebuild-raid with live progress, every array clean; the rebuilt disk then boots alone (scripts/test.sh runs raid-mirrored's install and boot alone)"
    "raid|upstream's raid sample (as our fixture): root on a RAID1 mirror of two disks, the ESP on the first, swap on both; installs and boots (also in scripts/test.sh)"
    "encryption|upstream's encryption sample on a VM with a software TPM: /srv on LUKS2 sealed to PCR 7, unlocked at boot by the TPM alone; the recovery key file opens it (also in scripts/test.sh)"
    "basic|upstream's basic sample (devices, image and sizes rewritten): ESP and root on one disk; installs and boots (also in scripts/test.sh)"
    "simple|upstream's simple sample (and its placeholder SSH key): scripts, netplan, a user, an additional file; installs, boots, passes its health checks (a script, systemd-networkd) (also in scripts/test.sh)"
    "base|upstream's base sample on a VM with a software TPM: A/B root, swap, /srv on LUKS2 sealed to PCR 7 with a recovery key file, /mnt/raid on a RAID1 mirror; installs, boots, A/B updates to v2 (/srv unlocked by the TPM again) and commits (scripts/test.sh runs its install and boot alone)"
    "advanced|upstream's advanced sample on two disks with a software TPM: RAID1 arrays, /home on LUKS2 over an array unlocked by the TPM, swap on both disks, the verity root (read-only, /etc an overlay); the grub scenario's flow: install v1, A/B update to v2 with v2's root hash, commit, a failing update rolls back (also in scripts/test.sh)"
    "advanced-plain-root|the advanced scenario without the sample's verity section, on the plain test OS: root-data a plain A/B root on mirrors (RAID, /home encrypted on an array, swap, A/B and the TPM apart from verity)"
    "tpm-pcrs-changed|an A/B update after PCR 7 changed (extended in the guest) fails with tpm-unseal-failed naming /srv and PCR 7, nothing written"
    "takeover|a host whose datastore upstream Trident's own binary wrote (UPSTREAM_TRIDENT; its agent and units in the guest) is taken over by tridentd: same get status, A/B updates and commits, a failing update rolled back; upstream's agent put back reads get status and the rollback chain as tridentd left them (UKI test OS)"
    "verity|upstream's verity sample: the root on dm-verity (/dev/mapper/root, read-only, verified), /etc a writable overlay that survives a reboot; a byte flipped in the data partition fails that file's reads with an I/O error while the OS still boots (also in scripts/test.sh)"
)

# Runs the ignored e2e test TEST of the vm test binary, named with its
# module: FILE::NAME for the test NAME of tests/tests/vm/FILE.rs.
run_vm_test() {
    local test="$1"
    # shellcheck disable=SC2086 # NEXTEST_ARGS is a word list on purpose
    cargo nextest run -p trident-e2e --test vm --run-ignored only \
        --no-capture --no-fail-fast ${NEXTEST_ARGS:-} -E "test(=$test)"
}

scenario_grub() {
    export TRIDENT_VM_BOOTLOADER=grub
    run_vm_test vm_scenario::matrix_an_installer_vm_installs_v1_updates_to_v2_and_rolls_back_a_failing_update
}

scenario_uki() {
    export TRIDENT_VM_BOOTLOADER=uki
    run_vm_test vm_scenario::matrix_an_installer_vm_installs_v1_updates_to_v2_and_rolls_back_a_failing_update
}

scenario_type1() {
    export TRIDENT_VM_BOOTLOADER=systemd-boot
    run_vm_test vm_scenario::matrix_an_installer_vm_installs_v1_updates_to_v2_and_rolls_back_a_failing_update
}

scenario_stream_disk_boot() {
    run_vm_test vm_scenario::a_disk_written_by_stream_disk_boots_v1_with_tridentd_from_the_sysext
}

scenario_runtime_update() {
    run_vm_test vm_runtime_update::matrix_a_runtime_update_merges_a_sysext_and_a_confext_on_the_running_guest_and_another_removes_them
}

scenario_raid_mirrored() {
    run_vm_test vm_raid::matrix_raid_mirrored_installs_on_mirrors_and_updates_on_them
}

scenario_rebuild_raid() {
    run_vm_test vm_raid::matrix_a_two_disk_vm_installs_on_mirrors_updates_on_them_and_rebuilds_a_replaced_disk
}

scenario_raid() {
    run_vm_test vm_raid::upstreams_raid_sample_installs_and_boots_with_root_on_a_mirror
}

scenario_encryption() {
    # systemd-boot: no shim measurements in PCR 7 besides the firmware's.
    export TRIDENT_VM_BOOTLOADER=systemd-boot
    run_vm_test vm_encryption::upstreams_encryption_sample_installs_and_boots_with_srv_unlocked_by_the_tpm
}

scenario_advanced() {
    export TRIDENT_VM_BOOTLOADER=grub
    run_vm_test vm_scenario::upstreams_advanced_sample_installs_v1_updates_to_v2_and_rolls_back_a_failing_update
}

scenario_advanced_plain_root() {
    export TRIDENT_VM_BOOTLOADER=grub
    run_vm_test vm_scenario::matrix_advanced_sample_without_verity_installs_updates_and_rolls_back
}

scenario_tpm_pcrs_changed() {
    export TRIDENT_VM_BOOTLOADER=systemd-boot
    run_vm_test vm_tpm_pcrs_changed::matrix_an_update_after_the_pcrs_changed_fails_naming_volume_and_pcrs_and_writes_nothing
}

scenario_basic() {
    run_vm_test vm_samples::upstreams_basic_sample_installs_and_boots
}

scenario_simple() {
    run_vm_test vm_samples::upstreams_simple_sample_installs_boots_and_passes_its_health_checks
}

scenario_base() {
    # systemd-boot, as encryption: PCR 7 holds the firmware's measurements only.
    export TRIDENT_VM_BOOTLOADER=systemd-boot
    run_vm_test vm_samples::matrix_upstreams_base_sample_installs_boots_with_srv_unlocked_and_updates_to_v2
}

scenario_takeover() {
    # Upstream's GRUB step supports Azure Linux only (tests/README.md,
    # "Taking over an upstream host").
    export TRIDENT_VM_BOOTLOADER=uki
    if [ -z "${UPSTREAM_TRIDENT:-}" ]; then
        echo "set UPSTREAM_TRIDENT to upstream Trident's binary (tests/README.md says how to build it)" >&2
        return 1
    fi
    run_vm_test vm_takeover::matrix_a_host_upstreams_agent_services_is_taken_over_and_handed_back
}

scenario_verity() {
    run_vm_test vm_verity::upstreams_verity_sample_boots_a_verified_read_only_root_and_a_flipped_byte_fails_its_reads
}

usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; }

list() {
    local entry
    for entry in "${SCENARIOS[@]}"; do
        printf '%-20s %s\n' "${entry%%|*}" "${entry#*|}"
    done
}

known() {
    local entry
    for entry in "${SCENARIOS[@]}"; do
        [ "${entry%%|*}" = "$1" ] && return 0
    done
    return 1
}

selected=()
KEEP=""
while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help) usage; exit 0 ;;
    --list) list; exit 0 ;;
    --keep)
        [ $# -ge 2 ] || { echo "--keep needs a directory" >&2; exit 2; }
        KEEP="$2"
        mkdir -p "$KEEP"
        KEEP="$(cd "$KEEP" && pwd)"
        shift 2
        ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
        known "$1" || { echo "unknown scenario '$1'; known:" >&2; list >&2; exit 2; }
        selected+=("$1")
        shift
        ;;
    esac
done
if [ ${#selected[@]} -eq 0 ]; then
    for entry in "${SCENARIOS[@]}"; do selected+=("${entry%%|*}"); done
fi

command -v cargo-nextest >/dev/null || { echo "cargo-nextest is needed (scripts/test.sh installs it)" >&2; exit 1; }
mkdir -p "$LOG_DIR"
echo "==> cargo build --workspace --bins"
cargo build --workspace --bins --quiet

results=()
failed=0
for name in "${selected[@]}"; do
    log="$LOG_DIR/$name.log"
    echo "==> $name (waiting for $VM_LOCK; log: ${log#"$REPO"/})"
    started=$(date +%s)
    # The function runs in a child bash while flock holds the lock;
    # `declare -f` hands it the scenario's function and run_vm_test. -o:
    # the scenario does not inherit the lock's descriptor, so what a killed
    # test leaves running (QEMU, swtpm, its HTTP server) does not keep the
    # lock from the next VM run.
    if flock -o "$VM_LOCK" bash -c "set -euo pipefail; $(declare -f run_vm_test "scenario_${name//-/_}"); scenario_${name//-/_}" \
        > >(tee "$log") 2>&1; then
        result=pass
    else
        result=fail
        failed=$((failed + 1))
    fi
    elapsed=$(($(date +%s) - started))
    if [ -n "$KEEP" ]; then
        # The scenario's log and every serial/QEMU log of the VMs it ran.
        mkdir -p "$KEEP/$name"
        cp "$log" "$KEEP/$name/"
        (cd "$REPO/target/vm-artifacts" &&
            find . -path ./matrix -prune -o -name '*.log' -newermt "@$started" \
                -exec cp --parents {} "$KEEP/$name/" \;)
    fi
    results+=("$name: $result ${elapsed}s ${log#"$REPO"/}")
done

echo
for line in "${results[@]}"; do echo "$line"; done
printf 'load now: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
[ "$failed" -eq 0 ]
