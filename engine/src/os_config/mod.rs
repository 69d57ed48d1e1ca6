//! The OS configuration of the Host Configuration (`os.*`), applied inside
//! the NEW root: a directory where the serviced volume is mounted, never the
//! machine running the daemon. Each key has its own module, a function of
//! (new root, typed config) that fails with an [`OsConfigError`] naming the
//! key path. Tools that must act on the new root's databases run with their
//! `--root` option (`useradd`, `systemctl`), which chroots into it.
//!
//! [`apply`] runs them all in a fixed order: files that other steps may
//! read (additional files) last, so a user's files cannot be overwritten by
//! a later step.

pub mod agent;
pub mod files;
pub mod hostname;
pub mod kernel_cmdline;
pub mod modules;
pub mod netplan;
pub mod selinux;
pub mod services;
pub mod users;

pub mod root_fs;

use trident_host::TridentError;
use trident_host::config::Os;

pub use self::root_fs::OsConfigError;
use super::new_root::root_dir::RootDir;
use super::new_root::volume::VolumeRoot;

/// Applies every `os` key to the new root `root`: every file written,
/// made, chmod'ed or chown'ed through it, resolved inside the root.
/// Blocking.
pub fn apply(root: &RootDir, os: &Os) -> Result<(), OsConfigError> {
    if let Some(name) = &os.hostname {
        hostname::apply(root, name)?;
    }
    if let Some(netplan) = &os.netplan {
        netplan::apply(root, netplan)?;
    }
    if let Some(mode) = os.selinux.mode {
        selinux::apply(root, mode)?;
    }
    modules::apply(root, &os.modules)?;
    users::apply(root, &os.users)?;
    services::apply(root.path(), &os.services)?;
    files::apply(root, &os.additional_files)?;
    Ok(())
}

/// The configure step of the mounted new root (`flows::new_root_step::CONFIGURE_STEPS`):
/// `os.*`, then `trident.disable`.
pub fn configure_step(root: &VolumeRoot<'_>) -> Result<(), TridentError> {
    apply(root.dir, &root.hc.os)?;
    agent::apply(root.path, root.hc.trident.disable)?;
    Ok(())
}

/// When the serviced volume's root could not be mounted (no filesystem
/// this daemon recognizes), `os` settings have nowhere to go: fail naming
/// the first one rather than skip it silently.
pub fn refuse_without_new_root(os: &Os) -> Result<(), TridentError> {
    let used = [
        ("os.hostname", os.hostname.is_some()),
        ("os.netplan", os.netplan.is_some()),
        ("os.selinux.mode", os.selinux.mode.is_some()),
        ("os.modules", !os.modules.is_empty()),
        ("os.users", !os.users.is_empty()),
        ("os.services", os.services != Default::default()),
        ("os.additionalFiles", !os.additional_files.is_empty()),
        ("os.sysexts", !os.sysexts.is_empty()),
        ("os.confexts", !os.confexts.is_empty()),
    ];
    match used.iter().find(|(_, set)| *set) {
        Some((key, _)) => Err(OsConfigError::refused(
            *key,
            "the image's root filesystem is not one this daemon can mount, so the OS \
             configuration cannot be applied inside it",
        )
        .into()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
pub(crate) mod test_root;
