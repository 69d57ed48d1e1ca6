//! A minimal new root for tests: a temporary directory with the account
//! databases `useradd --root` needs.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub struct TestRoot(tempfile::TempDir);

impl TestRoot {
    pub fn new() -> Self {
        let root = Self(tempfile::tempdir().unwrap());
        root.write("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
        root.write("etc/group", "root:x:0:\n");
        root.write("etc/shadow", "root:*:19000:0:99999:7:::\n");
        root.write("etc/gshadow", "root:*::\n");
        for db in ["etc/shadow", "etc/gshadow"] {
            fs::set_permissions(root.path().join(db), fs::Permissions::from_mode(0o600)).unwrap();
        }
        fs::create_dir_all(root.path().join("root")).unwrap();
        root
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// The root as the directory handle writers take.
    pub fn dir(&self) -> crate::new_root::root_dir::RootDir {
        crate::new_root::root_dir::RootDir::open(self.path()).unwrap()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.path().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path().join(rel)).unwrap()
    }

    pub fn mode(&self, rel: &str) -> u32 {
        fs::metadata(self.path().join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }
}
