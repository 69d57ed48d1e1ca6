//! The Linux boot id: a random UUID the kernel picks at every boot. The
//! daemon tells its own, and the CLI compares it with its own to tell a
//! daemon on its host from one on a remote host (through `trident
//! rcp-listen`), and, after a reboot, to see the remote host came back.

use std::path::Path;

/// Where Linux exposes the boot id of the running kernel.
pub const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

/// The boot id in `path`, trimmed; `None` when the file is missing,
/// unreadable or empty (never on Linux, but callers then treat the daemon
/// as local, the behaviour without boot ids).
pub fn read_boot_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let id = text.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// This host's boot id (from [`BOOT_ID_PATH`]).
pub fn own_boot_id() -> Option<String> {
    read_boot_id(Path::new(BOOT_ID_PATH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_trims_the_id_and_treats_missing_or_empty_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("boot_id");
        std::fs::write(&file, "1234-abcd\n").unwrap();
        assert_eq!(read_boot_id(&file).as_deref(), Some("1234-abcd"));
        std::fs::write(&file, " \n").unwrap();
        assert_eq!(read_boot_id(&file), None);
        assert_eq!(read_boot_id(&dir.path().join("absent")), None);
    }

    #[test]
    fn this_linux_host_has_a_boot_id() {
        assert!(own_boot_id().is_some_and(|id| id.len() >= 32));
    }
}
