//! The Type 1 boot entry of a volume: its kernel and initrd (found in the
//! new root's /boot) and its command line.

use std::path::{Path, PathBuf};

use trident_host::{Subkind, TridentError};

use crate::servicing::new_root::volume::VolumeRoot;

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
        let initrd = boot.join(format!("initrd.img-{release}"));
        Ok(Kernel {
            vmlinuz: boot.join(format!("vmlinuz-{release}")),
            initrd: initrd.exists().then_some(initrd),
            release,
        })
    }
}

/// The kernel command line: the root by PARTUUID, the image's
/// `/etc/kernel/cmdline` (any `root=` of its own dropped), then the Host
/// Configuration's `os.kernelCommandLine.extraCommandLine`.
pub fn command_line(root: &VolumeRoot<'_>, part_uuid: &str) -> String {
    let image = std::fs::read_to_string(root.path.join("etc/kernel/cmdline")).unwrap_or_default();
    let mut args = vec![format!("root=PARTUUID={part_uuid}"), "rw".to_owned()];
    args.extend(
        image
            .split_whitespace()
            .filter(|a| !a.starts_with("root=") && *a != "rw" && *a != "ro")
            .map(str::to_owned),
    );
    args.extend(
        root.hc
            .os
            .kernel_command_line
            .extra_command_line
            .iter()
            .cloned(),
    );
    args.join(" ")
}

/// `PRETTY_NAME` of the new root's os-release.
fn pretty_name(root: &Path) -> String {
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

/// The entry file of `root.volume`, files under ESP directory `dir`.
pub fn entry_text(root: &VolumeRoot<'_>, kernel: &Kernel, part_uuid: &str, dir: &str) -> String {
    let mut text = format!(
        "# Written by Trident for {volume}.\ntitle   {name} ({volume})\nversion {release}\nlinux   /{dir}/vmlinuz\n",
        volume = root.volume,
        name = pretty_name(root.path),
        release = kernel.release,
    );
    if kernel.initrd.is_some() {
        text.push_str(&format!("initrd  /{dir}/initrd.img\n"));
    }
    text.push_str(&format!("options {}\n", command_line(root, part_uuid)));
    text
}
