//! The `mdadm` invocations of the RAID layer, built here in one place.
//! Arrays are created as upstream creates them: metadata 1.0 (the
//! superblock at the end of each member, so a mirrored ESP's members read
//! as plain FAT to the firmware), and `--homehost=any`, as upstream does
//! for images whose initramfs is fixed (UKI): the installed image's
//! initramfs was built before the arrays existed and knows none of them,
//! so every host must take them as its own (`/dev/md/<name>`, not a
//! "foreign" `md127`).

use std::path::Path;
use std::process::{Command, Stdio};

use trident_host::config::RaidLevel;
use trident_host::{Subkind, TridentError};

/// Upstream's metadata version.
pub const METADATA_VERSION: &str = "1.0";

/// `mdadm --create` of `/dev/md/<name>` over `members` (device nodes).
pub fn create_args(name: &str, level: RaidLevel, members: &[String]) -> Vec<String> {
    let level = match level {
        RaidLevel::Raid0 => 0,
        RaidLevel::Raid1 => 1,
        RaidLevel::Raid5 => 5,
        RaidLevel::Raid6 => 6,
        RaidLevel::Raid10 => 10,
    };
    let mut args = vec![
        "--create".to_owned(),
        format!("/dev/md/{name}"),
        // Never ask: old signatures on the members were wiped, and a
        // question would wait on a stdin that is not there.
        "--run".to_owned(),
        format!("--level={level}"),
        format!("--raid-devices={}", members.len()),
        format!("--metadata={METADATA_VERSION}"),
        "--homehost=any".to_owned(),
    ];
    args.extend(members.iter().cloned());
    args
}

/// Runs `mdadm ARGS`; its stdout, or an error of `subkind` with stderr.
pub fn run(subkind: Subkind, args: &[String]) -> Result<String, TridentError> {
    tracing::info!(command = %format!("mdadm {}", args.join(" ")), "running mdadm");
    let output = Command::new("mdadm")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            TridentError::with_source(
                subkind,
                "Cannot run mdadm (package mdadm): software RAID needs it",
                e,
            )
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    Err(TridentError::new(
        subkind,
        format!(
            "'mdadm {}' failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    ))
}

/// Whether `mdadm` can be run here.
pub fn available() -> bool {
    Command::new("mdadm")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The array UUID of `device` (`mdadm --detail --export`: `MD_UUID=`).
pub fn array_uuid(device: &Path) -> Result<String, TridentError> {
    let out = run(
        Subkind::CreateRaid,
        &[
            "--detail".to_owned(),
            "--export".to_owned(),
            device.display().to_string(),
        ],
    )?;
    export_value(&out, "MD_UUID").ok_or_else(|| {
        TridentError::new(
            Subkind::CreateRaid,
            format!(
                "'mdadm --detail --export {}' gave no MD_UUID",
                device.display()
            ),
        )
    })
}

/// `KEY=value` of `mdadm --export` output.
pub fn export_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().to_owned())
    })
}

/// The `ARRAY` line of `/etc/mdadm/mdadm.conf` for one array.
pub fn conf_line(name: &str, uuid: &str) -> String {
    format!("ARRAY /dev/md/{name} metadata={METADATA_VERSION} UUID={uuid} name={name}")
}
