//! Issue 37: every `os.*` writer, given a new root whose symlinks point out
//! of it (absolute and relative `..` links, at the file and on a directory
//! on the way), writes nothing outside the root and lands where the
//! installed OS sees the file.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use trident_host::config::{
    AdditionalFile, LoadMode, Module, Password, SelinuxMode, SshMode, User,
};

use super::{files, hostname, modules, netplan, selinux, users};
use crate::new_root::hostile_root::HostileRoot;

fn mode_of(path: &std::path::Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn additional_files_stay_inside_the_root() {
    for root in HostileRoot::variants("/etc/evil/pwned") {
        let file = AdditionalFile {
            destination: "/etc/evil/pwned".to_owned(),
            content: Some("setuid\n".to_owned()),
            source: None,
            permissions: Some("4755".to_owned()),
        };
        files::apply(&root.dir(), &[file]).unwrap();
        root.assert_outside_untouched();
        assert_eq!(root.landed(), "setuid\n", "{}", root.variant);
        assert_eq!(mode_of(root.landing()), 0o4755, "{}", root.variant);
    }
}

#[test]
fn hostname_stays_inside_the_root() {
    for root in HostileRoot::variants("/etc/hostname") {
        hostname::apply(&root.dir(), "edge-7").unwrap();
        root.assert_outside_untouched();
        assert_eq!(root.landed(), "edge-7\n", "{}", root.variant);
    }
}

#[test]
fn module_files_stay_inside_the_root() {
    for root in HostileRoot::variants(modules::MODULES_LOAD_FILE) {
        let m = Module {
            name: "br_netfilter".to_owned(),
            load_mode: LoadMode::Always,
            options: BTreeMap::new(),
        };
        modules::apply(&root.dir(), &[m]).unwrap();
        root.assert_outside_untouched();
        assert!(root.landed().contains("br_netfilter\n"), "{}", root.variant);
    }
}

#[test]
fn netplan_stays_inside_the_root() {
    for root in HostileRoot::variants(netplan::NETPLAN_FILE) {
        let doc = serde_saphyr::from_str("version: 2\nethernets: {}\n").unwrap();
        netplan::apply(&root.dir(), &doc).unwrap();
        root.assert_outside_untouched();
        assert!(root.landed().contains("version: 2"), "{}", root.variant);
        assert_eq!(mode_of(root.landing()), 0o600, "{}", root.variant);
    }
}

#[test]
fn selinux_config_stays_inside_the_root() {
    for root in HostileRoot::variants(selinux::SELINUX_CONFIG) {
        // The image's config, behind the link as the installed OS sees it.
        root.seed(selinux::SELINUX_CONFIG, "SELINUX=enforcing\n");
        selinux::apply(&root.dir(), SelinuxMode::Permissive).unwrap();
        root.assert_outside_untouched();
        assert_eq!(root.landed(), "SELINUX=permissive\n", "{}", root.variant);
    }
}

/// The account databases `usermod --root` needs, seeded as the installed
/// OS sees them.
fn seed_accounts(root: &HostileRoot) {
    root.seed("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    root.seed("etc/group", "root:x:0:\n");
    root.seed("etc/shadow", "root:*:19000:0:99999:7:::\n");
    root.seed("etc/gshadow", "root:*::\n");
}

fn root_user(keys: &[&str]) -> User {
    User {
        name: "root".to_owned(),
        password: Password::Locked,
        uid: None,
        primary_group: None,
        secondary_groups: Vec::new(),
        ssh_public_keys: keys.iter().map(|k| (*k).to_owned()).collect(),
        ssh_mode: SshMode::KeyOnly,
        startup_command: None,
        home_directory: None,
    }
}

#[test]
fn ssh_keys_stay_inside_the_root() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: usermod --root needs root");
        return;
    }
    for root in HostileRoot::variants("/root/.ssh/authorized_keys") {
        seed_accounts(&root);
        root.seed("etc/ssh/sshd_config", "");
        users::apply(&root.dir(), &[root_user(&["ssh-ed25519 AAAAkey"])]).unwrap();
        root.assert_outside_untouched();
        assert_eq!(root.landed(), "ssh-ed25519 AAAAkey\n", "{}", root.variant);
        assert_eq!(mode_of(root.landing()), 0o600, "{}", root.variant);
        let ssh_dir = root
            .dir()
            .host_path(std::path::Path::new("/root/.ssh"))
            .unwrap();
        let meta = fs::metadata(ssh_dir).unwrap();
        assert_eq!(
            meta.permissions().mode() & 0o7777,
            0o700,
            "{}",
            root.variant
        );
        assert_eq!((meta.uid(), meta.gid()), (0, 0));
    }
}

#[test]
fn sshd_files_stay_inside_the_root() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: usermod --root needs root");
        return;
    }
    for root in HostileRoot::variants(users::SSHD_DROP_IN) {
        seed_accounts(&root);
        root.seed("etc/ssh/sshd_config", "PasswordAuthentication no\n");
        users::apply(&root.dir(), &[root_user(&[])]).unwrap();
        root.assert_outside_untouched();
        assert!(
            root.landed().contains("PermitRootLogin prohibit-password"),
            "{}",
            root.variant
        );
    }
}
