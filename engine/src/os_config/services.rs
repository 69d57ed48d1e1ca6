//! `os.services`: units enabled and disabled in the new root with
//! `systemctl --root`, which edits the unit symlinks there without talking
//! to the running systemd.

use std::path::Path;

use trident_host::config::Services;
use trident_host::config::document_rules;

use super::root_fs::{OsConfigError, run};

pub fn apply(root: &Path, services: &Services) -> Result<(), OsConfigError> {
    let root_arg = format!("--root={}", root.display());
    for (verb, units) in [("enable", &services.enable), ("disable", &services.disable)] {
        for (i, unit) in units.iter().enumerate() {
            let key = format!("os.services.{verb}[{i}]");
            document_rules::check_unit_name(unit)
                .map_err(|rule| OsConfigError::document(&key, rule))?;
            run(&key, "systemctl", &[&root_arg, "--quiet", verb, unit])?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_root::TestRoot;
    use super::*;

    const UNIT: &str = "[Unit]\nDescription=t\n[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n";
    const WANTS: &str = "etc/systemd/system/multi-user.target.wants";

    #[test]
    fn enable_and_disable_edit_the_new_roots_links() {
        let root = TestRoot::new();
        root.write("usr/lib/systemd/system/site.service", UNIT);
        root.write("usr/lib/systemd/system/old.service", UNIT);
        let enable_old = Services {
            enable: vec!["old.service".into()],
            disable: vec![],
        };
        apply(root.path(), &enable_old).unwrap();
        assert!(root.path().join(WANTS).join("old.service").is_symlink());

        let services = Services {
            enable: vec!["site.service".into()],
            disable: vec!["old.service".into()],
        };
        apply(root.path(), &services).unwrap();
        assert!(root.path().join(WANTS).join("site.service").is_symlink());
        assert!(!root.path().join(WANTS).join("old.service").is_symlink());
    }

    #[test]
    fn a_unit_the_image_lacks_fails_naming_the_key() {
        let root = TestRoot::new();
        let services = Services {
            enable: vec!["nosuch.service".into()],
            disable: vec![],
        };
        let err = apply(root.path(), &services).unwrap_err();
        assert_eq!(err.key(), "os.services.enable[0]");
    }
}
