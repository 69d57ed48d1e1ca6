//! `trident.disable`: the installed OS does not start the agent. Its units
//! (the daemon's socket and service, the commit-on-boot service, the
//! reverse-connect proxy that only serves the daemon) are masked in the
//! new root with `systemctl --root`, which works whether the units come
//! with the image or later from the `trident.raw` system extension (a mask
//! in `/etc` wins over both).

use std::path::Path;

use super::root_fs::{OsConfigError, run};

/// The agent's units (packaging/systemd/).
pub const AGENT_UNITS: [&str; 4] = [
    "tridentd.socket",
    "tridentd.service",
    "trident.service",
    "trident-rcp.service",
];

/// Masks the agent's units in the new root at `root` when `disable`.
pub fn apply(root: &Path, disable: bool) -> Result<(), OsConfigError> {
    if !disable {
        return Ok(());
    }
    let root_arg = format!("--root={}", root.display());
    for unit in AGENT_UNITS {
        run(
            "trident.disable",
            "systemctl",
            &[&root_arg, "--quiet", "mask", unit],
        )?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_root::TestRoot;
    use super::*;

    #[test]
    fn disabling_masks_every_agent_unit_even_ones_the_image_lacks() {
        let root = TestRoot::new();
        apply(root.path(), false).unwrap();
        assert!(
            !root
                .path()
                .join("etc/systemd/system/tridentd.socket")
                .exists()
        );
        apply(root.path(), true).unwrap();
        for unit in AGENT_UNITS {
            let link = root.path().join("etc/systemd/system").join(unit);
            assert_eq!(
                std::fs::read_link(&link).unwrap(),
                Path::new("/dev/null"),
                "{unit}"
            );
        }
    }
}
