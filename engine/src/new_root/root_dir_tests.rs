//! `RootDir` on roots whose symlinks point out of them, and on an
//! ordinary one.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::hostile_root::HostileRoot;
use super::root_dir::RootDir;

#[test]
fn writes_land_inside_the_root_whatever_the_links_on_the_way() {
    for root in HostileRoot::variants("etc/site/app.conf") {
        let dir = root.dir();
        dir.write_file(Path::new("/etc/site/app.conf"), b"inside\n", 0o4755)
            .unwrap();
        root.assert_outside_untouched();
        assert_eq!(root.landed(), "inside\n", "{}", root.variant);
        let mode = fs::metadata(root.landing()).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o4755, "{}", root.variant);
        // Read back through the same resolution.
        assert_eq!(
            dir.read_to_string(Path::new("etc/site/app.conf")).unwrap(),
            "inside\n"
        );
    }
}

#[test]
fn directories_modes_owners_renames_and_removals_stay_inside_the_root() {
    for root in HostileRoot::variants("srv/data/keys") {
        let dir = root.dir();
        dir.mkdir_all(Path::new("/srv/data/keys")).unwrap();
        dir.set_mode(Path::new("/srv/data/keys"), 0o700).unwrap();
        dir.chown(Path::new("/srv/data/keys"), 1234, 1234).unwrap();
        let meta = fs::metadata(root.landing()).unwrap();
        assert!(meta.is_dir(), "{}", root.variant);
        assert_eq!(meta.permissions().mode() & 0o7777, 0o700);
        assert_eq!((meta.uid(), meta.gid()), (1234, 1234));
        let host = dir.host_dir(Path::new("srv/data/keys")).unwrap();
        assert_eq!(host, root.landing(), "{}", root.variant);
        dir.write_file(Path::new("srv/data/keys/.new"), b"k", 0o600)
            .unwrap();
        dir.rename(
            Path::new("srv/data/keys/.new"),
            Path::new("srv/data/keys/k"),
        )
        .unwrap();
        assert_eq!(fs::read_to_string(root.landing().join("k")).unwrap(), "k");
        assert!(dir.remove_file(Path::new("srv/data/keys/k")).unwrap());
        assert!(!dir.remove_file(Path::new("srv/data/keys/k")).unwrap());
        root.assert_outside_untouched();
    }
}

#[test]
fn removing_a_link_removes_the_link_never_its_target() {
    for root in HostileRoot::variants("etc/crypttab") {
        let dir = root.dir();
        if root.variant.contains("at the file") {
            assert!(dir.remove_file(Path::new("/etc/crypttab")).unwrap());
            assert!(fs::symlink_metadata(root.root.join("etc/crypttab")).is_err());
        } else {
            assert!(!dir.remove_file(Path::new("/etc/crypttab")).unwrap());
        }
        root.assert_outside_untouched();
    }
}

#[test]
fn an_ordinary_root_is_written_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RootDir::open(tmp.path()).unwrap();
    dir.write_file(Path::new("/a/b/c"), b"x", 0o640).unwrap();
    dir.write_file(Path::new("/a/b/c"), b"yy", 0o600).unwrap();
    assert_eq!(fs::read_to_string(tmp.path().join("a/b/c")).unwrap(), "yy");
    let mode = |p: &str| {
        fs::metadata(tmp.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("a/b/c"), 0o600);
    assert_eq!(
        mode("a/b"),
        0o755,
        "directories on the way: 0755 whatever the umask"
    );
    assert!(dir.exists(Path::new("a/b")));
    assert!(!dir.exists(Path::new("a/z")));
    let err = dir.write_file(Path::new("/a/b"), b"x", 0o644).unwrap_err();
    assert!(err.to_string().contains("directory"), "{err}");
}
