//! How a verity root reaches the kernel. The initrd's
//! `systemd-veritysetup` opens `/dev/mapper/root` from kernel arguments:
//! upstream's osmodifier writes `rd.systemd.verity=1`,
//! `systemd.verity_root_data=`, `systemd.verity_root_hash=` and
//! `systemd.verity_root_options=` into the GRUB command line, next to the
//! image's `roothash=` ([`kernel_args`]). A UKI carries its command line,
//! root hash included, inside itself (built with the image), so for a UKI
//! image the root hash in its `.cmdline` section must be the one of the
//! COSI metadata ([`check_uki_root_hash`]).

use trident_host::config::VerityCorruptionOption;
use trident_host::{Subkind, TridentError};

/// The device a verity root is opened as (upstream requires the name).
pub const ROOT_DEVICE: &str = "/dev/mapper/root";

/// `systemd.verity_root_options=` for `corruptionOption`, as upstream's
/// osmodifier maps it (`io-error` is the kernel's default: no option).
pub fn corruption_option(option: VerityCorruptionOption) -> &'static str {
    match option {
        VerityCorruptionOption::IoError => "",
        VerityCorruptionOption::Ignore => "ignore-corruption",
        VerityCorruptionOption::Panic => "panic-on-corruption",
        VerityCorruptionOption::Restart => "restart-on-corruption",
    }
}

/// A verity root as the kernel command line names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerityRoot {
    /// The image's root hash (hex).
    pub root_hash: String,
    /// The data device (`PARTUUID=...`, a form systemd's generators read).
    pub data: String,
    /// The hash device.
    pub hash: String,
    pub corruption: VerityCorruptionOption,
}

/// The kernel arguments that open `root` in the initrd.
pub fn kernel_args(root: &VerityRoot) -> Vec<String> {
    vec![
        "rd.systemd.verity=1".to_owned(),
        format!("roothash={}", root.root_hash),
        format!("systemd.verity_root_data={}", root.data),
        format!("systemd.verity_root_hash={}", root.hash),
        format!(
            "systemd.verity_root_options={}",
            corruption_option(root.corruption)
        ),
    ]
}

/// Whether `arg` is one of [`kernel_args`]' (replaced, never doubled).
pub fn is_verity_arg(arg: &str) -> bool {
    let name = arg.split_once('=').map_or(arg, |(name, _)| name);
    matches!(
        name,
        "rd.systemd.verity"
            | "systemd.verity"
            | "roothash"
            | "systemd.verity_root_data"
            | "systemd.verity_root_hash"
            | "systemd.verity_root_options"
            | "rd.overlayfs"
    )
}

/// The UKI `uki` (its bytes) carries `root_hash` in its `.cmdline`.
pub fn check_uki_root_hash(uki: &[u8], root_hash: &str) -> Result<(), TridentError> {
    let invalid = |what: String| {
        TridentError::new(
            Subkind::InvalidImage,
            format!("The image's UKI {what}; its metadata's verity root hash is {root_hash}"),
        )
    };
    let Some(cmdline) = super::pe::section(uki, ".cmdline") else {
        return Err(invalid("has no .cmdline section".to_owned()));
    };
    let cmdline = String::from_utf8_lossy(cmdline);
    let found: Vec<&str> = cmdline
        .split_whitespace()
        .filter_map(|a| a.strip_prefix("roothash="))
        .collect();
    match found.as_slice() {
        [hash] if hash.eq_ignore_ascii_case(root_hash) => Ok(()),
        [] => Err(invalid("command line has no roothash=".to_owned())),
        other => Err(invalid(format!(
            "command line says roothash={}",
            other.join(",")
        ))),
    }
}
