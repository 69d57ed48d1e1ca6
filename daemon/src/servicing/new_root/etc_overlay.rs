//! The writable `/etc` of a verity root, as upstream's `etc_overlay.rs`:
//! the root filesystem is mounted read-only (its bytes are what the root
//! hash covers), and an overlay mounted over its `/etc` takes every write
//! (users, netplan, hostname, additional files, scripts) into
//! `/var/lib/trident-overlay/etc/upper` (work directory `etc/work`) on
//! the overlay's own writable filesystem. The booted OS mounts the same
//! overlay, so what was configured here is what it sees.

use std::path::{Path, PathBuf};

use trident_host::config::verity_rules::{
    ETC_OVERLAY_MOUNT_POINT, ETC_OVERLAY_UPPER, ETC_OVERLAY_WORK,
};
use trident_host::{ResultExt, Subkind, TridentError};

use super::tools::run_tool;

/// The overlay's directories inside a root mounted at `root`.
fn dirs(root: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let base = root.join(ETC_OVERLAY_MOUNT_POINT.trim_start_matches('/'));
    (
        root.join("etc"),
        base.join(ETC_OVERLAY_UPPER),
        base.join(ETC_OVERLAY_WORK),
    )
}

/// The `/etc` overlay of a mounted new root; unmounted when dropped.
#[derive(Debug)]
pub struct EtcOverlay {
    mounted: Option<PathBuf>,
}

impl EtcOverlay {
    /// Mounts the overlay over `root/etc` (creating its upper and work
    /// directories on the overlay filesystem mounted in `root`).
    pub fn mount(root: &Path) -> Result<EtcOverlay, TridentError> {
        let (etc, upper, work) = dirs(root);
        for dir in [&upper, &work] {
            std::fs::create_dir_all(dir).structured_msg(
                Subkind::MountNewRoot,
                format!("Cannot create the /etc overlay's {}", dir.display()),
            )?;
        }
        let options = format!(
            "lowerdir={},upperdir={},workdir={}",
            etc.display(),
            upper.display(),
            work.display()
        );
        let target = etc.to_string_lossy().into_owned();
        run_tool(
            "mount",
            &["-t", "overlay", "overlay", "-o", &options, &target],
            Subkind::MountNewRoot,
        )?;
        tracing::info!(upper = %upper.display(), "/etc of the verity root overlaid, writable");
        Ok(EtcOverlay { mounted: Some(etc) })
    }

    /// Unmounts now, reporting failure (Drop can only log it).
    pub fn unmount(mut self) -> Result<(), TridentError> {
        match self.mounted.take() {
            Some(etc) => umount(&etc),
            None => Ok(()),
        }
    }
}

fn umount(etc: &Path) -> Result<(), TridentError> {
    run_tool("umount", &[&etc.to_string_lossy()], Subkind::MountNewRoot).map(|_| ())
}

impl Drop for EtcOverlay {
    fn drop(&mut self) {
        if let Some(etc) = self.mounted.take()
            && let Err(e) = umount(&etc)
        {
            tracing::warn!(error = %e.report(), "the /etc overlay not unmounted");
        }
    }
}
