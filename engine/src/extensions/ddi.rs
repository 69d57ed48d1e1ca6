//! Extension images that are GPT disk images (Discoverable Disk Images,
//! as `systemd-repart` and `mkosi` build them) rather than a bare
//! filesystem. systemd-sysext and systemd-confext merge them as
//! systemd-dissect mounts them: the root partition at `/`, the `/usr`
//! partition at `/usr`, each found by its GPT type. Upstream reads them
//! with `mount -t ddi` (systemd-dissect, systemd 254+); this reads the
//! GPT itself, so the host's systemd version does not matter, and mounts
//! the one partition that holds the release file.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use trident_cosi::gpt::Gpt;
use uuid::{Uuid, uuid};

/// The Discoverable Partitions Specification's root partition of x86-64.
const ROOT_X86_64: Uuid = uuid!("4f68bce3-e8cd-4db1-96e7-fbcaf984b709");
/// The Discoverable Partitions Specification's `/usr` partition of x86-64.
const USR_X86_64: Uuid = uuid!("8484680c-9521-48c6-9c11-b0720656f69e");

/// The GPT header's signature, at the start of the second sector.
const SIGNATURE: &[u8; 8] = b"EFI PART";
/// The sector sizes a disk image may have.
const SECTOR_SIZES: [u64; 2] = [512, 4096];
/// Bytes read from the image's start: the protective MBR, the header and
/// a 128-entry array at either sector size.
const HEAD_BYTES: usize = 64 * 1024;

/// A partition's byte range in the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub offset: u64,
    pub size: u64,
}

/// What an extension image file is.
#[derive(Debug, PartialEq, Eq)]
pub enum Layout {
    /// A filesystem image (squashfs, erofs, ext4, ...): mounted whole.
    Filesystem,
    /// A GPT disk image, with its root and `/usr` partitions if it has them.
    Disk {
        root: Option<Range>,
        usr: Option<Range>,
    },
}

/// The layout of the image `file`, or why it cannot be read (a GPT
/// signature whose table does not parse, a file that cannot be read).
pub fn layout(file: &Path) -> Result<Layout, String> {
    let mut head = vec![0u8; HEAD_BYTES];
    let read = File::open(file)
        .and_then(|f| read_head(&f, &mut head))
        .map_err(|e| format!("the image cannot be read ({e})"))?;
    head.truncate(read);
    let Some(sector) = SECTOR_SIZES.into_iter().find(|&s| {
        let at = s as usize;
        head.get(at..at + SIGNATURE.len()) == Some(SIGNATURE.as_slice())
    }) else {
        return Ok(Layout::Filesystem);
    };
    let gpt = Gpt::parse_primary(&head, sector)
        .map_err(|e| format!("the image's GPT partition table is invalid ({e})"))?;
    let find = |kind: Uuid| {
        gpt.partitions()
            .iter()
            .find(|p| p.type_guid == kind)
            .map(|p| Range {
                offset: p.start_offset(sector),
                size: p.size_bytes(sector),
            })
    };
    Ok(Layout::Disk {
        root: find(ROOT_X86_64),
        usr: find(USR_X86_64),
    })
}

/// Fills `buf` from the file's start, as far as the file goes.
fn read_head(file: &File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], filled as u64)? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use std::process::Command;

    use super::*;

    /// A 4 MiB disk image partitioned by sfdisk with `partitions` (sfdisk
    /// script lines).
    fn disk(dir: &Path, partitions: &str) -> std::path::PathBuf {
        let image = dir.join("disk.raw");
        File::create(&image)
            .unwrap()
            .set_len(4 * 1024 * 1024)
            .unwrap();
        let mut child = Command::new("sfdisk")
            .args(["--quiet", "--no-reread", "--no-tell-kernel"])
            .arg(&image)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let script = format!("label: gpt\n{partitions}");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
        image
    }

    #[test]
    fn a_filesystem_image_is_mounted_whole() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("fs.raw");
        std::fs::write(&image, vec![0x5a; 8192]).unwrap();
        assert_eq!(layout(&image).unwrap(), Layout::Filesystem);
        // Shorter than a sector: still a (tiny) filesystem image to mount.
        std::fs::write(&image, b"hsqs").unwrap();
        assert_eq!(layout(&image).unwrap(), Layout::Filesystem);
    }

    #[test]
    fn the_root_and_usr_partitions_are_found_by_their_types() {
        let dir = tempfile::tempdir().unwrap();
        let image = disk(
            dir.path(),
            &format!(
                "start=2048, size=2048, type={}\nstart=4096, size=2048, type={}\n",
                USR_X86_64, ROOT_X86_64
            ),
        );
        assert_eq!(
            layout(&image).unwrap(),
            Layout::Disk {
                root: Some(Range {
                    offset: 4096 * 512,
                    size: 2048 * 512
                }),
                usr: Some(Range {
                    offset: 2048 * 512,
                    size: 2048 * 512
                }),
            }
        );
    }

    #[test]
    fn a_disk_without_root_or_usr_has_neither_and_a_damaged_table_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let image = disk(
            dir.path(),
            "start=2048, size=2048, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\n",
        );
        assert_eq!(
            layout(&image).unwrap(),
            Layout::Disk {
                root: None,
                usr: None
            }
        );
        // Break the header's CRC: the signature says GPT, the table is not.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&image)
            .unwrap();
        f.write_at(&[0xff], 512 + 16).unwrap();
        let e = layout(&image).unwrap_err();
        assert!(e.contains("GPT partition table is invalid"), "{e}");
    }
}
