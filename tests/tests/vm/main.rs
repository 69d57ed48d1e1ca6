//! The `vm` test binary of the end-to-end tests: one module per former
//! test file.
//!
//! The VM tests: the real test OS booted under UEFI (QEMU + OVMF). Every
//! test that boots a VM is `#[ignore]`d; `scripts/test.sh` and
//! `scripts/vm-matrix.sh` run them (see tests/README.md). The plain tests
//! here check what the VM tests send (samples rewritten for a VM).

mod vm_encryption;
mod vm_raid;
mod vm_runtime_update;
mod vm_samples;
mod vm_scenario;
mod vm_takeover;
mod vm_tpm_pcrs_changed;
mod vm_verity;
