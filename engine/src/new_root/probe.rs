//! Which filesystem a partition holds, read from its superblock (no
//! tools, no root needed). A volume whose bytes are no filesystem we know
//! (the pseudo-random test fixtures) is not mounted.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::block_device::ResolvedDevice;

/// Filesystem types the new-root step mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsKind {
    Ext4,
    Xfs,
    Vfat,
}

impl FsKind {
    /// The `mount -t` / fstab name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ext4 => "ext4",
            Self::Xfs => "xfs",
            Self::Vfat => "vfat",
        }
    }
}

/// Probes the filesystem on a resolved block device; `None` when unknown
/// or unreadable.
pub fn probe_device(device: &ResolvedDevice) -> Option<FsKind> {
    let extent = device.extent();
    probe(extent.backing, extent.offset)
}

/// Probes the filesystem at `offset` of `device`; `None` when unknown or
/// unreadable.
fn probe(device: &str, offset: u64) -> Option<FsKind> {
    let file = File::open(device).ok()?;
    let mut head = [0u8; 2048];
    file.read_exact_at(&mut head, offset).ok()?;
    kind_of(&head)
}

/// The filesystem UUID of the ext4 or XFS filesystem on `device` (what
/// GRUB's `search --fs-uuid` and `UUID=` name); `None` for others.
pub fn fs_uuid(device: &ResolvedDevice) -> Option<String> {
    let extent = device.extent();
    let file = File::open(extent.backing).ok()?;
    let mut head = [0u8; 2048];
    file.read_exact_at(&mut head, extent.offset).ok()?;
    uuid_of(&head)
}

/// The UUID a volume's first 2 KiB give (ext4: `s_uuid` at 1024+0x68;
/// XFS: `sb_uuid` at 32).
pub fn uuid_of(head: &[u8; 2048]) -> Option<String> {
    let bytes = match kind_of(head)? {
        FsKind::Ext4 => &head[1128..1144],
        FsKind::Xfs => &head[32..48],
        FsKind::Vfat => return None,
    };
    let uuid = uuid::Uuid::from_slice(bytes).ok()?;
    (!uuid.is_nil()).then(|| uuid.hyphenated().to_string())
}

/// The block size of the ext2/3/4 filesystem whose first bytes are
/// `head`: its superblock at byte 1024 has the magic 0xEF53 at 56 and
/// `s_log_block_size` at 24 (block size = 1 KiB << n; n <= 6, 64 KiB, is
/// all mke2fs makes). `None` when `head` is no ext superblock or too short
/// to hold one.
pub fn ext_block_size(head: &[u8]) -> Option<u64> {
    let magic = u16::from_le_bytes(head.get(1080..1082)?.try_into().ok()?);
    let log_block = u32::from_le_bytes(head.get(1048..1052)?.try_into().ok()?);
    (magic == 0xEF53 && log_block <= 6).then(|| 1024u64 << log_block)
}

/// The filesystem a volume's first 2 KiB describe.
pub fn kind_of(head: &[u8; 2048]) -> Option<FsKind> {
    if ext_block_size(head).is_some() {
        return Some(FsKind::Ext4);
    }
    if &head[0..4] == b"XFSB" {
        return Some(FsKind::Xfs);
    }
    let boot_signature = head[510] == 0x55 && head[511] == 0xAA;
    let fat_label = &head[82..87] == b"FAT32" || matches!(&head[54..59], b"FAT16" | b"FAT12");
    if boot_signature && fat_label {
        return Some(FsKind::Vfat);
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use super::*;

    #[test]
    fn recognizes_superblocks_and_refuses_noise() {
        let mut head = [0u8; 2048];
        assert_eq!(kind_of(&head), None);
        head[1080] = 0x53;
        head[1081] = 0xEF;
        assert_eq!(kind_of(&head), Some(FsKind::Ext4));
        let mut fat = [0u8; 2048];
        fat[82..87].copy_from_slice(b"FAT32");
        fat[510] = 0x55;
        fat[511] = 0xAA;
        assert_eq!(kind_of(&fat), Some(FsKind::Vfat));
        head[1128] = 0xAB;
        head[1143] = 0x01;
        assert_eq!(
            uuid_of(&head).as_deref(),
            Some("ab000000-0000-0000-0000-000000000001")
        );
        let mut xfs = [0u8; 2048];
        xfs[0..4].copy_from_slice(b"XFSB");
        assert_eq!(kind_of(&xfs), Some(FsKind::Xfs));
    }

    /// The first 2 KiB of a real `mkfs.ext4 -b <block_size>` image.
    fn mkfs_ext4_head(block_size: u32) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("fs.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(8 << 20)
            .unwrap();
        let made = std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F", "-b", &block_size.to_string()])
            .arg(&image)
            .status()
            .unwrap();
        assert!(made.success());
        let mut head = std::fs::read(&image).unwrap();
        head.truncate(2048);
        head
    }

    #[test]
    fn the_ext4_block_size_is_read_from_the_superblock() {
        assert_eq!(ext_block_size(&mkfs_ext4_head(4096)), Some(4096));
        assert_eq!(ext_block_size(&mkfs_ext4_head(1024)), Some(1024));
        assert_eq!(ext_block_size(&mkfs_ext4_head(2048)), Some(2048));
    }

    #[test]
    fn no_ext_block_size_for_other_filesystems_or_truncated_heads() {
        let mut xfs = [0u8; 2048];
        xfs[0..4].copy_from_slice(b"XFSB");
        assert_eq!(ext_block_size(&xfs), None);
        assert_eq!(ext_block_size(&[0u8; 2048]), None);
        // The magic with an impossible block size (1 KiB << 40) is no ext.
        let mut bogus = [0u8; 2048];
        bogus[1080..1082].copy_from_slice(&0xEF53u16.to_le_bytes());
        bogus[1048] = 40;
        assert_eq!(ext_block_size(&bogus), None);
        // Cut anywhere, a real superblock gives no answer and no panic.
        let head = mkfs_ext4_head(4096);
        for len in [0, 1, 1024, 1051, 1052, 1081] {
            assert_eq!(ext_block_size(&head[..len]), None, "{len} bytes");
        }
        assert_eq!(ext_block_size(&head[..1082]), Some(4096));
    }
}
