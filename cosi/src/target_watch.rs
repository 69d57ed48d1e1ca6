//! Noticing a target that changes under the writer: a disk-image file
//! truncated or replaced (renamed over, deleted) by another process, a
//! block device that went away or was swapped (hot unplug, multipath
//! failover). Positioned writes to a truncated file succeed (they extend
//! it again) and writes to a renamed-over file go to the old inode, so
//! neither shows up in a write's result: the writer checks the target's
//! size after every write and its identity (files: device and inode;
//! block devices: device number and size) after every region and at the
//! end.

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use crate::error::CosiError;

/// What names "the same target".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    /// A regular file: its file system's device and its inode.
    File { dev: u64, ino: u64 },
    /// A block device: its device number (the size is checked apart).
    Block { rdev: u64 },
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Identity {
        if meta.file_type().is_block_device() {
            Identity::Block { rdev: meta.rdev() }
        } else {
            Identity::File {
                dev: meta.dev(),
                ino: meta.ino(),
            }
        }
    }
}

/// The target as it was when writing started.
#[derive(Debug)]
pub struct TargetWatch {
    target: String,
    identity: Identity,
    size: u64,
}

fn size_of(mut file: &File) -> std::io::Result<u64> {
    // Seeking to the end works for block devices, whose metadata length is
    // 0; positioned writes do not use the file offset.
    file.seek(SeekFrom::End(0))
}

impl TargetWatch {
    /// Notes the identity and size of the open target `file` at `path`.
    pub fn new(file: &File, path: &Path) -> Result<TargetWatch, CosiError> {
        let target = path.display().to_string();
        let io = |action: &str, source| CosiError::Target {
            target: target.clone(),
            action: action.to_owned(),
            source,
        };
        let meta = file.metadata().map_err(|e| io("stat", e))?;
        let size = size_of(file).map_err(|e| io("determine size", e))?;
        Ok(TargetWatch {
            identity: Identity::of(&meta),
            size,
            target,
        })
    }

    /// The target's size when writing started.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn changed(&self, detail: String) -> CosiError {
        CosiError::TargetChanged {
            target: self.target.clone(),
            detail,
        }
    }

    /// After a write: the open target must not have shrunk (a truncated
    /// file is extended again by later writes, so this is checked each time).
    pub fn check_size(&self, file: &File, during: &str) -> Result<(), CosiError> {
        match size_of(file) {
            Ok(size) if size >= self.size => Ok(()),
            Ok(size) => Err(self.changed(format!(
                "it shrank from {} to {size} bytes while {during}",
                self.size
            ))),
            Err(e) => Err(self.changed(format!("its size cannot be read while {during}: {e}"))),
        }
    }

    /// The path must still name the target we write (not replaced, not
    /// gone), and the target must still have its size.
    pub fn check(&self, file: &File, during: &str) -> Result<(), CosiError> {
        self.check_size(file, during)?;
        let now = match std::fs::metadata(&self.target) {
            Ok(meta) => meta,
            Err(e) => return Err(self.changed(format!("it went away while {during}: {e}"))),
        };
        let identity = Identity::of(&now);
        if identity != self.identity {
            return Err(self.changed(format!(
                "it was replaced while {during}: {} now names {}, not {}",
                self.target,
                describe(identity),
                describe(self.identity)
            )));
        }
        if let Identity::Block { .. } = identity {
            // The node still names the same device number: it must still
            // have the size we started with (a swapped medium may not).
            let size = File::open(&self.target).and_then(|f| size_of(&f));
            match size {
                Ok(size) if size == self.size => {}
                Ok(size) => {
                    return Err(self.changed(format!(
                        "its size changed from {} to {size} bytes while {during}",
                        self.size
                    )));
                }
                Err(e) => {
                    return Err(self.changed(format!("it cannot be opened while {during}: {e}")));
                }
            }
        }
        Ok(())
    }
}

fn describe(identity: Identity) -> String {
    match identity {
        Identity::File { dev, ino } => format!("inode {ino} on device {dev:#x}"),
        Identity::Block { rdev } => format!("block device {rdev:#x}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn open(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap()
    }

    #[test]
    fn a_truncated_a_replaced_and_a_removed_file_are_each_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk.img");
        std::fs::write(&path, vec![0u8; 8192]).unwrap();
        let file = open(&path);
        let watch = TargetWatch::new(&file, &path).unwrap();
        watch.check(&file, "writing").unwrap();

        file.set_len(100).unwrap();
        let err = watch.check_size(&file, "writing partition-1").unwrap_err();
        assert!(err.to_string().contains("shrank from 8192 to 100"), "{err}");
        file.set_len(8192).unwrap();

        let other = dir.path().join("other.img");
        std::fs::write(&other, vec![0u8; 8192]).unwrap();
        std::fs::rename(&other, &path).unwrap();
        let err = watch.check(&file, "writing").unwrap_err();
        assert!(err.to_string().contains("was replaced"), "{err}");

        std::fs::remove_file(&path).unwrap();
        let err = watch.check(&file, "writing").unwrap_err();
        assert!(err.to_string().contains("went away"), "{err}");
        assert_eq!(err.subkind(), "target-changed");
    }
}
