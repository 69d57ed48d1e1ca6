//! What the servicing engine is built from: its own settings type, filled
//! by the daemon's composition root from the flags (`Config::engine_settings`),
//! so servicing never reads the daemon's configuration.

use std::path::PathBuf;

use clap::ValueEnum;
use trident_cosi::SourceOptions;

/// `--boot-control`: how the next boot is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BootControlMode {
    /// Simulated boots recorded in STATE_DIR/boot-record.json.
    Record,
    /// systemd-boot entries on the ESP and EFI variables.
    Uefi,
}

/// `--reboot`: what the daemon does when a servicing operation needs a reboot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RebootMode {
    /// Only record the request (to STATE_DIR/reboot-requests.log and the bus).
    Record,
    /// Ask systemd to reboot the machine.
    Systemd,
    /// Do nothing at all.
    None,
}

/// What the clean-install safety check reads (`install_safety`).
#[derive(Debug, Clone)]
pub struct InstallSafety {
    /// `--allow-install-on-running-disk`: skip the check.
    pub allow_running_disk: bool,
    /// The running system's mount table (`--host-mountinfo`).
    pub mountinfo: PathBuf,
    /// The running kernel's command line (`--kernel-cmdline-file`).
    pub cmdline: PathBuf,
    /// sysfs, where partitions and stacked devices lead to their disks.
    pub sysfs: PathBuf,
}

/// Everything `Engine::new` reads.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Private state directory (boot record, new-root mounts, the
    /// datastore redirect).
    pub state_dir: PathBuf,
    /// The datastore, unless a `trident.datastorePath` redirect says otherwise.
    pub datastore_path: PathBuf,
    pub boot_control: BootControlMode,
    /// efivarfs, where `BootControlMode::Uefi` sets EFI variables.
    pub efivars: PathBuf,
    /// `/proc/stat`: when the kernel booted (`BootControlMode::Uefi`).
    pub kernel_stat: PathBuf,
    pub reboot: RebootMode,
    /// Log of reboot requests (`RebootMode::Record`).
    pub reboot_requests_path: PathBuf,
    pub install_safety: InstallSafety,
    /// The running system's root (`--host-root`): where runtime updates act.
    pub host_root: PathBuf,
    /// How image sources are opened (`--http-connect-timeout`,
    /// `--http-read-timeout`, `--registry-auth-file`): COSI images,
    /// extension images.
    pub sources: SourceOptions,
}
