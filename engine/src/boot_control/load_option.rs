//! UEFI load options (`Boot####` variables), as the UEFI specification
//! lays them out (2.10, 3.1.3 "Load Options"; device path nodes 10.3):
//!
//! ```text
//! u32 Attributes | u16 FilePathListLength | Description (UTF-16LE, NUL)
//! | FilePathList | OptionalData
//! ```
//!
//! The file path list this daemon writes is what `efibootmgr` writes for a
//! loader on a GPT partition: a hard drive media node (`HD(number, GPT,
//! partition GUID, start, size)`), a file path node
//! (`File(\EFI\AZLA\bootx64.efi)`) and the end node. Firmware expands the
//! short-form `HD()` path to whichever disk holds that partition GUID.

use uuid::Uuid;

/// `LOAD_OPTION_ACTIVE`: the firmware may boot it.
pub const LOAD_OPTION_ACTIVE: u32 = 0x1;

const MEDIA_DEVICE_PATH: u8 = 0x04;
const MEDIA_HARDDRIVE_DP: u8 = 0x01;
const MEDIA_FILEPATH_DP: u8 = 0x04;
const END_DEVICE_PATH: u8 = 0x7f;
const END_ENTIRE_DEVICE_PATH: u8 = 0xff;
/// `HD()`: 4 header + 4 number + 8 start + 8 size + 16 signature + 2.
const HARDDRIVE_NODE_LEN: u16 = 42;
/// `PartitionFormat` 0x02: a GUID partition table.
const FORMAT_GPT: u8 = 0x02;
/// `SignatureType` 0x02: the signature is the partition's unique GUID.
const SIGNATURE_GUID: u8 = 0x02;

/// The GPT partition a loader is on (`HD()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HardDrive {
    /// 1-based GPT entry number.
    pub number: u32,
    /// First LBA and size in LBAs.
    pub start_lba: u64,
    pub size_lba: u64,
    /// The partition's unique GUID.
    pub part_uuid: Uuid,
}

/// One load option: a labelled loader file on a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOption {
    pub attributes: u32,
    pub description: String,
    /// `None`: the option's device path is not `HD()` + `File()` (firmware
    /// entries: PXE, a whole removable disk, the UEFI shell).
    pub partition: Option<HardDrive>,
    /// `\EFI\AZLA\bootx64.efi`.
    pub file: Option<String>,
}

impl LoadOption {
    /// An active option booting `file` (backslashes) on `partition`.
    pub fn new(description: &str, partition: HardDrive, file: &str) -> Self {
        Self {
            attributes: LOAD_OPTION_ACTIVE,
            description: description.to_owned(),
            partition: Some(partition),
            file: Some(file.to_owned()),
        }
    }

    /// The variable's value (without efivarfs' attribute prefix).
    pub fn encode(&self) -> Vec<u8> {
        let mut path = Vec::new();
        if let Some(hd) = &self.partition {
            path.extend_from_slice(&[MEDIA_DEVICE_PATH, MEDIA_HARDDRIVE_DP]);
            path.extend_from_slice(&HARDDRIVE_NODE_LEN.to_le_bytes());
            path.extend_from_slice(&hd.number.to_le_bytes());
            path.extend_from_slice(&hd.start_lba.to_le_bytes());
            path.extend_from_slice(&hd.size_lba.to_le_bytes());
            // EFI_GUID: the first three fields little-endian.
            path.extend_from_slice(&hd.part_uuid.to_bytes_le());
            path.extend_from_slice(&[FORMAT_GPT, SIGNATURE_GUID]);
        }
        if let Some(file) = &self.file {
            let name = utf16z(file);
            path.extend_from_slice(&[MEDIA_DEVICE_PATH, MEDIA_FILEPATH_DP]);
            path.extend_from_slice(&((4 + name.len()) as u16).to_le_bytes());
            path.extend_from_slice(&name);
        }
        path.extend_from_slice(&[END_DEVICE_PATH, END_ENTIRE_DEVICE_PATH, 4, 0]);
        let mut out = self.attributes.to_le_bytes().to_vec();
        out.extend_from_slice(&(path.len() as u16).to_le_bytes());
        out.extend_from_slice(&utf16z(&self.description));
        out.extend_from_slice(&path);
        out
    }

    /// Parses a variable's value; `None` when malformed. Device path nodes
    /// other than `HD()` and `File()` are skipped (the option then has no
    /// partition or file).
    pub fn decode(data: &[u8]) -> Option<Self> {
        let attributes = u32::from_le_bytes(data.get(0..4)?.try_into().ok()?);
        let path_len = u16::from_le_bytes(data.get(4..6)?.try_into().ok()?) as usize;
        let (description, used) = read_utf16z(data.get(6..)?)?;
        let start = 6 + used;
        let mut path = data.get(start..start + path_len)?;
        let (mut partition, mut file) = (None, None);
        while path.len() >= 4 {
            let (kind, sub) = (path[0], path[1]);
            let len = u16::from_le_bytes([path[2], path[3]]) as usize;
            if len < 4 || len > path.len() {
                return None;
            }
            let node = &path[4..len];
            match (kind, sub) {
                (END_DEVICE_PATH, END_ENTIRE_DEVICE_PATH) => break,
                (MEDIA_DEVICE_PATH, MEDIA_HARDDRIVE_DP) if node.len() >= 38 => {
                    partition = Some(HardDrive {
                        number: u32::from_le_bytes(node[0..4].try_into().ok()?),
                        start_lba: u64::from_le_bytes(node[4..12].try_into().ok()?),
                        size_lba: u64::from_le_bytes(node[12..20].try_into().ok()?),
                        part_uuid: Uuid::from_bytes_le(node[20..36].try_into().ok()?),
                    });
                }
                (MEDIA_DEVICE_PATH, MEDIA_FILEPATH_DP) => file = Some(read_utf16z(node)?.0),
                _ => {}
            }
            path = &path[len..];
        }
        Some(Self {
            attributes,
            description,
            partition,
            file,
        })
    }
}

/// UTF-16LE with the terminating NUL.
fn utf16z(text: &str) -> Vec<u8> {
    text.encode_utf16()
        .chain(std::iter::once(0))
        .flat_map(u16::to_le_bytes)
        .collect()
}

/// A NUL-terminated UTF-16LE string at the start of `data` and the bytes
/// it took (NUL included).
fn read_utf16z(data: &[u8]) -> Option<(String, usize)> {
    let mut units = Vec::new();
    for chunk in data.chunks_exact(2) {
        let unit = u16::from_le_bytes([chunk[0], chunk[1]]);
        if unit == 0 {
            let used = 2 * (units.len() + 1);
            return Some((String::from_utf16(&units).ok()?, used));
        }
        units.push(unit);
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn azla() -> LoadOption {
        LoadOption::new(
            "AZLA",
            HardDrive {
                number: 1,
                start_lba: 2048,
                size_lba: 327_680,
                part_uuid: "4b3d6c0e-1f2a-4d5b-9c8e-7a6f5e4d3c2b".parse().unwrap(),
            },
            r"\EFI\AZLA\bootx64.efi",
        )
    }

    /// The bytes the UEFI specification's layout gives, written out field
    /// by field (what `efibootmgr -c -d /dev/vda -p 1 -L AZLA -l
    /// '\EFI\AZLA\bootx64.efi'` stores for that partition).
    #[test]
    fn a_load_option_has_the_uefi_spec_byte_layout() {
        let mut want: Vec<u8> = vec![1, 0, 0, 0]; // LOAD_OPTION_ACTIVE
        let file: Vec<u8> = "\\EFI\\AZLA\\bootx64.efi\0"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let path_len = 42 + 4 + file.len() + 4;
        want.extend_from_slice(&(path_len as u16).to_le_bytes());
        want.extend_from_slice(&[b'A', 0, b'Z', 0, b'L', 0, b'A', 0, 0, 0]);
        // HD(1,GPT,4b3d6c0e-...,0x800,0x50000)
        want.extend_from_slice(&[0x04, 0x01, 42, 0]);
        want.extend_from_slice(&1u32.to_le_bytes());
        want.extend_from_slice(&2048u64.to_le_bytes());
        want.extend_from_slice(&327_680u64.to_le_bytes());
        want.extend_from_slice(&[
            0x0e, 0x6c, 0x3d, 0x4b, 0x2a, 0x1f, 0x5b, 0x4d, 0x9c, 0x8e, 0x7a, 0x6f, 0x5e, 0x4d,
            0x3c, 0x2b,
        ]);
        want.extend_from_slice(&[0x02, 0x02]);
        // File(\EFI\AZLA\bootx64.efi)
        want.extend_from_slice(&[0x04, 0x04]);
        want.extend_from_slice(&((4 + file.len()) as u16).to_le_bytes());
        want.extend_from_slice(&file);
        want.extend_from_slice(&[0x7f, 0xff, 4, 0]);
        assert_eq!(azla().encode(), want);
    }

    #[test]
    fn a_load_option_reads_back_as_written() {
        assert_eq!(LoadOption::decode(&azla().encode()), Some(azla()));
    }

    #[test]
    fn firmware_options_without_a_partition_decode_and_garbage_does_not() {
        // "UEFI Shell": a firmware volume node (type 4, subtype 7) only.
        let mut data = vec![1, 0, 0, 0, 24, 0];
        data.extend_from_slice(&utf16z("Shell"));
        data.extend_from_slice(&[0x04, 0x07, 20, 0]);
        data.extend_from_slice(&[0xaa; 16]);
        data.extend_from_slice(&[0x7f, 0xff, 4, 0]);
        let option = LoadOption::decode(&data).unwrap();
        assert_eq!(option.description, "Shell");
        assert_eq!((option.partition, option.file), (None, None));
        assert_eq!(LoadOption::decode(&[1, 0, 0]), None);
        assert_eq!(LoadOption::decode(&data[..data.len() - 6]), None);
    }
}
