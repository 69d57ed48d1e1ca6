//! Which filesystem a partition holds, read from its superblock (no
//! tools, no root needed). A volume whose bytes are no filesystem we know
//! (the pseudo-random test fixtures) is not mounted.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::servicing::block_device::ResolvedDevice;

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

/// The filesystem a volume's first 2 KiB describe.
pub fn kind_of(head: &[u8; 2048]) -> Option<FsKind> {
    // ext2/3/4: magic 0xEF53 at 1024+56, a sane block size (1 KiB << n, n <= 6).
    let ext_magic = u16::from_le_bytes([head[1080], head[1081]]);
    let log_block = u32::from_le_bytes([head[1048], head[1049], head[1050], head[1051]]);
    if ext_magic == 0xEF53 && log_block <= 6 {
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
}
