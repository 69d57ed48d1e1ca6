//! Test roots whose symlinks point out of them, one per way a path can be
//! led out: an absolute link and a relative `..` link, each at the file
//! itself and on a directory on the way. A writer given one must write
//! nothing outside the root and land where the installed OS would see the
//! file: with the root as `/`, the link's target inside the root.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::root_dir::RootDir;

/// The host's file and directory a hostile link points at.
const HOST_FILE: &str = "file";
const HOST_DIR: &str = "dir";
const HOST_CONTENT: &str = "the host's own file\n";

/// A root (`root`) beside a stand-in for the host's files (`outside`).
#[derive(Debug)]
pub struct HostileRoot {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub outside: PathBuf,
    /// Which link this root carries.
    pub variant: &'static str,
    /// Where the path written lands, seen from the host.
    landing: PathBuf,
}

/// `../` enough times to climb from `dir` to `/`.
fn climb(dir: &Path) -> String {
    "../".repeat(dir.components().count())
}

impl HostileRoot {
    /// One root per hostile link, for a writer of `path` (`etc/hostname`,
    /// at least two components).
    pub fn variants(path: &str) -> Vec<HostileRoot> {
        let path = path.trim_start_matches('/');
        let (first, rest) = path.split_once('/').expect("a path with a directory");
        let parent = Path::new(path).parent().unwrap();
        let mut out = Vec::new();
        for variant in [
            "absolute link at the file",
            "relative '..' link at the file",
            "absolute link on a directory on the way",
            "relative '..' link on a directory on the way",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("root");
            let outside = dir.path().join("outside");
            fs::create_dir_all(outside.join(HOST_DIR)).unwrap();
            fs::write(outside.join(HOST_FILE), HOST_CONTENT).unwrap();
            fs::set_permissions(outside.join(HOST_FILE), fs::Permissions::from_mode(0o644))
                .unwrap();
            let outside_in_root = root.join(outside.strip_prefix("/").unwrap());
            let (link, target, landing) = match variant {
                "absolute link at the file" => (
                    path.to_owned(),
                    outside.join(HOST_FILE).display().to_string(),
                    outside_in_root.join(HOST_FILE),
                ),
                "relative '..' link at the file" => (
                    path.to_owned(),
                    format!(
                        "{}{}",
                        climb(&root.join(parent)),
                        outside.join(HOST_FILE).strip_prefix("/").unwrap().display()
                    ),
                    outside_in_root.join(HOST_FILE),
                ),
                "absolute link on a directory on the way" => (
                    first.to_owned(),
                    outside.join(HOST_DIR).display().to_string(),
                    outside_in_root.join(HOST_DIR).join(rest),
                ),
                _ => (
                    first.to_owned(),
                    format!(
                        "{}{}",
                        climb(&root),
                        outside.join(HOST_DIR).strip_prefix("/").unwrap().display()
                    ),
                    outside_in_root.join(HOST_DIR).join(rest),
                ),
            };
            let link = root.join(link);
            fs::create_dir_all(link.parent().unwrap()).unwrap();
            symlink(&target, &link).unwrap();
            // The link really leads out of the root, seen from the host.
            assert!(
                fs::canonicalize(link.parent().unwrap().join(&target))
                    .unwrap()
                    .starts_with(&outside),
                "{variant}: {} -> {target}",
                link.display()
            );
            out.push(HostileRoot {
                _dir: dir,
                root,
                outside,
                variant,
                landing,
            });
        }
        out
    }

    /// The root as a directory handle.
    pub fn dir(&self) -> RootDir {
        RootDir::open(&self.root).unwrap()
    }

    /// Where the path this root was made for lands, seen from the host.
    pub fn landing(&self) -> &Path {
        &self.landing
    }

    /// The text at the landing place.
    pub fn landed(&self) -> String {
        fs::read_to_string(&self.landing).unwrap_or_else(|e| {
            panic!(
                "{}: {} not written: {e}",
                self.variant,
                self.landing.display()
            )
        })
    }

    /// The text at `path` of the root as the installed OS reads it, checked
    /// to be a file inside the root.
    pub fn seen(&self, path: &str) -> String {
        let dir = self.dir();
        let real = dir.host_path(Path::new(path)).unwrap();
        assert!(
            real.starts_with(dir.path()),
            "{}: {}",
            self.variant,
            real.display()
        );
        fs::read_to_string(real).unwrap()
    }

    /// Seeds `path` of the root with `text` where the installed OS sees
    /// it (the image's own file behind the link).
    pub fn seed(&self, path: &str, text: &str) {
        self.dir()
            .write_file(Path::new(path), text.as_bytes(), 0o644)
            .unwrap();
    }

    /// Nothing outside the root changed: the host's file and empty
    /// directory only, as made.
    pub fn assert_outside_untouched(&self) {
        let mut found = BTreeMap::new();
        walk(&self.outside, &self.outside, &mut found);
        let expected = BTreeMap::from([
            (HOST_DIR.to_owned(), "dir".to_owned()),
            (HOST_FILE.to_owned(), format!("0644 {HOST_CONTENT}")),
        ]);
        assert_eq!(
            found, expected,
            "{}: written outside the root",
            self.variant
        );
    }
}

fn walk(base: &Path, dir: &Path, found: &mut BTreeMap<String, String>) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let name = path.strip_prefix(base).unwrap().display().to_string();
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            found.insert(name, "dir".to_owned());
            walk(base, &path, found);
        } else {
            let text = fs::read_to_string(&path).unwrap_or_default();
            found.insert(name, format!("{:04o} {text}", meta.mode() & 0o7777));
        }
    }
}
