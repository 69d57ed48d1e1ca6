//! The Type 1 boot entry of a volume: its kernel and initrd (found in the
//! new root's /boot) and its command line.

use std::path::{Path, PathBuf};

use trident_host::config::verity_rules::{
    ETC_OVERLAY_MOUNT_POINT, ETC_OVERLAY_UPPER, ETC_OVERLAY_WORK,
};
use trident_host::config::{HostConfiguration, SelinuxMode};
use trident_host::{Subkind, TridentError};

use super::verity::{ROOT_DEVICE, VerityRoot, is_verity_arg, kernel_args};
use crate::new_root::volume::VolumeRoot;

/// The kernel a volume boots.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub release: String,
    pub vmlinuz: PathBuf,
    pub initrd: Option<PathBuf>,
}

impl Kernel {
    /// The newest `boot/vmlinuz-<release>` of `root` (and its initrd).
    pub fn find(root: &Path) -> Result<Kernel, TridentError> {
        let boot = root.join("boot");
        let mut releases: Vec<String> = std::fs::read_dir(&boot)
            .map(|dir| {
                dir.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()
                            .and_then(|n| n.strip_prefix("vmlinuz-"))
                            .map(str::to_owned)
                    })
                    .collect()
            })
            .unwrap_or_default();
        releases.sort();
        let Some(release) = releases.pop() else {
            return Err(TridentError::new(
                Subkind::BootControl,
                "The new root has no /boot/vmlinuz-* kernel to boot",
            ));
        };
        // Debian's initrd.img-<release>, Azure Linux's initramfs-<release>.img.
        let initrd = [
            format!("initrd.img-{release}"),
            format!("initramfs-{release}.img"),
        ]
        .into_iter()
        .map(|name| boot.join(name))
        .find(|path| path.exists());
        Ok(Kernel {
            vmlinuz: boot.join(format!("vmlinuz-{release}")),
            initrd,
            release,
        })
    }
}

/// The arguments naming the volume's root ([`root_args`]): as the booted
/// OS names its device (`PARTUUID=...` of a partition, `/dev/md/<name>` of
/// a RAID array, which the image's initramfs assembles with mdadm),
/// read-write; a verity root `/dev/mapper/root`, read-only, opened from
/// the verity arguments (`root_hash`: the image's).
pub fn root_args(
    root: &VolumeRoot<'_>,
    root_hash: Option<&str>,
) -> Result<Vec<String>, TridentError> {
    let hc = root.hc;
    let no_root = || {
        TridentError::new(
            Subkind::InvalidHostConfiguration,
            "The UEFI boot control needs a filesystem mounted at '/'",
        )
    };
    let fs = hc
        .storage
        .filesystems
        .iter()
        .find(|f| f.mount_point.path() == "/")
        .ok_or_else(no_root)?;
    let Some(verity) = hc.storage.verity.iter().find(|v| v.id == fs.device_id) else {
        let (_, source) = root.mount_source("/").ok_or_else(no_root)?;
        return Ok(vec![format!("root={source}"), "rw".to_owned()]);
    };
    let part_uuid = |role: &str, id: &str| {
        root.device_of(id)
            .and_then(|d| root.source_of(&d))
            .ok_or_else(|| {
                TridentError::new(
                    Subkind::BootControl,
                    format!(
                        "verity device '{}': its {role} device '{id}' is on no partition or array",
                        verity.id
                    ),
                )
            })
    };
    let Some(root_hash) = root_hash else {
        return Err(TridentError::new(
            Subkind::BootControl,
            format!(
                "verity device '{}': the image gave no root hash for '/'",
                verity.id
            ),
        ));
    };
    let mut args = vec![format!("root={ROOT_DEVICE}"), "ro".to_owned()];
    args.extend(kernel_args(&VerityRoot {
        root_hash: root_hash.to_owned(),
        data: part_uuid("data", &verity.data_device_id)?,
        hash: part_uuid("hash", &verity.hash_device_id)?,
        corruption: verity.corruption_option,
    }));
    // The writable /etc, as upstream's osmodifier asks the initrd for it:
    // `rd.overlayfs=LOWER,UPPER,WORK,DEVICE`.
    if let Some(overlay) = hc
        .storage
        .filesystems
        .iter()
        .find(|f| f.mount_point.path() == ETC_OVERLAY_MOUNT_POINT)
    {
        let device = part_uuid("/etc overlay", &overlay.device_id)?;
        let device = device.replace("PARTUUID=", "/dev/disk/by-partuuid/");
        args.push(format!(
            "rd.overlayfs=etc,{ETC_OVERLAY_UPPER},{ETC_OVERLAY_WORK},{device}"
        ));
    }
    Ok(args)
}

/// The kernel command line: the root (`root`: [`root_args`]), the image's
/// arguments (`image_args`: its `/etc/kernel/cmdline`, or its UKI entry's
/// cmdline; any `root=`, `rw`/`ro` and verity arguments of its own
/// dropped), the SELinux arguments of `os.selinux.mode` (replacing the
/// image's, as upstream's osmodifier does), then
/// `os.kernelCommandLine.extraCommandLine`.
pub fn command_line(hc: &HostConfiguration, root: &[String], image_args: &str) -> String {
    let selinux = hc.os.selinux.mode.map(selinux_args);
    let mut args = root.to_vec();
    args.extend(
        image_args
            .split_whitespace()
            .filter(|a| !a.starts_with("root=") && *a != "rw" && *a != "ro" && !is_verity_arg(a))
            .filter(|a| selinux.is_none() || !is_selinux_arg(a))
            .map(str::to_owned),
    );
    args.extend(selinux.into_iter().flatten().map(|a| (*a).to_owned()));
    args.extend(hc.os.kernel_command_line.extra_command_line.iter().cloned());
    args.join(" ")
}

/// The image's own kernel arguments: `/etc/kernel/cmdline` of the new root.
pub fn image_cmdline(root: &Path) -> String {
    std::fs::read_to_string(root.join("etc/kernel/cmdline")).unwrap_or_default()
}

/// Upstream's kernel arguments for an SELinux mode (osmodifier's
/// `selinux::update_grub_cmdline`).
fn selinux_args(mode: SelinuxMode) -> &'static [&'static str] {
    match mode {
        SelinuxMode::Enforcing => &["security=selinux", "selinux=1"],
        SelinuxMode::Permissive => &["security=selinux", "selinux=1", "enforcing=0"],
        SelinuxMode::Disabled => &["selinux=0"],
    }
}

fn is_selinux_arg(arg: &str) -> bool {
    let name = arg.split_once('=').map_or(arg, |(name, _)| name);
    matches!(name, "security" | "selinux" | "enforcing")
}

/// `PRETTY_NAME` of the new root's os-release.
pub fn pretty_name(root: &Path) -> String {
    ["etc/os-release", "usr/lib/os-release"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(root.join(p)).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_owned())
                .collect::<Vec<_>>()
        })
        .next()
        .unwrap_or_else(|| "Linux".to_owned())
}

/// What a Type 1 entry boots: the EFI binary at `linux` (a kernel, or a
/// UKI), its `initrd` and its command line, paths from the ESP root.
#[derive(Debug, Clone)]
pub struct EntryFiles {
    pub version: String,
    pub linux: String,
    pub initrd: Option<String>,
    pub options: String,
}

/// The entry file of `root.volume`.
pub fn entry_text(root: &VolumeRoot<'_>, files: &EntryFiles) -> String {
    let mut text = format!(
        "# Written by Trident for {volume}.\ntitle   {name} ({volume})\nversion {version}\nlinux   /{linux}\n",
        volume = root.volume,
        name = pretty_name(root.path),
        version = files.version,
        linux = files.linux,
    );
    if let Some(initrd) = &files.initrd {
        text.push_str(&format!("initrd  /{initrd}\n"));
    }
    text.push_str(&format!("options {}\n", files.options));
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_has_the_volume_root_the_image_args_selinux_and_the_extra_args() {
        let mut hc = HostConfiguration::default();
        hc.os.selinux.mode = Some(SelinuxMode::Permissive);
        hc.os.kernel_command_line.extra_command_line = vec!["quiet".to_owned()];
        let root = ["root=PARTUUID=1234".to_owned(), "rw".to_owned()];
        let line = command_line(
            &hc,
            &root,
            "root=UUID=x ro console=ttyS0 selinux=0 security=apparmor roothash=ab\n",
        );
        assert_eq!(
            line,
            "root=PARTUUID=1234 rw console=ttyS0 security=selinux selinux=1 enforcing=0 quiet"
        );
        hc.os.selinux.mode = None;
        assert_eq!(
            command_line(&hc, &root, "console=ttyS0 selinux=0"),
            "root=PARTUUID=1234 rw console=ttyS0 selinux=0 quiet",
            "without a mode the image's SELinux arguments stay"
        );
    }
}
