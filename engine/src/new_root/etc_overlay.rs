//! The writable `/etc` of a verity root, as upstream's `etc_overlay.rs`:
//! the root filesystem is mounted read-only (its bytes are what the root
//! hash covers), and an overlay mounted over its `/etc` takes every write
//! (users, netplan, hostname, additional files, scripts) into
//! `/var/lib/trident-overlay/etc/upper` (work directory `etc/work`) on
//! the overlay's own writable filesystem. The booted OS mounts the same
//! overlay, so what was configured here is what it sees.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use trident_host::config::verity_rules::{
    ETC_OVERLAY_MOUNT_POINT, ETC_OVERLAY_UPPER, ETC_OVERLAY_WORK,
};
use trident_host::{ResultExt, Subkind, TridentError};

use super::root_dir::RootDir;
use super::tools::run_tool;

/// The overlay's directories of a root (`/etc`, upper, work), as paths of
/// that root.
fn dirs() -> (PathBuf, PathBuf, PathBuf) {
    let base = Path::new(ETC_OVERLAY_MOUNT_POINT);
    (
        PathBuf::from("/etc"),
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
    /// Mounts the overlay over the root's `/etc` (creating its upper and
    /// work directories on the overlay filesystem mounted in the root).
    /// Every directory is resolved inside the root: the mount gets their
    /// real paths, never a symlink to follow out of it.
    pub fn mount(root: &RootDir) -> Result<EtcOverlay, TridentError> {
        let (etc_in_root, upper_in_root, work_in_root) = dirs();
        let [etc, upper, work] = [&etc_in_root, &upper_in_root, &work_in_root].map(|dir| {
            root.host_dir(dir).structured_msg(
                Subkind::MountNewRoot,
                format!("Cannot create the /etc overlay's {}", dir.display()),
            )
        });
        let (etc, upper, work) = (etc?, upper?, work?);
        match_lower_attributes(root, &etc_in_root, &upper_in_root)?;
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

/// Gives the upper directory the mode and owner of the image's `/etc`.
/// The overlay's root shows the upper directory's attributes, and
/// tridentd's umask (077) would make `/etc` root's alone: every service
/// running as its own user (systemd-networkd, D-Bus) could then read none
/// of its configuration, and the booted OS would have no network.
fn match_lower_attributes(root: &RootDir, etc: &Path, upper: &Path) -> Result<(), TridentError> {
    let failed = |what: &str| format!("Cannot give the /etc overlay's {} {what}", upper.display());
    let lower = root
        .open_read(etc)
        .and_then(|f| f.metadata())
        .structured_msg(
            Subkind::MountNewRoot,
            format!("Cannot read the attributes of {}", etc.display()),
        )?;
    root.set_mode(upper, lower.permissions().mode() & 0o7777)
        .structured_msg(Subkind::MountNewRoot, failed("the mode of /etc"))?;
    root.chown(upper, lower.uid(), lower.gid())
        .structured_msg(Subkind::MountNewRoot, failed("the owner of /etc"))
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

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use super::super::hostile_root::HostileRoot;
    use super::*;

    fn running_as_root() -> bool {
        nix::unistd::geteuid().is_root()
    }

    /// A real overlay (this test runs as root, as tridentd does) whose
    /// upper directory was made under the daemon's umask (0700): the
    /// merged `/etc` keeps the image's mode, so the services running as
    /// their own users can read it.
    #[test]
    fn the_overlaid_etc_keeps_the_images_mode_under_the_daemons_umask() {
        if !running_as_root() {
            eprintln!("skipped: mount needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let etc = root.join("etc");
        std::fs::create_dir(&etc).unwrap();
        std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(etc.join("networkd.conf"), "[Network]\n").unwrap();
        let (_, upper_in_root, _) = dirs();
        let upper = root.join(upper_in_root.strip_prefix("/").unwrap());
        std::fs::create_dir_all(&upper).unwrap();
        std::fs::set_permissions(&upper, std::fs::Permissions::from_mode(0o700)).unwrap();
        let root_dir = RootDir::open(root).unwrap();
        let overlay = EtcOverlay::mount(&root_dir).unwrap();
        drop(root_dir);
        let merged = std::fs::metadata(&etc).unwrap();
        std::fs::write(etc.join("hostname"), "verity\n").unwrap();
        overlay.unmount().unwrap();
        assert_eq!(merged.permissions().mode() & 0o7777, 0o755);
        assert_eq!(
            std::fs::read_to_string(upper.join("hostname")).unwrap(),
            "verity\n"
        );
        assert!(
            !etc.join("hostname").exists(),
            "the write went to the upper directory"
        );
    }

    /// Issue 37: the overlay's upper and work directories, and what is
    /// written through the overlay, stay inside the root whatever symlinks
    /// lead out of it on the way to them.
    #[test]
    fn the_overlay_directories_stay_inside_a_root_whose_links_point_out() {
        if !running_as_root() {
            eprintln!("skipped: mount needs root");
            return;
        }
        let (_, upper, _) = dirs();
        for hostile in HostileRoot::variants(&upper.display().to_string()) {
            std::fs::create_dir_all(hostile.root.join("etc")).unwrap();
            let root_dir = hostile.dir();
            let overlay = EtcOverlay::mount(&root_dir).unwrap();
            root_dir
                .write_file(Path::new("/etc/hostname"), b"verity\n", 0o644)
                .unwrap();
            drop(root_dir);
            overlay.unmount().unwrap();
            hostile.assert_outside_untouched();
            assert_eq!(
                std::fs::read_to_string(hostile.landing().join("hostname")).unwrap(),
                "verity\n",
                "{}",
                hostile.variant
            );
        }
    }
}
